package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "internal.h"
*/
import "C"

import (
	"encoding/json"
	"fmt"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// onnxrl_policy_space and onnxrl_env_space: a policy's or an episode env's observation and
// action spaces as spaces JSON, for hosts (the Python package) that give actions in their
// space's own type and shape (integers for Discrete) rather than as float rows.

// spaceOfWhich returns obs (which 0) or act (which 1) as spaces JSON.
func spaceOfWhich(obs, act spaces.Space, which C.int) ([]byte, error) {
	var s spaces.Space
	switch which {
	case 0:
		s = obs
	case 1:
		s = act
	default:
		return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: which = %d: want 0 (observation space) or 1 (action space)", int(which)))
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, withStatus(statusInternal, fmt.Errorf("onnxrl: spaces JSON: %w", err))
	}
	return b, nil
}

//export onnxrl_policy_space
func onnxrl_policy_space(h C.uintptr_t, which C.int, buf *C.char, capacity C.size_t, length *C.size_t) (status C.int) {
	defer catch(&status)
	v, err := table.get(uintptr(h), kindPolicy)
	if err != nil {
		return finish(err)
	}
	p := v.(*policy)
	b, err := spaceOfWhich(p.obsSpace, p.actSpace, which)
	if err != nil {
		return finish(err)
	}
	return finish(copyOut(b, buf, capacity, length, "space JSON"))
}

//export onnxrl_env_space
func onnxrl_env_space(h C.uintptr_t, which C.int, buf *C.char, capacity C.size_t, length *C.size_t) (status C.int) {
	defer catch(&status)
	v, err := table.get(uintptr(h), kindEnv)
	if err != nil {
		return finish(err)
	}
	obs, act, ok := v.(*cenv).ext.Spaces(env.DefaultAgentID)
	if !ok {
		return finish(withStatus(statusInternal, fmt.Errorf("onnxrl: the env has no spaces for agent %q", env.DefaultAgentID)))
	}
	b, err := spaceOfWhich(obs, act, which)
	if err != nil {
		return finish(err)
	}
	return finish(copyOut(b, buf, capacity, length, "space JSON"))
}
