package env

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// WaitAll is the BatchWait of a RemoteVectorEnv whose Poll blocks until every sub-environment
// with a reset or step in flight has finished (a synchronous, lock-step mode).
const WaitAll time.Duration = -1

// DefaultStopWait is the StopWait of a RemoteVectorEnv when the option is 0.
const DefaultStopWait = 5 * time.Second

// ErrNothingInFlight is returned (wrapped with the counts) by a RemoteVectorEnv's Poll when
// no reset or step is in flight, so that nothing can ever become ready: the sub-environments
// wait for the actions of the last Poll or for TryReset. RLlib's RemoteBaseEnv fails there too
// (its ray.wait over no pending results raises). It is what a caller sees when it polls again
// after a failed inference instead of sending actions; Stop is the way out.
var ErrNothingInFlight = errors.New("env: Poll with no reset or step in flight: nothing can become ready")

// RemoteVectorEnvOptions configures a RemoteVectorEnv.
type RemoteVectorEnvOptions struct {
	BaseEnvOptions
	// BatchWait is RLlib's remote_env_batch_wait_ms, measured as RLlib's RemoteBaseEnv.poll
	// measures it (a ray.wait for all pending results with this timeout, repeated while none
	// is ready): Poll waits from its start for every sub-environment in flight, and returns
	// as soon as all of them are ready, or when the window of BatchWait ends with at least
	// one ready, with the ones that are; when none is ready at the end of a window, another
	// window of BatchWait begins (so a result that arrives during the second window is
	// returned at its end). 0 returns as soon as one is ready, with every other one that is
	// ready by then (RLlib's default, a ray.wait with timeout 0 repeated until one is).
	// WaitAll waits for all that are in flight (RLlib's old sync mode, ray.wait without a
	// timeout). A result is ready when its reset or step returned, with an error too. Poll
	// never waits for a sub-environment that was not given work.
	BatchWait time.Duration
	// StopWait bounds Stop: how long it waits for the resets and steps in flight to return
	// before it gives up on them; 0 means DefaultStopWait, a negative value not at all.
	StopWait time.Duration
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
// Like every BaseEnv, a RemoteVectorEnv is driven by one goroutine. Stop ends every
// sub-environment goroutine: it waits at most StopWait for the resets and steps in flight;
// one that is still running then (a hung sub-environment) is left to its goroutine, which
// closes the sub-environment and ends as soon as the call returns (a goroutine cannot be
// ended from outside). Stop names those in a *StopTimeoutError, and Running counts them.
type RemoteVectorEnv struct {
	opts     RemoteVectorEnvOptions
	slots    []*slot
	tbl      table
	cmds     []chan remoteCmd
	done     chan int
	ready    []int // the indices one Poll received from done, collected in index order
	timer    *time.Timer
	inFlight int
	errs     []error
	started  bool
	stopped  bool

	spaces agentSpaces // sub-environment 0's, when it was made

	exits     chan int   // a goroutine's index when it ends (capacity NumEnvs)
	mu        sync.Mutex // guards ended and abandoned
	ended     []bool     // the goroutine of sub-environment i has ended
	abandoned []bool     // Stop gave up on it: its goroutine closes the sub-environment
}

// StopTimeoutError is returned by RemoteVectorEnv.Stop when resets or steps were still
// running after StopWait. Their goroutines go on until the calls return, then close the
// sub-environments (a close error is dropped) and end; RemoteVectorEnv.Running counts them.
type StopTimeoutError struct {
	Envs []EnvID // the sub-environments still in their reset or step
	Wait time.Duration
}

func (e *StopTimeoutError) Error() string {
	return fmt.Sprintf("env: Stop: sub-environments %v still in their reset or step after %v; left to end on their goroutines, which close them when the calls return", e.Envs, e.Wait)
}

type remoteCmd struct {
	reset bool
	seed  Seed
}

// NewRemoteVectorEnv makes opts.NumEnvs sub-environments with make(0), make(1), ... (each an
// Env or a MultiAgentEnv, or an Environment of Make holding one; single-agent ones report
// DefaultAgentID) and starts one goroutine
// per sub-environment. The RemoteVectorEnv implements SubEnvironmentser, TryRenderer,
// Spaceser, AllResetter and AllRenderer.
func NewRemoteVectorEnv(make func(index int) (any, error), opts RemoteVectorEnvOptions) (*RemoteVectorEnv, error) {
	if make == nil {
		return nil, errors.New("env: NewRemoteVectorEnv: make is nil")
	}
	make = unwrapEnvironment(make)
	n, err := opts.numEnvs()
	if err != nil {
		return nil, err
	}
	opts.NumEnvs = n
	r := &RemoteVectorEnv{opts: opts, slots: newSlice[*slot](n), tbl: newTable(n),
		cmds: newSlice[chan remoteCmd](n), done: newChan[int](n), ready: newSlice[int](n)[:0],
		exits: newChan[int](n), ended: newSlice[bool](n), abandoned: newSlice[bool](n)}
	for i := range n {
		if r.slots[i], err = newSlot(i, n, make, opts.BaseEnvOptions, nil); err != nil {
			for _, s := range r.slots[:i] {
				s.close()
			}
			return nil, err
		}
	}
	if r.spaces, err = spacesOfSub(r.slots[0]); err != nil {
		for _, s := range r.slots {
			s.close()
		}
		return nil, fmt.Errorf("env: NewRemoteVectorEnv: the spaces of sub-environment 0: %w", err)
	}
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
	for i, s := range r.slots {
		r.cmds[i] = newChan[remoteCmd](1)
		go r.worker(s, r.cmds[i])
	}
	return r, nil
}

func newChan[T any](n int) chan T { return make(chan T, n) }

func (r *RemoteVectorEnv) worker(s *slot, cmds <-chan remoteCmd) {
	for c := range cmds {
		if c.reset {
			s.doReset(c.seed)
		} else {
			s.doStep()
		}
		r.done <- s.index // never blocks: capacity NumEnvs, one result per sub-environment in flight
	}
	r.mu.Lock()
	r.ended[s.index] = true
	abandoned := r.abandoned[s.index]
	r.mu.Unlock()
	if abandoned { // Stop has returned without it: the sub-environment is ours to close
		_ = s.close()
	}
	r.exits <- s.index // never blocks: capacity NumEnvs, one exit per goroutine
}

func (r *RemoteVectorEnv) send(i int, c remoteCmd) {
	r.tbl.sets[i].state = stInFlight
	r.inFlight++
	r.cmds[i] <- c
}

// take receives the index of sub-environment i from done: no longer in flight, collected at
// the end of the Poll.
func (r *RemoteVectorEnv) take(i int) {
	r.inFlight--
	r.ready = append(r.ready, i)
}

// collect turns the result of sub-environment i into Batch entries.
func (r *RemoteVectorEnv) collect(i int, dst *Batch) {
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
// sub-environments. With nothing in flight it returns ErrNothingInFlight (wrapped) at once.
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
		return r.nothingInFlight()
	}
	r.ready = r.ready[:0]
	switch w := r.opts.BatchWait; {
	case w < 0:
		for r.inFlight > 0 {
			r.take(<-r.done)
		}
	case w == 0:
		r.take(<-r.done)
		r.takeReady()
	default:
		r.takeWindow(w)
	}
	// In the order of the sub-environments, not of their goroutines' finishing: what one
	// Poll returns is then reported the same way in every run, so that with WaitAll (every
	// sub-environment in each Poll) a seed gives the same batches, as a VectorEnv's does.
	slices.Sort(r.ready)
	for _, i := range r.ready {
		r.collect(i, dst)
	}
	return takeErrs(&r.errs)
}

// takeReady takes every result that is ready now, without waiting.
func (r *RemoteVectorEnv) takeReady() {
	for r.inFlight > 0 {
		select {
		case i := <-r.done:
			r.take(i)
		default:
			return
		}
	}
}

// takeWindow is RLlib's poll loop: ray.wait(pending, num_returns=len(pending),
// timeout=w), repeated while it returns nothing.
func (r *RemoteVectorEnv) takeWindow(w time.Duration) {
	got := 0
	r.timer.Reset(w)
	defer r.timer.Stop() // no stale tick is received after Stop (Go 1.23 timers)
	for r.inFlight > 0 {
		select {
		case i := <-r.done:
			r.take(i)
			got++
		case <-r.timer.C:
			if got > 0 {
				return
			}
			r.timer.Reset(w) // none was ready: a new window
		}
	}
}

// nothingInFlight is Poll's error when no reset or step runs.
func (r *RemoteVectorEnv) nothingInFlight() error {
	var await, reset int
	for i := range r.tbl.sets {
		switch r.tbl.sets[i].state {
		case stAwaiting:
			await++
		case stEnded, stFailed:
			reset++
		}
	}
	return fmt.Errorf("%w (%d sub-environments wait for the actions of the last Poll, %d for TryReset)", ErrNothingInFlight, await, reset)
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

// Stop implements BaseEnv: it ends every sub-environment goroutine and closes the
// sub-environments that are io.Closers, after waiting at most StopWait for the resets and
// steps in flight; those still running then are named in a *StopTimeoutError (joined with
// any close errors) and closed by their own goroutines once their calls return. A
// sub-environment that waits for actions or a reset is released at once; results that were
// not polled are dropped. It is safe to call twice; other methods return ErrStopped
// afterwards.
func (r *RemoteVectorEnv) Stop() error {
	if r.stopped {
		return nil
	}
	r.stopped = true
	for _, c := range r.cmds {
		close(c)
	}
	wait := r.opts.StopWait
	if wait == 0 {
		wait = DefaultStopWait
	}
	left := len(r.slots)
	if wait > 0 {
		t := time.NewTimer(wait)
	collect:
		for left > 0 {
			select {
			case <-r.exits:
				left--
			case <-t.C:
				break collect
			}
		}
		t.Stop()
	}
	for r.inFlight > 0 { // results that came in but were not polled: not in flight any more
		select {
		case i := <-r.done:
			r.tbl.sets[i].state = stReady
			r.inFlight--
			continue
		default:
		}
		break
	}
	var errs []error
	var hung []EnvID
	r.mu.Lock()
	for i := range r.slots {
		// One that is not in flight is parked on its closed command channel and touches its
		// sub-environment no more, ended or not: Stop closes it.
		if !r.ended[i] && r.tbl.sets[i].state == stInFlight {
			r.abandoned[i] = true
			hung = append(hung, i)
		}
	}
	r.mu.Unlock()
	if len(hung) > 0 {
		errs = append(errs, &StopTimeoutError{Envs: hung, Wait: max(wait, 0)})
	}
	for i, s := range r.slots {
		if r.abandoned[i] { // written above by this goroutine: no lock needed to read it
			continue
		}
		if err := s.close(); err != nil {
			errs = append(errs, fmt.Errorf("env: close sub-environment %d: %w", s.index, err))
		}
	}
	return errors.Join(errs...)
}

// Running returns how many sub-environment goroutines have not ended: NumEnvs before Stop,
// 0 after a Stop that waited (StopWait not negative) and returned no *StopTimeoutError, and
// after one that did, the hung sub-environments whose calls have not returned yet (with a
// negative StopWait, also for a moment the idle goroutines, which end at once).
func (r *RemoteVectorEnv) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.ended {
		if !e {
			n++
		}
	}
	return n
}

// NumEnvs returns the number of sub-environments.
func (r *RemoteVectorEnv) NumEnvs() int { return len(r.slots) }

// Options returns the options the RemoteVectorEnv runs with (NumEnvs filled in).
func (r *RemoteVectorEnv) Options() RemoteVectorEnvOptions { return r.opts }

// SubEnvironments returns the sub-environments as made (after a restart, the new instance).
// They belong to their goroutines: call their methods only after Stop. One that is in flight
// (before Stop) or was left running by Stop is nil.
func (r *RemoteVectorEnv) SubEnvironments() []any {
	out := make([]any, len(r.slots))
	for i, s := range r.slots {
		if !r.owned(i) {
			out[i] = nil // being replaced or used by its goroutine; see the doc comment
			continue
		}
		out[i] = s.raw
	}
	return out
}

// owned reports whether sub-environment i may be used on the caller's goroutine: it is not
// in flight, or Stop ended its goroutine.
func (r *RemoteVectorEnv) owned(i int) bool {
	if r.stopped {
		return !r.abandoned[i] // written by Stop, on this goroutine
	}
	return r.tbl.sets[i].state != stInFlight
}

// TryRender renders sub-environment env when it implements Renderer. It runs on the
// caller's goroutine, so the sub-environment must not be in flight (given actions or a
// reset and not yet returned by Poll).
func (r *RemoteVectorEnv) TryRender(env EnvID) (any, error) {
	if env < 0 || env >= len(r.slots) {
		return nil, fmt.Errorf("env: TryRender: unknown sub-environment %d (there are %d)", env, len(r.slots))
	}
	if !r.owned(env) {
		return nil, fmt.Errorf("env: TryRender: sub-environment %d is stepping; render it after Poll returns it", env)
	}
	rd, ok := r.slots[env].raw.(Renderer)
	if !ok {
		return nil, fmt.Errorf("env: TryRender: sub-environment %d (%T) does not implement Renderer", env, r.slots[env].raw)
	}
	return safeRender(rd)
}
