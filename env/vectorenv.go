package env

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/onnxrl/sampler/spaces"
)

// recoverTo turns a panic into a *PanicError stored in *err. Use as
// `defer recoverTo(&err)` in a function with a named error result.
func recoverTo(err *error) {
	if r := recover(); r != nil {
		*err = &PanicError{Value: r, Stack: debug.Stack()}
	}
}

func safeEnvReset(e Env, seed Seed, obs []float32) (info Info, err error) {
	defer recoverTo(&err)
	return e.Reset(seed, obs)
}

// vectorEnv is NewVectorEnv's VectorEnv: sub-environments stepped in sequence
// (RLlib's _VectorizedGymEnv).
type vectorEnv struct {
	make       func(index int) (Env, error)
	envs       []Env
	obs, act   spaces.Space
	obsN, actN int
	// running[i]: sub-environment i is inside an episode and may step; idle counts those
	// that are not (written through setRunning, so that Step need not scan running).
	running []bool
	idle    int
	disc    *spaces.Discrete // act when it is Discrete (checked without an interface call)
}

// NewVectorEnv returns a VectorEnv of n sub-environments made by make(0) ... make(n-1), stepped
// one after the other on the caller's goroutine (RLlib's _VectorizedGymEnv). Every
// sub-environment must have the same spaces as the first.
//
// Step checks every row of actions against the action space (an *ActionError wrapped with the
// index) and that every sub-environment is inside an episode (ErrNeedsReset wrapped with the
// index) before it steps any of them; both are caller errors and change nothing. It then steps
// each sub-environment; a sub-environment whose Step returns an error or panics yields a
// *SubEnvError naming its index (errors.Join of several when more than one fails), while the
// rows of the others are written as usual. A failed sub-environment needs ResetAt (or
// RestartAt, which recreates it with make) before it steps again. There is no autoreset.
//
// The VectorEnv implements Restarter.
func NewVectorEnv(make func(index int) (Env, error), n int) (VectorEnv, error) {
	if n <= 0 {
		return nil, fmt.Errorf("env: NewVectorEnv: need at least one sub-environment, got %d", n)
	}
	v := &vectorEnv{make: make, envs: newSlice[Env](n), running: newSlice[bool](n), idle: n}
	for i := range n {
		e, err := make(i)
		if err != nil {
			return nil, fmt.Errorf("env: NewVectorEnv: make sub-environment %d: %w", i, err)
		}
		if e == nil {
			return nil, fmt.Errorf("env: NewVectorEnv: make sub-environment %d returned nil", i)
		}
		if i == 0 {
			v.obs, v.act = e.ObservationSpace(), e.ActionSpace()
			v.obsN, v.actN = v.obs.Size(), v.act.Size()
			v.disc, _ = v.act.(*spaces.Discrete)
		} else if err := v.sameSpaces(i, e); err != nil {
			return nil, err
		}
		v.envs[i] = e
	}
	return v, nil
}

func newSlice[T any](n int) []T { return make([]T, n) }

func (v *vectorEnv) sameSpaces(i int, e Env) error {
	if !spaces.Equal(e.ObservationSpace(), v.obs) || !spaces.Equal(e.ActionSpace(), v.act) {
		return fmt.Errorf("env: NewVectorEnv: sub-environment %d has spaces %s, %s; sub-environment 0 has %s, %s",
			i, spaces.String(e.ObservationSpace()), spaces.String(e.ActionSpace()), spaces.String(v.obs), spaces.String(v.act))
	}
	return nil
}

func (v *vectorEnv) NumEnvs() int                   { return len(v.envs) }
func (v *vectorEnv) ObservationSpace() spaces.Space { return v.obs }
func (v *vectorEnv) ActionSpace() spaces.Space      { return v.act }

func (v *vectorEnv) SubEnvironments() []any {
	out := make([]any, len(v.envs))
	for i, e := range v.envs {
		out[i] = e
	}
	return out
}

func (v *vectorEnv) ResetAt(i int, seed Seed, obs []float32) (Info, error) {
	if i < 0 || i >= len(v.envs) {
		return nil, fmt.Errorf("env: ResetAt(%d): no such sub-environment (have %d)", i, len(v.envs))
	}
	if len(obs) != v.obsN {
		panic(fmt.Sprintf("env: ResetAt: len(obs) = %d, want %d", len(obs), v.obsN))
	}
	v.setRunning(i, false)
	info, err := safeEnvReset(v.envs[i], seed, obs)
	if err != nil {
		return nil, &SubEnvError{Env: i, Op: "reset", Err: err}
	}
	v.setRunning(i, true)
	return info, nil
}

// setRunning sets running[i] to on and keeps idle its count of false.
func (v *vectorEnv) setRunning(i int, on bool) {
	if v.running[i] != on {
		v.running[i] = on
		if on {
			v.idle--
		} else {
			v.idle++
		}
	}
}

func (v *vectorEnv) RestartAt(i int) error {
	if i < 0 || i >= len(v.envs) {
		return fmt.Errorf("env: RestartAt(%d): no such sub-environment (have %d)", i, len(v.envs))
	}
	e, err := v.make(i)
	if err == nil && e == nil {
		err = errors.New("make returned nil")
	}
	if err == nil {
		err = v.sameSpaces(i, e)
	}
	if err != nil {
		return &SubEnvError{Env: i, Op: "restart", Err: err}
	}
	v.envs[i] = e
	v.setRunning(i, false)
	return nil
}

func (v *vectorEnv) Step(actions, obs []float32, results []StepResult) error {
	n := len(v.envs)
	if len(actions) != n*v.actN || len(obs) != n*v.obsN || len(results) != n {
		panic(fmt.Sprintf("env: VectorEnv.Step: buffer lengths %d, %d, %d; want %d, %d, %d",
			len(actions), len(obs), len(results), n*v.actN, n*v.obsN, n))
	}
	if v.idle > 0 {
		return fmt.Errorf("env: VectorEnv sub-environment %d: %w", slices.Index(v.running, false), ErrNeedsReset)
	}
	bad := -1
	if v.disc != nil && v.actN == 1 {
		bad = badDiscrete(actions, v.disc.Start, v.disc.N)
	} else {
		for i := range n {
			if !v.act.Contains(actions[i*v.actN : (i+1)*v.actN]) {
				bad = i
				break
			}
		}
	}
	if bad >= 0 {
		return fmt.Errorf("env: VectorEnv sub-environment %d: %w", bad,
			&ActionError{Action: slices.Clone(actions[bad*v.actN : (bad+1)*v.actN]), Space: spaces.String(v.act)})
	}
	var errs []error
	for i := 0; i < n; {
		failed, err := v.stepFrom(i, actions, obs, results)
		if err == nil {
			break
		}
		v.setRunning(failed, false)
		results[failed] = StepResult{}
		errs = append(errs, &SubEnvError{Env: failed, Op: "step", Err: err})
		i = failed + 1
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// badDiscrete returns the index of the first of actions (one value each) that is not an
// integer in [start, start+n), as spaces.Discrete.Contains decides it, or -1. It is that
// check over a whole action column in one tight loop (an interface-free call a row still
// measured about 4 ns a row, most of a vector step's bookkeeping).
func badDiscrete(actions []float32, start, n int64) int {
	for i, f := range actions {
		k := int64(f)
		if float32(k) != f || k < start || uint64(k-start) >= uint64(n) {
			return i
		}
	}
	return -1
}

// stepFrom steps sub-environments from, from+1, ... until one fails (an error or a panic): it
// returns that one's index and error, or n and nil. One deferred recover covers the loop.
func (v *vectorEnv) stepFrom(from int, actions, obs []float32, results []StepResult) (at int, err error) {
	defer recoverTo(&err)
	an, on := v.actN, v.obsN
	for at = from; at < len(v.envs); at++ {
		r, err := v.envs[at].Step(actions[at*an:(at+1)*an:(at+1)*an], obs[at*on:(at+1)*on:(at+1)*on])
		if err != nil {
			return at, err
		}
		results[at] = r
		if r.Terminated || r.Truncated {
			v.running[at] = false // it was running: Step checked
			v.idle++
		}
	}
	return at, nil
}

// subEnvErrors appends to dst every *SubEnvError in err's tree (errors.Join included).
func subEnvErrors(dst []*SubEnvError, err error) []*SubEnvError {
	var se *SubEnvError
	if errors.As(err, &se) && err == error(se) {
		return append(dst, se)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			dst = subEnvErrors(dst, e)
		}
		return dst
	}
	if errors.As(err, &se) {
		return append(dst, se)
	}
	return dst
}
