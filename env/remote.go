package env

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// WaitAll is the BatchWait of a RemoteVectorEnv whose Poll blocks until every sub-environment
// with a reset or step in flight has finished (a synchronous, lock-step mode).
const WaitAll time.Duration = -1

// RemoteVectorEnvOptions configures a RemoteVectorEnv.
type RemoteVectorEnvOptions struct {
	BaseEnvOptions
	// BatchWait is how long Poll waits, counted from its start, for more sub-environments to
	// finish once at least one has: 0 returns as soon as one is ready (with every other one
	// that is ready by then); WaitAll waits for all that are in flight (RLlib's
	// remote_env_batch_wait_ms, with WaitAll for "wait for everything"). Poll always waits for
	// at least one sub-environment when any is in flight, and never for one that was not
	// given work.
	BatchWait time.Duration
}

// RemoteVectorEnv is a BaseEnv whose sub-environments (Env or MultiAgentEnv) each step on
// their own goroutine (RLlib's RemoteBaseEnv, with goroutines for Ray actors). Poll returns
// only the sub-environments that are ready, so a slow one never stalls the fast ones.
//
// Protocol: the first Poll starts every sub-environment's reset. SendActions needs exactly
// one action for every agent that was returned (by Poll) and is not done, starts those steps
// and returns at once; a sub-environment that Poll did not return cannot be given actions.
// TryReset is asynchronous (async=true): the first observations arrive through a later Poll
// with EnvStatus.Reset set. Observations returned by Poll point into buffers of the
// sub-environment and stay valid until the next SendActions or TryReset that involves that
// sub-environment (and at least until the next Poll, SendActions or TryReset, as BaseEnv
// promises). Action slices are copied by SendActions.
//
// Failures (an error or panic in a reset or step, on the sub-environment's goroutine) follow
// BaseEnvOptions.RestartFailedSubEnvironments; without it the Poll that collects the failure
// returns a *SubEnvError naming the sub-environment, after appending what the other ready
// sub-environments reported. With it, make is called on the sub-environment's goroutine, so it
// must be safe for concurrent use.
//
// Steady state allocates nothing: each sub-environment has a command channel and a reusable
// step buffer, and a shared channel carries the index of each one that is ready.
//
// Like every BaseEnv, a RemoteVectorEnv is driven by one goroutine. Stop waits for every step
// in flight and ends all goroutines.
type RemoteVectorEnv struct {
	opts     RemoteVectorEnvOptions
	slots    []*slot
	tbl      table
	cmds     []chan remoteCmd
	done     chan int
	wg       sync.WaitGroup
	timer    *time.Timer
	inFlight int
	errs     []error
	started  bool
	stopped  bool
}

type remoteCmd struct {
	reset bool
	seed  Seed
}

// NewRemoteVectorEnv makes opts.NumEnvs sub-environments with make(0), make(1), ... (each an
// Env or a MultiAgentEnv; single-agent ones report DefaultAgentID) and starts one goroutine
// per sub-environment. The RemoteVectorEnv implements SubEnvironmentser and TryRenderer.
func NewRemoteVectorEnv(make func(index int) (any, error), opts RemoteVectorEnvOptions) (*RemoteVectorEnv, error) {
	if make == nil {
		return nil, errors.New("env: NewRemoteVectorEnv: make is nil")
	}
	n, err := opts.numEnvs()
	if err != nil {
		return nil, err
	}
	opts.NumEnvs = n
	r := &RemoteVectorEnv{opts: opts, slots: newSlice[*slot](n), tbl: newTable(n),
		cmds: newSlice[chan remoteCmd](n), done: newChan[int](n)}
	for i := range n {
		if r.slots[i], err = newSlot(i, n, make, opts.BaseEnvOptions, nil); err != nil {
			for _, s := range r.slots[:i] {
				s.close()
			}
			return nil, err
		}
	}
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
	for i, s := range r.slots {
		r.cmds[i] = newChan[remoteCmd](1)
		r.wg.Add(1)
		go r.worker(s, r.cmds[i])
	}
	return r, nil
}

func newChan[T any](n int) chan T { return make(chan T, n) }

func (r *RemoteVectorEnv) worker(s *slot, cmds <-chan remoteCmd) {
	defer r.wg.Done()
	for c := range cmds {
		if c.reset {
			s.doReset(c.seed)
		} else {
			s.doStep()
		}
		r.done <- s.index // never blocks: capacity NumEnvs, one result per sub-environment in flight
	}
}

func (r *RemoteVectorEnv) send(i int, c remoteCmd) {
	r.tbl.sets[i].state = stInFlight
	r.inFlight++
	r.cmds[i] <- c
}

// collect turns the result of sub-environment i into Batch entries.
func (r *RemoteVectorEnv) collect(i int, dst *Batch) {
	r.inFlight--
	s := r.slots[i]
	switch {
	case s.fault == nil:
		r.tbl.report(s, dst)
	case s.restarted:
		r.tbl.sets[i].state = stFailed
		dst.Envs = append(dst.Envs, EnvStatus{Env: i, Err: s.fault})
	default:
		r.tbl.sets[i].state = stFailed
		r.errs = append(r.errs, s.fault)
	}
}

// Poll implements BaseEnv: it waits as BatchWait says and appends the ready
// sub-environments. With nothing in flight it returns at once.
func (r *RemoteVectorEnv) Poll(dst *Batch) error {
	if r.stopped {
		return ErrStopped
	}
	if !r.started {
		r.started = true
		for i := range r.slots {
			if r.tbl.sets[i].state == stNew {
				r.send(i, remoteCmd{reset: true})
			}
		}
	}
	if r.inFlight == 0 {
		return nil
	}
	start := time.Now()
	r.collect(<-r.done, dst)
	if r.opts.BatchWait < 0 {
		for r.inFlight > 0 {
			r.collect(<-r.done, dst)
		}
	} else {
	drain:
		for r.inFlight > 0 {
			select {
			case i := <-r.done:
				r.collect(i, dst)
			default:
				break drain
			}
		}
		if rest := r.opts.BatchWait - time.Since(start); rest > 0 && r.inFlight > 0 {
			r.timer.Reset(rest)
		wait:
			for r.inFlight > 0 {
				select {
				case i := <-r.done:
					r.collect(i, dst)
				case <-r.timer.C:
					break wait
				}
			}
			r.timer.Stop()
		}
	}
	var err error
	switch len(r.errs) {
	case 0:
	case 1:
		err = r.errs[0]
	default:
		err = errors.Join(r.errs...)
	}
	clear(r.errs)
	r.errs = r.errs[:0]
	return err
}

// SendActions implements BaseEnv: it checks the actions against what Poll returned (see
// ErrBadActions, ErrNeedsReset, ActionError) before starting anything, copies them, starts
// the steps and returns without waiting for them.
func (r *RemoteVectorEnv) SendActions(actions []Action) error {
	if r.stopped {
		return ErrStopped
	}
	if err := r.tbl.match(actions); err != nil {
		return err
	}
	for _, i := range r.tbl.await {
		set := &r.tbl.sets[i]
		set.listed = false
		if set.state != stAwaiting {
			continue
		}
		r.tbl.takeActions(r.slots[i], true)
		r.send(i, remoteCmd{})
	}
	r.tbl.await = r.tbl.await[:0]
	return nil
}

// TryReset implements BaseEnv: it starts the reset of sub-environment env on its goroutine
// and returns async=true; a later Poll returns the first observations. A sub-environment that
// is stepping (given actions and not yet returned by Poll) cannot be reset.
func (r *RemoteVectorEnv) TryReset(env EnvID, seed Seed, dst *Batch) (bool, error) {
	if r.stopped {
		return false, ErrStopped
	}
	if env < 0 || env >= len(r.slots) {
		return false, fmt.Errorf("env: TryReset: unknown sub-environment %d (there are %d)", env, len(r.slots))
	}
	if r.tbl.sets[env].state == stInFlight {
		return false, fmt.Errorf("env: TryReset: sub-environment %d is still stepping; reset it after Poll returns it", env)
	}
	r.send(env, remoteCmd{reset: true, seed: seed})
	return true, nil
}

// Stop implements BaseEnv: it waits for the resets and steps in flight, ends every
// sub-environment goroutine and closes the sub-environments that are io.Closers. It is safe
// to call twice; other methods return ErrStopped afterwards.
func (r *RemoteVectorEnv) Stop() error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	for _, c := range r.cmds {
		close(c)
	}
	r.wg.Wait()
	var errs []error
	for _, s := range r.slots {
		if err := s.close(); err != nil {
			errs = append(errs, fmt.Errorf("env: close sub-environment %d: %w", s.index, err))
		}
	}
	return errors.Join(errs...)
}

// NumEnvs returns the number of sub-environments.
func (r *RemoteVectorEnv) NumEnvs() int { return len(r.slots) }

// SubEnvironments returns the sub-environments as made (after a restart, the new instance).
// They belong to their goroutines: call their methods only after Stop.
func (r *RemoteVectorEnv) SubEnvironments() []any {
	out := make([]any, len(r.slots))
	for i, s := range r.slots {
		if r.tbl.sets[i].state == stInFlight && !r.stopped {
			out[i] = nil // being replaced or used by its goroutine; see the doc comment
			continue
		}
		out[i] = s.raw
	}
	return out
}

// TryRender renders sub-environment env when it implements Renderer. It runs on the
// caller's goroutine, so the sub-environment must not be in flight (given actions or a
// reset and not yet returned by Poll).
func (r *RemoteVectorEnv) TryRender(env EnvID) (any, error) {
	if env < 0 || env >= len(r.slots) {
		return nil, fmt.Errorf("env: TryRender: unknown sub-environment %d (there are %d)", env, len(r.slots))
	}
	if r.tbl.sets[env].state == stInFlight && !r.stopped {
		return nil, fmt.Errorf("env: TryRender: sub-environment %d is stepping; render it after Poll returns it", env)
	}
	rd, ok := r.slots[env].raw.(Renderer)
	if !ok {
		return nil, fmt.Errorf("env: TryRender: sub-environment %d (%T) does not implement Renderer", env, r.slots[env].raw)
	}
	return safeRender(rd)
}
