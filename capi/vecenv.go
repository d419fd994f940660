package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"sort"
	"sync"

	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers the built-in environments
	"github.com/onnxrl/sampler/spaces"
)

// vecEnv is an onnxrl_vec_env: num_envs sub-environments of a registered single-agent
// environment, stepped in sequence on the calling thread, with gymnasium 1.x's default
// autoreset mode (next step): a sub-environment whose episode ended on step t is reset on
// step t+1, whose row then holds the reset observation, reward 0, both flags false and the
// reset's info, the action given for it ignored.
//
// The caller owns every buffer; a step writes straight into them and allocates nothing
// unless a sub-environment reports an info. A mutex serialises calls on one handle (the C
// API lets any thread call with any handle at once); it is never contended in a
// one-thread loop.
type vecEnv struct {
	mu         sync.Mutex
	name       string
	envs       []env.Env
	obsSpace   spaces.Space
	actSpace   spaces.Space
	obsN, actN int
	disc       *spaces.Discrete // actSpace when it is Discrete: actions checked in one loop
	seed       uint64           // the open seed: the first reset without a seed uses seed+i
	reset      bool             // reset has succeeded at least once
	closed     bool
	// autoreset[i]: sub-environment i ended (or failed) on the last step and is reset on
	// the next one instead of stepping.
	autoreset []bool
	// infos[i] is sub-environment i's info of the last reset or step (nil: none); nInfos
	// counts the non-nil ones and infosJSON is their gymnasium vector form, made when
	// nInfos > 0.
	infos     []env.Info
	nInfos    int
	infosJSON []byte
	obsJSON   []byte
	actJSON   []byte
}

// Errors of onnxrl_vec_env.
var (
	errVecNotReset = errors.New("onnxrl: the vector env was not reset: call onnxrl_vec_env_reset before stepping")
)

// maxVecEnvs is the most sub-environments of one vector env.
const maxVecEnvs = 1 << 20

// openVecEnv makes numEnvs sub-environments of the registered environment name with the
// config JSON (NULL, "" or an object).
func openVecEnv(name string, configJSON []byte, numEnvs int64, seed uint64) (*vecEnv, error) {
	if numEnvs < 1 || numEnvs > maxVecEnvs {
		return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: num_envs = %d: want 1..%d", numEnvs, maxVecEnvs))
	}
	cfg := env.Config{}
	if t := bytes.TrimSpace(configJSON); len(t) > 0 {
		if t[0] != '{' {
			return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: config_json %.40q: want a JSON object", t))
		}
		var err error
		if cfg, err = env.ParseConfig(string(t)); err != nil {
			return nil, withStatus(statusInvalidArgument, err)
		}
	}
	if !registered(name) {
		return nil, withStatus(statusNotFound, fmt.Errorf("onnxrl: unknown environment %q (registered: %v; see sample run --list-envs)", name, env.Names()))
	}
	n := int(numEnvs)
	v := &vecEnv{name: name, envs: make([]env.Env, n), seed: seed, autoreset: make([]bool, n), infos: make([]env.Info, n)}
	for i := range n {
		e, err := makeSub(name, cfg)
		if err != nil {
			v.closeEnvs()
			return nil, err
		}
		v.envs[i] = e
		if i == 0 {
			v.obsSpace, v.actSpace = e.ObservationSpace(), e.ActionSpace()
			v.obsN, v.actN = v.obsSpace.Size(), v.actSpace.Size()
			v.disc, _ = v.actSpace.(*spaces.Discrete)
		}
	}
	var err error
	if v.obsJSON, err = json.Marshal(v.obsSpace); err == nil {
		v.actJSON, err = json.Marshal(v.actSpace)
	}
	if err != nil {
		v.closeEnvs()
		return nil, withStatus(statusInternal, fmt.Errorf("onnxrl: %s: spaces JSON: %w", name, err))
	}
	return v, nil
}

func registered(name string) bool {
	for _, n := range env.Names() {
		if n == name {
			return true
		}
	}
	return false
}

// makeSub makes one sub-environment; only single-agent environments (env.Env) qualify.
func makeSub(name string, cfg env.Config) (e env.Env, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = withStatus(statusInternal, fmt.Errorf("onnxrl: make %s panicked: %v", name, r))
		}
	}()
	made, err := env.Make(name, cfg)
	if err != nil {
		return nil, withStatus(statusInvalidArgument, err)
	}
	e = made.Env()
	if e == nil {
		raw := made.Value()
		if c, ok := raw.(io.Closer); ok {
			c.Close()
		}
		return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: %s is a %T, not a single-agent environment: a vector env needs one (see sample run --list-envs)", name, raw))
	}
	return e, nil
}

func (v *vecEnv) closeEnvs() {
	for _, e := range v.envs {
		if c, ok := e.(io.Closer); ok {
			c.Close()
		}
	}
}

// close releases the sub-environments, waiting for a call in flight.
func (v *vecEnv) close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	v.closeEnvs()
	return nil
}

// spaceJSON returns the observation (which 0) or action (which 1) space as spaces JSON.
func (v *vecEnv) spaceJSON(which int) ([]byte, error) {
	switch which {
	case 0:
		return v.obsJSON, nil
	case 1:
		return v.actJSON, nil
	}
	return nil, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: which = %d: want 0 (observation space) or 1 (action space)", which))
}

// lockLive locks v, or fails when it was closed (by a close that raced this call).
func (v *vecEnv) lockLive() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return withStatus(statusState, fmt.Errorf("%w (onnxrl_vec_env closed during the call)", errReleased))
	}
	return nil
}

// resetAll resets every sub-environment: with seeds nil, sub-environment i keeps its random
// stream (on the first reset, it is seeded with the open seed + i); with one seed s,
// sub-environment i is seeded with s+i; with num_envs seeds, with seeds[i]. obs receives
// num_envs rows. A sub-environment whose reset fails is reset again on the next step.
// It returns the length of the infos JSON (0: no sub-environment reported an info).
func (v *vecEnv) resetAll(seeds []uint64, obs []float32) (infosLen int, err error) {
	if err := v.lockLive(); err != nil {
		return 0, err
	}
	defer v.mu.Unlock()
	n := len(v.envs)
	if len(seeds) != 0 && len(seeds) != 1 && len(seeds) != n {
		return 0, withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: %d seeds: want 0, 1 or num_envs (%d)", len(seeds), n))
	}
	v.clearInfos()
	var errs []error
	for i, e := range v.envs {
		var s env.Seed
		switch {
		case len(seeds) == 1:
			s = env.WithSeed(seeds[0] + uint64(i))
		case len(seeds) == n:
			s = env.WithSeed(seeds[i])
		case !v.reset:
			s = env.WithSeed(v.seed + uint64(i))
		}
		info, err := safeReset(e, s, obs[i*v.obsN:(i+1)*v.obsN])
		v.autoreset[i] = err != nil
		if err != nil {
			errs = append(errs, &env.SubEnvError{Env: i, Op: "reset", Err: err})
			continue
		}
		v.setInfo(i, info)
	}
	if len(errs) > 0 {
		return 0, withStatus(statusInternal, fmt.Errorf("onnxrl: %s: %w", v.name, errors.Join(errs...)))
	}
	v.reset = true
	err = v.makeInfosJSON()
	return len(v.infosJSON), err
}

func safeReset(e env.Env, seed env.Seed, obs []float32) (info env.Info, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &env.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return e.Reset(seed, obs)
}

// step steps every sub-environment with its row of actions, or resets it when its episode
// ended on the previous step (next-step autoreset). Every action row is checked against the
// action space first, the rows of sub-environments about to be reset included: a bad one is
// statusInvalidArgument and nothing changes. A sub-environment whose step fails (an error or
// a panic) gets reward 0, both flags false and is reset on the next step; the error names it
// after the others have stepped. It returns the length of the infos JSON (0: none).
func (v *vecEnv) step(actions, obs []float32, rewards []float64, terminated, truncated []uint8) (infosLen int, err error) {
	if err := v.lockLive(); err != nil {
		return 0, err
	}
	defer v.mu.Unlock()
	if !v.reset {
		return 0, withStatus(statusState, errVecNotReset)
	}
	if err := v.checkActions(actions); err != nil {
		return 0, err
	}
	v.clearInfos()
	var errs []error
	for i := 0; i < len(v.envs); {
		failed, err := v.stepFrom(i, actions, obs, rewards, terminated, truncated)
		if err == nil {
			break
		}
		rewards[failed], terminated[failed], truncated[failed] = 0, 0, 0
		v.autoreset[failed] = true
		errs = append(errs, &env.SubEnvError{Env: failed, Op: "step", Err: err})
		i = failed + 1
	}
	if len(errs) > 0 {
		return 0, withStatus(statusInternal, fmt.Errorf("onnxrl: %s: %w", v.name, errors.Join(errs...)))
	}
	if v.nInfos > 0 {
		err = v.makeInfosJSON()
	}
	return len(v.infosJSON), err
}

// stepFrom steps (or autoresets) sub-environments from, from+1, ... until one fails: it
// returns that one's index and error, or len(envs) and nil. One deferred recover covers
// the loop.
func (v *vecEnv) stepFrom(from int, actions, obs []float32, rewards []float64, terminated, truncated []uint8) (at int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &env.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	an, on := v.actN, v.obsN
	for at = from; at < len(v.envs); at++ {
		row := obs[at*on : (at+1)*on : (at+1)*on]
		if v.autoreset[at] {
			info, err := v.envs[at].Reset(env.Seed{}, row)
			if err != nil {
				return at, err
			}
			rewards[at], terminated[at], truncated[at] = 0, 0, 0
			v.autoreset[at] = false
			if info != nil {
				v.setInfo(at, info)
			}
			continue
		}
		r, err := v.envs[at].Step(actions[at*an:(at+1)*an:(at+1)*an], row)
		if err != nil {
			return at, err
		}
		rewards[at] = r.Reward
		terminated[at], truncated[at] = b2u(r.Terminated), b2u(r.Truncated)
		v.autoreset[at] = r.Terminated || r.Truncated
		if r.Info != nil {
			v.setInfo(at, r.Info)
		}
	}
	return at, nil
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// checkActions returns statusInvalidArgument naming the first action row outside the action
// space.
func (v *vecEnv) checkActions(actions []float32) error {
	bad := -1
	if v.disc != nil {
		bad = badDiscreteAction(actions, v.disc.Start, v.disc.N)
	} else if _, box := v.actSpace.(*spaces.Box); box {
		// The environments clip Box actions to the bounds, as gymnasium's do; NaN is refused.
		if i := slices.IndexFunc(actions, func(f float32) bool { return f != f }); i >= 0 {
			bad = i / v.actN
		}
	} else {
		for i := range v.envs {
			if !v.actSpace.Contains(actions[i*v.actN : (i+1)*v.actN]) {
				bad = i
				break
			}
		}
	}
	if bad < 0 {
		return nil
	}
	return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: actions[%d] = %v is outside the action space %s (nothing was stepped)",
		bad, actions[bad*v.actN:(bad+1)*v.actN], spaces.String(v.actSpace)))
}

// badDiscreteAction returns the index of the first value that is not an integer in
// [start, start+n), or -1: Discrete.Contains over a column in one loop.
func badDiscreteAction(actions []float32, start, n int64) int {
	for i, f := range actions {
		k := int64(f)
		if float32(k) != f || k < start || uint64(k-start) >= uint64(n) {
			return i
		}
	}
	return -1
}

func (v *vecEnv) clearInfos() {
	if v.nInfos > 0 {
		clear(v.infos)
		v.nInfos = 0
	}
	v.infosJSON = v.infosJSON[:0]
}

func (v *vecEnv) setInfo(i int, info env.Info) {
	if info == nil {
		return
	}
	if v.infos[i] == nil {
		v.nInfos++
	}
	v.infos[i] = info
}

// makeInfosJSON writes the infos of the last call in gymnasium's vector layout: for each key
// k that some sub-environment reported, "k" holds num_envs values (null where absent) and
// "_k" num_envs booleans (whether sub-environment i reported k). Nothing when no
// sub-environment reported an info.
func (v *vecEnv) makeInfosJSON() error {
	v.infosJSON = v.infosJSON[:0]
	if v.nInfos == 0 {
		return nil
	}
	keys := map[string]bool{}
	for _, info := range v.infos {
		for k := range info {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	out := make(map[string]any, 2*len(sorted))
	for _, k := range sorted {
		vals := make([]any, len(v.infos))
		has := make([]bool, len(v.infos))
		for i, info := range v.infos {
			vals[i], has[i] = info[k]
		}
		out[k], out["_"+k] = vals, has
	}
	b, err := json.Marshal(out)
	if err != nil {
		return withStatus(statusInternal, fmt.Errorf("onnxrl: %s: an info is not JSON: %w", v.name, err))
	}
	v.infosJSON = b
	return nil
}

// withInfos calls f with the infos JSON of the last reset or step (empty when none), under
// the lock: the bytes are valid during f only.
func (v *vecEnv) withInfos(f func(infos []byte) error) error {
	if err := v.lockLive(); err != nil {
		return err
	}
	defer v.mu.Unlock()
	return f(v.infosJSON)
}
