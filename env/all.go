package env

import (
	"errors"
	"fmt"
)

// seedAt is the seed of sub-environment i in a TryResetAll with seed.
func seedAt(seed Seed, i int) Seed {
	if !seed.Set {
		return seed
	}
	return WithSeed(seed.Value + uint64(i))
}

// resetEach calls reset for every sub-environment, going on past failures, and joins the
// errors.
func resetEach(n int, seed Seed, dst *Batch, reset func(EnvID, Seed, *Batch) (bool, error)) (async bool, err error) {
	var errs []error
	for i := range n {
		a, err := reset(i, seedAt(seed, i), dst)
		async = async || a
		if err != nil {
			errs = append(errs, err)
		}
	}
	return async, errors.Join(errs...)
}

// renderEach calls render for every sub-environment and joins the errors.
func renderEach(n int, render func(EnvID) (any, error)) ([]any, error) {
	out := make([]any, n)
	var errs []error
	for i := range n {
		v, err := render(i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[i] = v
	}
	return out, errors.Join(errs...)
}

// TryResetAll implements AllResetter: every sub-environment is reset synchronously, in
// order; a failure of one (a *SubEnvError without RestartFailedSubEnvironments) does not
// keep the others from their reset.
func (b *baseEnv) TryResetAll(seed Seed, dst *Batch) (bool, error) {
	if b.stopped {
		return false, ErrStopped
	}
	return resetEach(len(b.slots), seed, dst, b.TryReset)
}

// TryRenderAll implements AllRenderer.
func (b *baseEnv) TryRenderAll() ([]any, error) { return renderEach(len(b.slots), b.TryRender) }

// TryResetAll implements AllResetter: every sub-environment is reset synchronously, in
// order, as TryReset resets one.
func (b *vectorBaseEnv) TryResetAll(seed Seed, dst *Batch) (bool, error) {
	if b.stopped {
		return false, ErrStopped
	}
	return resetEach(b.n, seed, dst, b.TryReset)
}

// TryRenderAll implements AllRenderer.
func (b *vectorBaseEnv) TryRenderAll() ([]any, error) { return renderEach(b.n, b.TryRender) }

// TryResetAll implements AllResetter: it starts the reset of every sub-environment and
// returns async=true; later Polls return the first observations. When a sub-environment is
// stepping (given actions and not yet returned by Poll), nothing is reset and the error
// names it. RLlib's RemoteBaseEnv has no reset of all sub-environments.
func (r *RemoteVectorEnv) TryResetAll(seed Seed, dst *Batch) (bool, error) {
	if r.stopped {
		return false, ErrStopped
	}
	for i := range r.slots {
		if r.tbl.sets[i].state == stInFlight {
			return false, fmt.Errorf("env: TryResetAll: sub-environment %d is still stepping; reset after Poll returns it", i)
		}
	}
	return resetEach(len(r.slots), seed, dst, r.TryReset)
}

// TryRenderAll implements AllRenderer: every sub-environment must be out of flight (see
// TryRender).
func (r *RemoteVectorEnv) TryRenderAll() ([]any, error) { return renderEach(len(r.slots), r.TryRender) }
