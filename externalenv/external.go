package externalenv

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// Options configures an ExternalEnv.
type Options struct {
	// ObservationSpace and ActionSpace are the spaces of the (single) agent; required.
	ObservationSpace, ActionSpace spaces.Space
	// MaxConcurrentEpisodes bounds the episodes running at once and is the number of
	// sub-environments of the BaseEnv. 0 means 100.
	MaxConcurrentEpisodes int
	// Timeout is how long GetAction waits for the sampler before ErrTimeout (checked every
	// tenth of it: see the package documentation). 0 means 60s; negative means no timeout
	// (the context still applies).
	Timeout time.Duration
	// MaxBatch is the most observations one Poll reports. 0 means
	// min(1024, MaxConcurrentEpisodes).
	MaxBatch int
	// MaxWait enables dynamic batching: once one observation is pending, Poll waits up to
	// MaxWait for more, until MaxBatch. 0 means: report what is pending.
	MaxWait time.Duration
	// IdlePoll, when positive, makes Poll return with nothing once it has waited that long
	// without an observation, so that the sampler gets to do its periodic work (a flush of
	// what it collected) while no simulator calls. 0: Poll waits for an observation.
	IdlePoll time.Duration
	// MaxPendingLogs bounds the logged observations (LogAction) of an episode that wait
	// for the sampler's answer: a LogAction that would exceed it blocks until the sampler
	// answers an earlier one, or gives up with ErrTimeout after Timeout (then nothing of it
	// is recorded: log it again). 0 means 1: at most one logged observation per episode
	// waits for the sampler (see Back-pressure in the package documentation).
	MaxPendingLogs int
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
	base
}

// New returns an ExternalEnv with opts (see Options for the defaults).
func New(opts Options) (*ExternalEnv, error) {
	c, err := newCore(coreOptions{obsSpace: opts.ObservationSpace, actSpace: opts.ActionSpace,
		maxEpisodes: opts.MaxConcurrentEpisodes, timeout: opts.Timeout, maxBatch: opts.MaxBatch, maxWait: opts.MaxWait, idlePoll: opts.IdlePoll,
		maxPendingLogs: opts.MaxPendingLogs, defaultBatch: func(maxEpisodes int) int { return min(1024, maxEpisodes) }})
	if err != nil {
		return nil, err
	}
	return &ExternalEnv{base{c}}, nil
}

// BaseEnv returns e as an env.BaseEnv (e implements it itself).
func (e *ExternalEnv) BaseEnv() env.BaseEnv { return e }

// Start runs the simulator's loop run(ctx, e) on its own goroutine. ctx is cancelled by Stop.
// When run returns or panics, the next Poll returns a *RunLoopError. Start may be called once.
func (e *ExternalEnv) Start(ctx context.Context, run func(ctx context.Context, e *ExternalEnv) error) {
	e.c.start(ctx, func(ctx context.Context) error { return run(ctx, e) })
}

// GetAction reports obs for episode id and blocks until the sampler answers with the action
// to take. It returns early with ctx's error, with ErrTimeout after Options.Timeout, and with
// ErrStopped after Stop.
//
// The returned slice is the episode's own buffer: it stays valid until the episode's next
// GetAction, which reuses it (copy it to keep it longer). In steady state GetAction
// allocates nothing.
//
// When it gives up after the observation was reported, the sampler's answer is dropped: the
// episode goes on, and its next observation completes the transition with that action.
// When it gives up before, the observation is taken back (its reward stays with the episode).
func (e *ExternalEnv) GetAction(ctx context.Context, id string, obs []float32) ([]float32, error) {
	c := e.c
	if err := c.checkObs(id, "", obs); err != nil {
		return nil, err
	}
	ep, err := c.lock(id)
	if err != nil {
		return nil, err
	}
	if !ep.waiting.CompareAndSwap(false, true) {
		ep.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrEpisodeBusy, id)
	}
	ev := ep.newEvent()
	c.add(ep, ev, 0, obs, nil, notDone)
	ev.waiter = true
	seq := ev.seq
	push := c.queue(ep, ev)
	ep.mu.Unlock()
	if push {
		c.ready.push(ep)
	}
	if err := c.wait(ctx, ep, seq); err != nil {
		return nil, err
	}
	ep.waiting.Store(false)
	return ep.answer, nil
}

// GetActions is GetAction for the episodes ids at once, from one goroutine (a vectorized
// simulator): obs holds len(ids) observations one after the other, and the actions are
// appended to dst in the same order. All of them are reported before it waits for the first,
// so one Poll can take them together.
//
// Every observation is checked before anything is reported. When episode i then fails (an
// unknown, ended or busy id, an id given twice), the episodes before it are still waited
// for and their actions appended, and the error names episode i; the later ones are not
// reported. On a wait that gives up (ctx, Options.Timeout, Stop) the episodes not answered
// yet give up too, as in GetAction, and dst holds the actions received before that one.
//
// The sampler writes the actions into dst as they come and wakes the caller once, after the
// last (see Submit, its form for callers that wait outside Go).
func (e *ExternalEnv) GetActions(ctx context.Context, ids []string, obs, dst []float32) ([]float32, error) {
	c := e.c
	w := getActionsPool.Get().(*getActionsCall)
	defer getActionsPool.Put(w)
	n0 := len(dst)
	dst = slices.Grow(dst, len(ids)*c.actSize)[:n0+len(ids)*c.actSize]
	c.submit(&w.t, ids, obs, dst[n0:], w.wake)
	done := ctx.Done()
	if h := c.runDone.Load(); done != nil && h != nil && h.done == done {
		done = nil // Stop ends the wait
	}
	select {
	case <-w.wake:
	case <-done:
		w.t.Cancel(ctx.Err())
		<-w.wake
	}
	n, err := w.t.Result()
	return dst[:n0+n*c.actSize], err
}

// getActionsCall is the ticket and wake-up of a GetActions call, reused.
type getActionsCall struct {
	t    Ticket
	wake chanWaker
}

var getActionsPool = sync.Pool{New: func() any { return &getActionsCall{wake: make(chanWaker, 1)} }}

// LogAction reports obs for episode id with the action the simulator took itself (RLlib's
// log_action): the sampler records action, not its own, as the action of this observation.
// It returns once obs is queued; when Options.MaxPendingLogs logged observations of the
// episode wait for the sampler already, it first waits for room (back-pressure), and gives
// up with ErrTimeout after Options.Timeout or ErrStopped after Stop, recording nothing.
func (e *ExternalEnv) LogAction(id string, obs, action []float32) error {
	c := e.c
	if err := c.checkObs(id, "", obs); err != nil {
		return err
	}
	if err := c.checkAction(id, "", action); err != nil {
		return err
	}
	ep, err := c.lock(id)
	if err != nil {
		return err
	}
	if err := c.waitLogRoom(ep); err != nil {
		ep.mu.Unlock()
		return err
	}
	ev := ep.newEvent()
	c.add(ep, ev, 0, obs, action, notDone)
	ev.logAct = true
	ep.logs.open++
	push := c.queue(ep, ev)
	ep.mu.Unlock()
	if push {
		c.ready.push(ep)
	}
	return nil
}

// LogReturns adds reward to the reward of episode id's current step, reported with the
// episode's next observation; info, when not nil, replaces the episode's info, which is
// reported with every later observation until replaced again (RLlib's cur_info). A reward,
// or a step's sum of rewards, that float32 cannot hold is refused with a *RewardError
// (ErrBadReward) and nothing is logged.
func (e *ExternalEnv) LogReturns(id string, reward float64, info env.Info) error {
	ep, err := e.c.lock(id)
	if err != nil {
		return err
	}
	ag := &ep.agents[0]
	sum, err := ep.addReward(0, reward, id, "")
	if err != nil {
		ep.mu.Unlock()
		return err
	}
	ag.reward = sum
	if info != nil {
		ag.info = info
	}
	ep.mu.Unlock()
	return nil
}

// EndEpisode reports the final observation of episode id (terminated: the episode reached a
// terminal state) and completes it: the id cannot be used again.
func (e *ExternalEnv) EndEpisode(id string, obs []float32) error {
	return e.end(id, obs, terminated)
}

// EndEpisodeTruncated is EndEpisode for an episode cut short (a time limit, the simulator
// giving up): the final observation is reported Truncated instead of Terminated, so the
// sampler bootstraps the return from its value rather than from zero.
func (e *ExternalEnv) EndEpisodeTruncated(id string, obs []float32) error {
	return e.end(id, obs, truncated)
}

func (e *ExternalEnv) end(id string, obs []float32, kind endKind) error {
	c := e.c
	if err := c.checkObs(id, "", obs); err != nil {
		return err
	}
	ep, err := c.lock(id)
	if err != nil {
		return err
	}
	ev := ep.newEvent()
	c.add(ep, ev, 0, obs, nil, kind)
	push := c.end(ep, ev, kind)
	ep.mu.Unlock()
	c.forget(ep)
	if push {
		c.ready.push(ep)
	}
	return nil
}
