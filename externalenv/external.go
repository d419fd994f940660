package externalenv

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

var errStopped = env.ErrStopped

// completedMemory is how many completed episode ids are remembered for ErrEpisodeDone.
const completedMemory = 10000

// Options configures an ExternalEnv.
type Options struct {
	// ObservationSpace and ActionSpace are the spaces of the (single) agent; required.
	ObservationSpace, ActionSpace spaces.Space
	// MaxConcurrentEpisodes bounds the episodes running at once and is the number of
	// sub-environments of the BaseEnv. 0 means 100.
	MaxConcurrentEpisodes int
	// Timeout is how long GetAction waits for the sampler before ErrTimeout. 0 means 60s;
	// negative means no timeout (the context still applies).
	Timeout time.Duration
	// MaxBatch is the most observations one Poll reports. 0 means
	// min(1024, MaxConcurrentEpisodes).
	MaxBatch int
	// MaxWait enables dynamic batching: once one observation is pending, Poll waits up to
	// MaxWait for more, until MaxBatch. 0 means: report what is pending.
	MaxWait time.Duration
}

// event is one observation reported by the simulator (GetAction, LogAction or EndEpisode).
type event struct {
	seq      uint64
	ep       *episode
	obs      []float32
	reward   float64
	info     env.Info
	logged   []float32 // LogAction's action, nil otherwise
	terminal bool
	waiter   bool // a GetAction caller waits for the answer
	ignored  bool // the GetAction caller gave up: the answer is dropped
	next     *event
}

// episode is the state of one running episode; all fields are guarded by ExternalEnv.mu.
type episode struct {
	id       string
	training bool
	slot     int // sub-environment, -1 until its first observation is reported
	started  bool
	reward   float64 // logged since the last observation
	info     env.Info
	head     *event // queued events, not reported yet
	tail     *event
	inFlight *event // reported, waiting for SendActions
	queued   bool   // on the ready list
	logged   []float32
	waiting  bool
	reply    chan []float32 // GetAction's answer (capacity 1)
}

// ExternalEnv is RLlib's ExternalEnv: a simulator that drives itself (its own goroutines)
// reports observations and asks for actions through StartEpisode, GetAction, LogAction,
// LogReturns and EndEpisode, while a sampler drives ExternalEnv as an env.BaseEnv (Poll,
// SendActions, TryReset, Stop) and answers every pending GetAction of a step with one batched
// inference.
//
// The simulator-side methods are safe for concurrent use; the BaseEnv methods are for one
// goroutine (the sampler's).
type ExternalEnv struct {
	obsSpace, actSpace spaces.Space
	maxEpisodes        int
	timeout            time.Duration
	maxBatch           int
	maxWait            time.Duration

	mu        sync.Mutex
	active    map[string]*episode
	done      map[string]struct{}
	doneRing  []string
	doneNext  int
	ready     []*episode // episodes with a queued event and no event in flight, FIFO
	slots     []*episode // by sub-environment
	free      []int      // free slots (stack)
	freeLater []int      // slots whose end was reported in the last Poll
	reported  []*event   // events reported by the last Poll, recycled by the next
	pool      []*event
	seq       uint64
	runErr    error
	stopped   bool

	wake     chan struct{} // capacity 1: something became ready, or the run loop ended
	stopCh   chan struct{}
	cancel   context.CancelFunc
	started  bool
	stopOnce sync.Once
}

// New returns an ExternalEnv with opts (see Options for the defaults).
func New(opts Options) (*ExternalEnv, error) {
	if opts.ObservationSpace == nil || opts.ActionSpace == nil {
		return nil, errors.New("externalenv: ObservationSpace and ActionSpace are required")
	}
	if err := opts.ObservationSpace.Validate(); err != nil {
		return nil, fmt.Errorf("externalenv: observation space: %w", err)
	}
	if err := opts.ActionSpace.Validate(); err != nil {
		return nil, fmt.Errorf("externalenv: action space: %w", err)
	}
	if opts.MaxConcurrentEpisodes < 0 || opts.MaxBatch < 0 || opts.MaxWait < 0 {
		return nil, fmt.Errorf("externalenv: MaxConcurrentEpisodes %d, MaxBatch %d and MaxWait %v must not be negative",
			opts.MaxConcurrentEpisodes, opts.MaxBatch, opts.MaxWait)
	}
	if opts.MaxConcurrentEpisodes == 0 {
		opts.MaxConcurrentEpisodes = 100
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = min(1024, opts.MaxConcurrentEpisodes)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 60 * time.Second
	}
	e := &ExternalEnv{
		obsSpace: opts.ObservationSpace, actSpace: opts.ActionSpace,
		maxEpisodes: opts.MaxConcurrentEpisodes, timeout: opts.Timeout,
		maxBatch: opts.MaxBatch, maxWait: opts.MaxWait,
		active: map[string]*episode{}, done: map[string]struct{}{},
		slots: make([]*episode, opts.MaxConcurrentEpisodes),
		free:  make([]int, 0, opts.MaxConcurrentEpisodes),
		wake:  make(chan struct{}, 1), stopCh: make(chan struct{}),
	}
	for i := opts.MaxConcurrentEpisodes - 1; i >= 0; i-- {
		e.free = append(e.free, i) // slot 0 is handed out first
	}
	return e, nil
}

// NumEnvs is the number of sub-environments of the BaseEnv (MaxConcurrentEpisodes), for the
// sampler's configuration.
func (e *ExternalEnv) NumEnvs() int { return e.maxEpisodes }

// ObservationSpace returns the observation space.
func (e *ExternalEnv) ObservationSpace() spaces.Space { return e.obsSpace }

// ActionSpace returns the action space.
func (e *ExternalEnv) ActionSpace() spaces.Space { return e.actSpace }

// BaseEnv returns e as an env.BaseEnv (e implements it itself).
func (e *ExternalEnv) BaseEnv() env.BaseEnv { return e }

// Start runs the simulator's loop run(ctx, e) on its own goroutine. ctx is cancelled by Stop.
// When run returns or panics, the next Poll returns a *RunLoopError. Start may be called once.
func (e *ExternalEnv) Start(ctx context.Context, run func(ctx context.Context, e *ExternalEnv) error) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		panic("externalenv: Start called twice")
	}
	e.started = true
	ctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	if e.stopped {
		cancel()
	}
	e.mu.Unlock()
	go func() {
		rerr := &RunLoopError{}
		defer func() {
			if p := recover(); p != nil {
				rerr.Panicked = true
				rerr.Err = fmt.Errorf("%v\n%s", p, debug.Stack())
			}
			e.mu.Lock()
			e.runErr = rerr
			e.mu.Unlock()
			e.signal()
		}()
		rerr.Err = run(ctx, e)
	}()
}

func (e *ExternalEnv) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// lookup finds a running episode; e.mu is held.
func (e *ExternalEnv) lookup(id string) (*episode, error) {
	if e.stopped {
		return nil, ErrStopped
	}
	if ep := e.active[id]; ep != nil {
		return ep, nil
	}
	if _, ok := e.done[id]; ok {
		return nil, fmt.Errorf("%w: %q", ErrEpisodeDone, id)
	}
	return nil, fmt.Errorf("%w: %q", ErrEpisodeNotFound, id)
}

// StartEpisode starts an episode and returns its id: id itself, or a new UUID when id is "".
// With trainingEnabled false the episode runs but leaves no rows in the sample batches.
func (e *ExternalEnv) StartEpisode(id string, trainingEnabled bool) (string, error) {
	if id == "" {
		id = uuid.NewString()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return "", ErrStopped
	}
	if e.active[id] != nil {
		return "", fmt.Errorf("%w: %q", ErrEpisodeExists, id)
	}
	if _, ok := e.done[id]; ok {
		return "", fmt.Errorf("%w: %q", ErrEpisodeDone, id)
	}
	if len(e.active) >= e.maxEpisodes {
		return "", fmt.Errorf("%w: %d running (MaxConcurrentEpisodes)", ErrTooManyEpisodes, len(e.active))
	}
	e.active[id] = &episode{id: id, training: trainingEnabled, slot: -1, reply: make(chan []float32, 1)}
	return id, nil
}

func (e *ExternalEnv) checkObs(id string, obs []float32) error {
	if !e.obsSpace.Contains(obs) {
		return fmt.Errorf("%w: episode %q: %v (want %d values in %s)", ErrBadObservation, id, obs, e.obsSpace.Size(), e.obsSpace.Type())
	}
	return nil
}

// newEvent queues an observation of ep with the reward logged since the last one; e.mu is
// held.
func (e *ExternalEnv) newEvent(ep *episode, obs []float32) *event {
	var ev *event
	if n := len(e.pool); n > 0 {
		ev = e.pool[n-1]
		e.pool = e.pool[:n-1]
	} else {
		ev = &event{}
	}
	e.seq++
	ev.seq, ev.ep = e.seq, ep
	ev.obs = append(ev.obs[:0], obs...)
	ev.reward, ev.info = ep.reward, ep.info
	ep.reward, ep.info = 0, nil
	if ep.tail == nil {
		ep.head = ev
	} else {
		ep.tail.next = ev
	}
	ep.tail = ev
	if !ep.queued && ep.inFlight == nil {
		ep.queued = true
		e.ready = append(e.ready, ep)
		e.signal()
	}
	return ev
}

func (e *ExternalEnv) recycle(ev *event) {
	obs := ev.obs
	*ev = event{obs: obs[:0]}
	e.pool = append(e.pool, ev)
}

// GetAction reports obs for episode id and blocks until the sampler answers with the action
// to take. It returns early with ctx's error, with ErrTimeout after Options.Timeout, and with
// ErrStopped after Stop. The returned slice belongs to the caller.
//
// When it gives up after the observation was reported, the sampler's answer is dropped: the
// episode goes on, and its next observation completes the transition with that action.
func (e *ExternalEnv) GetAction(ctx context.Context, id string, obs []float32) ([]float32, error) {
	if err := e.checkObs(id, obs); err != nil {
		return nil, err
	}
	e.mu.Lock()
	ep, err := e.lookup(id)
	if err == nil && ep.waiting {
		err = fmt.Errorf("%w: %q", ErrEpisodeBusy, id)
	}
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	ev := e.newEvent(ep, obs)
	ev.waiter = true
	ep.waiting = true
	seq := ev.seq
	e.mu.Unlock()

	var timeout <-chan time.Time
	if e.timeout > 0 {
		t := time.NewTimer(e.timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case a := <-ep.reply:
		e.mu.Lock()
		ep.waiting = false
		e.mu.Unlock()
		return a, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = fmt.Errorf("%w after %v: episode %q", ErrTimeout, e.timeout, id)
	case <-e.stopCh:
		err = ErrStopped
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ep.waiting = false
	if ep.inFlight != nil && ep.inFlight.seq == seq {
		ep.inFlight.ignored = true
		return nil, err
	}
	var prev *event
	for q := ep.head; q != nil; prev, q = q, q.next {
		if q.seq != seq {
			continue
		}
		// Not reported yet: take it back, with its reward.
		if prev == nil {
			ep.head = q.next
		} else {
			prev.next = q.next
		}
		if ep.tail == q {
			ep.tail = prev
		}
		ep.reward += q.reward
		if ep.info == nil {
			ep.info = q.info
		}
		e.recycle(q)
		return nil, err
	}
	// Answered meanwhile: drop the answer.
	select {
	case <-ep.reply:
	default:
	}
	return nil, err
}

// LogAction reports obs for episode id with the action the simulator took itself (RLlib's
// log_action): the sampler records action, not its own, for this step. It does not wait.
func (e *ExternalEnv) LogAction(id string, obs, action []float32) error {
	if err := e.checkObs(id, obs); err != nil {
		return err
	}
	if !e.actSpace.Contains(action) {
		return fmt.Errorf("%w: episode %q: %v (want %d values in %s)", ErrBadAction, id, action, e.actSpace.Size(), e.actSpace.Type())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, err := e.lookup(id)
	if err != nil {
		return err
	}
	ev := e.newEvent(ep, obs)
	ev.logged = append([]float32(nil), action...) // handed to the episode when reported
	return nil
}

// LogReturns adds reward to the reward of episode id's current step; info, when not nil,
// replaces the step's info. Both are reported with the episode's next observation.
func (e *ExternalEnv) LogReturns(id string, reward float64, info env.Info) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, err := e.lookup(id)
	if err != nil {
		return err
	}
	ep.reward += reward
	if info != nil {
		ep.info = info
	}
	return nil
}

// EndEpisode reports the final observation of episode id (terminated) and completes it: the
// id cannot be used again.
func (e *ExternalEnv) EndEpisode(id string, obs []float32) error {
	if err := e.checkObs(id, obs); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ep, err := e.lookup(id)
	if err != nil {
		return err
	}
	ev := e.newEvent(ep, obs)
	ev.terminal = true
	delete(e.active, id)
	if len(e.doneRing) < completedMemory {
		e.doneRing = append(e.doneRing, id)
	} else {
		delete(e.done, e.doneRing[e.doneNext])
		e.doneRing[e.doneNext] = id
		e.doneNext = (e.doneNext + 1) % completedMemory
	}
	e.done[id] = struct{}{}
	return nil
}

// Poll appends the pending observations (at most MaxBatch), blocking until there is at least
// one, the run loop ended (*RunLoopError, once the observations it reported have been
// polled) or Stop was called (ErrStopped). See the package
// documentation for what the observations carry.
func (e *ExternalEnv) Poll(dst *env.Batch) error {
	e.mu.Lock()
	for _, ev := range e.reported {
		e.recycle(ev)
	}
	clear(e.reported)
	e.reported = e.reported[:0]
	e.free = append(e.free, e.freeLater...)
	e.freeLater = e.freeLater[:0]
	n := 0
	var deadline <-chan time.Time
	for {
		if e.stopped {
			e.mu.Unlock()
			return ErrStopped
		}
		n += e.drain(dst, e.maxBatch-n)
		if n >= e.maxBatch || (n > 0 && (e.maxWait <= 0 || e.runErr != nil)) {
			break
		}
		if e.runErr != nil { // after the observations it reported before it ended
			err := e.runErr
			e.mu.Unlock()
			return err
		}
		if n > 0 && deadline == nil {
			t := time.NewTimer(e.maxWait)
			defer t.Stop()
			deadline = t.C
		}
		e.mu.Unlock()
		select {
		case <-e.wake:
		case <-e.stopCh:
		case <-deadline:
			e.mu.Lock()
			n += e.drain(dst, e.maxBatch-n)
			e.mu.Unlock()
			return nil
		}
		e.mu.Lock()
	}
	e.mu.Unlock()
	return nil
}

// drain reports up to max ready observations; e.mu is held.
func (e *ExternalEnv) drain(dst *env.Batch, max int) int {
	n, keep := 0, e.ready[:0]
	for i, ep := range e.ready {
		if n == max {
			keep = append(keep, e.ready[i:]...)
			break
		}
		if ep.slot < 0 {
			if len(e.free) == 0 { // a slot frees up when an end is reported: next Poll
				keep = append(keep, ep)
				continue
			}
			ep.slot = e.free[len(e.free)-1]
			e.free = e.free[:len(e.free)-1]
			e.slots[ep.slot] = ep
		}
		ev := ep.head
		ep.head = ev.next
		if ep.head == nil {
			ep.tail = nil
		}
		ev.next = nil
		ep.queued = false
		first := !ep.started
		ep.started = true
		dst.Agents = append(dst.Agents, env.AgentObs{Env: ep.slot, Agent: env.DefaultAgentID, Obs: ev.obs,
			Reward: ev.reward, Terminated: ev.terminal, Info: ev.info, OffPolicyAction: ep.logged})
		ep.logged, ev.logged = ev.logged, nil
		if first || ev.terminal {
			dst.Envs = append(dst.Envs, env.EnvStatus{Env: ep.slot, Reset: first,
				TrainingDisabled: first && !ep.training, Terminated: ev.terminal})
		}
		e.reported = append(e.reported, ev)
		if ev.terminal {
			e.slots[ep.slot] = nil
			e.freeLater = append(e.freeLater, ep.slot)
		} else {
			ep.inFlight = ev
		}
		n++
	}
	clear(e.ready[len(keep):])
	e.ready = keep
	return n
}

// SendActions answers the observations of the last Poll: each action goes to its waiting
// GetAction caller (copied); the actions for LogAction observations are dropped.
func (e *ExternalEnv) SendActions(actions []env.Action) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return ErrStopped
	}
	for _, a := range actions {
		var ep *episode
		if a.Env >= 0 && a.Env < len(e.slots) {
			ep = e.slots[a.Env]
		}
		if ep == nil || ep.inFlight == nil || a.Agent != env.DefaultAgentID {
			return fmt.Errorf("%w: no observation of agent %q of sub-environment %d waits for an action", env.ErrBadActions, a.Agent, a.Env)
		}
		ev := ep.inFlight
		ep.inFlight = nil
		if ev.waiter && !ev.ignored {
			ep.reply <- append([]float32(nil), a.Action...)
		}
		if ep.head != nil && !ep.queued {
			ep.queued = true
			e.ready = append(e.ready, ep)
			e.signal()
		}
	}
	return nil
}

// TryReset is a no-op returning async=true: the episode that runs next in sub-environment
// id starts with the simulator's next StartEpisode, reported by a later Poll.
func (e *ExternalEnv) TryReset(id env.EnvID, _ env.Seed, _ *env.Batch) (bool, error) {
	if id < 0 || id >= e.maxEpisodes {
		return false, fmt.Errorf("externalenv: TryReset of sub-environment %d, want 0..%d", id, e.maxEpisodes-1)
	}
	return true, nil
}

// Stop releases everything: blocked Poll and GetAction calls return ErrStopped, as does every
// later call, and the run loop's context is cancelled. It does not wait for the run loop.
func (e *ExternalEnv) Stop() error {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.stopped = true
		cancel := e.cancel
		e.mu.Unlock()
		close(e.stopCh)
		if cancel != nil {
			cancel()
		}
	})
	return nil
}
