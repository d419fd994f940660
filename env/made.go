package env

import (
	"errors"
	"fmt"
)

// Kind says which of the environment interfaces a made environment implements.
type Kind int

// The kinds, in the order ToBaseEnv tries them for a value that implements several.
const (
	KindBase       Kind = iota + 1 // BaseEnv
	KindVector                     // VectorEnv
	KindEnv                        // Env: one agent
	KindMultiAgent                 // MultiAgentEnv
)

func (k Kind) String() string {
	switch k {
	case KindBase:
		return "BaseEnv"
	case KindVector:
		return "VectorEnv"
	case KindEnv:
		return "Env"
	case KindMultiAgent:
		return "MultiAgentEnv"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Environment is an environment made by Make: an Env, a MultiAgentEnv, a VectorEnv or a
// BaseEnv, checked when it was made. The accessor of its kind returns it; the others return
// nil. The zero value holds nothing.
type Environment struct {
	v    any
	kind Kind
}

// kindOf returns the kind of v, or 0 when v implements none of the environment interfaces.
func kindOf(v any) Kind {
	switch v.(type) {
	case BaseEnv:
		return KindBase
	case VectorEnv:
		return KindVector
	case Env:
		return KindEnv
	case MultiAgentEnv:
		return KindMultiAgent
	}
	return 0
}

// newEnvironment checks what a maker returned.
func newEnvironment(v any) (Environment, error) {
	if v == nil {
		return Environment{}, errors.New("the maker returned nil")
	}
	k := kindOf(v)
	if k == 0 {
		return Environment{}, fmt.Errorf("the maker returned %T, which is not an Env, MultiAgentEnv, VectorEnv or BaseEnv", v)
	}
	return Environment{v: v, kind: k}, nil
}

// Kind returns which interface the environment implements (0 for the zero Environment).
func (e Environment) Kind() Kind { return e.kind }

// Env returns the single-agent environment, or nil when it is of another kind.
func (e Environment) Env() Env {
	if e.kind != KindEnv {
		return nil
	}
	return e.v.(Env)
}

// MultiAgent returns the multi-agent environment, or nil when it is of another kind.
func (e Environment) MultiAgent() MultiAgentEnv {
	if e.kind != KindMultiAgent {
		return nil
	}
	return e.v.(MultiAgentEnv)
}

// Vector returns the vectorized environment, or nil when it is of another kind.
func (e Environment) Vector() VectorEnv {
	if e.kind != KindVector {
		return nil
	}
	return e.v.(VectorEnv)
}

// Base returns the BaseEnv, or nil when it is of another kind (see ToBaseEnv and MakeBaseEnv
// for turning any kind into one).
func (e Environment) Base() BaseEnv {
	if e.kind != KindBase {
		return nil
	}
	return e.v.(BaseEnv)
}

// Value returns the environment as its maker returned it, for type assertions to optional
// interfaces (Renderer, Restarter, ...) or to the concrete type.
func (e Environment) Value() any { return e.v }

// MakeBaseEnv makes the environment registered under name as a BaseEnv of opts.NumEnvs
// sub-environments (the input of envrunner.Config.Env): ToBaseEnv over Make, each
// sub-environment made with cfg.
func MakeBaseEnv(name string, cfg Config, opts BaseEnvOptions) (BaseEnv, error) {
	return ToBaseEnv(func(int) (any, error) { return Make(name, cfg) }, opts)
}
