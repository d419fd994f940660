package externalenv

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// MultiAgentOptions configures an ExternalMultiAgentEnv.
type MultiAgentOptions struct {
	// ObservationSpace and ActionSpace are the per-agent spaces: every agent of every
	// episode shares them; required.
	ObservationSpace, ActionSpace spaces.Space
	// MaxConcurrentEpisodes bounds the episodes running at once and is the number of
	// sub-environments of the BaseEnv. 0 means 100.
	MaxConcurrentEpisodes int
	// Timeout is how long GetAction waits for the sampler before ErrTimeout (checked every
	// tenth of it: see the package documentation). 0 means 60s; negative means no timeout
	// (the context still applies).
	Timeout time.Duration
	// MaxBatch is the most agent observations one Poll reports (the observations of one call
	// are never split, so a call with more agents goes alone). 0 means 1024.
	MaxBatch int
	// MaxWait enables dynamic batching: once one observation is pending, Poll waits up to
	// MaxWait for more, until MaxBatch. 0 means: report what is pending.
	MaxWait time.Duration
	// IdlePoll: see Options.IdlePoll.
	IdlePoll time.Duration
	// MaxPendingLogs: see Options.MaxPendingLogs (a LogAction counts once, whatever its
	// number of agents).
	MaxPendingLogs int
	// MaxAgents bounds the agents of one episode, over its whole run (agents join during an
	// episode): a call that would add more fails with ErrTooManyAgents, recording nothing.
	// 0 means no bound.
	MaxAgents int
}

// ExternalMultiAgentEnv is RLlib's ExternalMultiAgentEnv: ExternalEnv for a simulator whose
// episodes have several agents, all of them sharing one observation space and one action
// space. Observations, actions, rewards and dones are maps keyed by agent id; agents may
// appear during an episode and leave it before its end.
//
// The simulator-side methods are safe for concurrent use; the BaseEnv methods are for one
// goroutine (the sampler's). See the package documentation for what Poll reports.
type ExternalMultiAgentEnv struct {
	base
}

// NewMultiAgent returns an ExternalMultiAgentEnv with opts (see MultiAgentOptions for the
// defaults).
func NewMultiAgent(opts MultiAgentOptions) (*ExternalMultiAgentEnv, error) {
	c, err := newCore(coreOptions{obsSpace: opts.ObservationSpace, actSpace: opts.ActionSpace,
		maxEpisodes: opts.MaxConcurrentEpisodes, timeout: opts.Timeout, maxBatch: opts.MaxBatch, maxWait: opts.MaxWait, idlePoll: opts.IdlePoll,
		maxPendingLogs: opts.MaxPendingLogs, maxAgents: opts.MaxAgents, multi: true, defaultBatch: func(int) int { return 1024 }})
	if err != nil {
		return nil, err
	}
	return &ExternalMultiAgentEnv{base{c}}, nil
}

// BaseEnv returns e as an env.BaseEnv (e implements it itself).
func (e *ExternalMultiAgentEnv) BaseEnv() env.BaseEnv { return e }

// Start runs the simulator's loop run(ctx, e) on its own goroutine. ctx is cancelled by Stop.
// When run returns or panics, the next Poll returns a *RunLoopError. Start may be called once.
func (e *ExternalMultiAgentEnv) Start(ctx context.Context, run func(ctx context.Context, e *ExternalMultiAgentEnv) error) {
	e.c.start(ctx, func(ctx context.Context) error { return run(ctx, e) })
}

// checkObs checks a map of observations outside any lock.
func (c *core) checkObsMap(id string, obs map[env.AgentID][]float32) error {
	if len(obs) == 0 {
		return fmt.Errorf("%w: episode %q: no agent observes", ErrBadObservation, id)
	}
	for agent, o := range obs {
		if agent == "" {
			return fmt.Errorf("%w: episode %q: empty agent id", ErrBadObservation, id)
		}
		if err := c.checkObs(id, agent, o); err != nil {
			return err
		}
	}
	return nil
}

// multiEvent builds the event of a report with observations obs (and, for LogAction,
// the agents' own actions): the agents in obs, in the order of their ids, with the final
// observation (the last one given) of each agent marked done that is not in obs. With end
// set, it is the episode's last report and every agent that took part ends in it. It fails,
// recording nothing, when an agent of obs is done already or the actions do not match obs.
// ep.mu is held.
func (c *core) multiEvent(ep *episode, obs, actions map[env.AgentID][]float32, end endKind) (*event, error) {
	if err := c.checkMultiReport(ep, obs, actions); err != nil {
		return nil, err
	}
	refs := ep.reportRefs(obs, end)
	ev := ep.newEvent()
	for _, r := range refs {
		i := ep.agent(r.id, true)
		done := notDone
		switch {
		case ep.agents[i].done:
			done = terminated
		case end != notDone:
			done = end
		}
		var logged []float32
		if actions != nil && done == notDone {
			logged = actions[r.id]
		}
		c.add(ep, ev, i, r.obs, logged, done)
	}
	clear(refs)
	ep.scratch = refs[:0]
	return ev, nil
}

// checkMultiReport refuses a report whose observations name an agent that is done already
// or would take the episode past MaxAgents, and, for LogAction (actions not nil), actions
// that do not match the observations: one for each agent of obs that is not done, and no
// other. ep.mu is held.
func (c *core) checkMultiReport(ep *episode, obs, actions map[env.AgentID][]float32) error {
	added := 0
	for agent := range obs {
		i := ep.agent(agent, false)
		if i >= 0 && ep.agents[i].gone {
			return fmt.Errorf("%w: episode %q: agent %q is done", ErrBadObservation, ep.id, agent)
		}
		if i < 0 {
			added++
		}
	}
	if err := c.checkAgentCount(ep, added); err != nil {
		return err
	}
	if actions == nil {
		return nil
	}
	for agent := range actions {
		if _, ok := obs[agent]; !ok {
			return fmt.Errorf("%w: episode %q: action for agent %q, which has no observation", ErrBadAction, ep.id, agent)
		}
	}
	for agent := range obs {
		if i := ep.agent(agent, false); i >= 0 && ep.agents[i].done {
			continue
		}
		if _, ok := actions[agent]; !ok {
			return fmt.Errorf("%w: episode %q: no action for agent %q", ErrBadAction, ep.id, agent)
		}
	}
	return nil
}

// reportRefs lists, sorted by id in ep.scratch, the agents of a report: those of obs, and
// every agent not in obs that must end in it (one marked done, or any with end set) with
// its final observation; an agent that never observed is marked gone instead. ep.mu is
// held.
func (ep *episode) reportRefs(obs map[env.AgentID][]float32, end endKind) []obsRef {
	refs := ep.scratch[:0]
	for agent, o := range obs {
		refs = append(refs, obsRef{id: agent, obs: o})
	}
	for i := range ep.agents {
		ag := &ep.agents[i]
		if ag.gone || (!ag.done && end == notDone) {
			continue
		}
		if _, ok := obs[ag.id]; ok {
			continue
		}
		if !ag.seen { // it never observed: nothing to end
			ag.gone = true
			continue
		}
		refs = append(refs, obsRef{id: ag.id})
	}
	slices.SortFunc(refs, func(a, b obsRef) int { return strings.Compare(a.id, b.id) })
	return refs
}

// checkAgentCount refuses added new agents beyond MaxAgents; ep.mu is held.
func (c *core) checkAgentCount(ep *episode, added int) error {
	if n := len(ep.agents) + added; n > c.maxAgents {
		return fmt.Errorf("%w: episode %q would have %d agents, at most %d allowed", ErrTooManyAgents, ep.id, n, c.maxAgents)
	}
	return nil
}

// GetAction reports the observations of the agents that must act and blocks until the
// sampler answers with their actions; agents marked done (LogReturns) report their final
// observation instead and get no action. It returns early with ctx's error, with ErrTimeout
// after Options.Timeout, and with ErrStopped after Stop. When no agent of obs acts, it
// returns an empty map at once.
//
// The returned map and its slices are the episode's own: they stay valid until the
// episode's next GetAction, which reuses them (copy them to keep them longer). In steady
// state GetAction allocates nothing.
//
// When it gives up after the observations were reported, the sampler's answers are
// dropped: the episode goes on, and the agents' next observations complete the transitions
// with those actions. When it gives up before, the observations are taken back (their
// rewards stay with the agents).
func (e *ExternalMultiAgentEnv) GetAction(ctx context.Context, id string, obs map[env.AgentID][]float32) (map[env.AgentID][]float32, error) {
	c := e.c
	if err := c.checkObsMap(id, obs); err != nil {
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
	ev, err := c.multiEvent(ep, obs, nil, notDone)
	if err != nil {
		ep.mu.Unlock()
		ep.waiting.Store(false)
		return nil, err
	}
	if ep.actions == nil {
		ep.actions = make(map[env.AgentID][]float32, len(obs))
	}
	clear(ep.actions)
	ep.ids = ep.ids[:0]
	for k := range ev.ents {
		if ev.ents[k].open {
			ep.ids = append(ep.ids, ev.ents[k].id)
		}
	}
	ep.answer = ep.answerBuf(ev.open * c.actSize)
	acting := ev.open > 0
	ev.waiter = acting
	seq := ev.seq
	push := c.queue(ep, ev)
	ep.mu.Unlock()
	if push {
		c.ready.push(ep)
	}
	if !acting {
		ep.waiting.Store(false)
		return ep.actions, nil
	}
	if err := c.wait(ctx, ep, seq); err != nil {
		return nil, err
	}
	as := c.actSize
	for k, agent := range ep.ids {
		ep.actions[agent] = ep.answer[k*as : (k+1)*as : (k+1)*as]
	}
	ep.waiting.Store(false)
	return ep.actions, nil
}

// LogAction reports the observations of episode id's agents with the actions they took
// (RLlib's log_action): the sampler records these actions, not its own. actions holds one
// action for each agent of obs that is not done. It waits for room as
// ExternalEnv.LogAction does (Options.MaxPendingLogs).
func (e *ExternalMultiAgentEnv) LogAction(id string, obs, actions map[env.AgentID][]float32) error {
	c := e.c
	if err := c.checkObsMap(id, obs); err != nil {
		return err
	}
	for agent, a := range actions {
		if err := c.checkAction(id, agent, a); err != nil {
			return err
		}
	}
	if actions == nil {
		actions = map[env.AgentID][]float32{}
	}
	ep, err := c.lock(id)
	if err != nil {
		return err
	}
	if err := c.waitLogRoom(ep); err != nil {
		ep.mu.Unlock()
		return err
	}
	ev, err := c.multiEvent(ep, obs, actions, notDone)
	if err != nil {
		ep.mu.Unlock()
		return err
	}
	if ev.open > 0 { // agents that act: the sampler answers it
		ev.logAct = true
		ep.logs.open++
	}
	push := c.queue(ep, ev)
	ep.mu.Unlock()
	if push {
		c.ready.push(ep)
	}
	return nil
}

// LogReturns adds each agent's reward to what it collected since its last observation,
// reported with its next one. dones marks agents done: an agent's next reported observation,
// if any, is its last (Terminated, no action); an agent marked done that is not in the
// episode's next report (GetAction, LogAction or EndEpisode) ends in that report with its
// last observation repeated. info maps agent ids to their info (an env.Info, or a
// map[string]any as JSON decodes it), which replaces the agent's info, reported with each of
// its later observations until replaced again (RLlib's cur_info). Rewards and infos of agents that have ended are dropped.
// A reward, or an agent's sum of rewards for its step, that float32 cannot hold is refused
// with a *RewardError (ErrBadReward) and nothing of the call is logged.
func (e *ExternalMultiAgentEnv) LogReturns(id string, rewards map[env.AgentID]float64, dones map[env.AgentID]bool, info env.Info) error {
	if err := checkReturnsArgs(id, rewards, dones, info); err != nil {
		return err
	}
	ep, err := e.c.lock(id)
	if err != nil {
		return err
	}
	defer ep.mu.Unlock()
	if e.c.maxAgents < len(ep.agents)+len(rewards)+len(dones)+len(info) {
		if err := e.c.checkAgentCount(ep, ep.newAgents(rewards, dones, info)); err != nil {
			return err
		}
	}
	for agent, r := range rewards {
		if _, err := ep.addReward(ep.agent(agent, false), r, id, agent); err != nil {
			return err
		}
	}
	for agent, r := range rewards {
		if ag := &ep.agents[ep.agent(agent, true)]; !ag.gone {
			ag.reward += r
		}
	}
	for agent, d := range dones {
		if d {
			ep.agents[ep.agent(agent, true)].done = true
		}
	}
	for agent, v := range info {
		ag := &ep.agents[ep.agent(agent, true)]
		if ag.gone {
			continue
		}
		switch v := v.(type) {
		case env.Info:
			ag.info = v
		case map[string]any:
			ag.info = v
		}
	}
	return nil
}

// checkReturnsArgs refuses LogReturns' maps when an agent id is empty or an info is of a
// type other than env.Info, map[string]any or nil.
func checkReturnsArgs(id string, rewards map[env.AgentID]float64, dones map[env.AgentID]bool, info env.Info) error {
	for agent := range rewards {
		if agent == "" {
			return fmt.Errorf("%w: episode %q: reward for an empty agent id", ErrBadObservation, id)
		}
	}
	for agent := range dones {
		if agent == "" {
			return fmt.Errorf("%w: episode %q: done for an empty agent id", ErrBadObservation, id)
		}
	}
	for agent, v := range info {
		if agent == "" {
			return fmt.Errorf("%w: episode %q: info for an empty agent id", ErrBadObservation, id)
		}
		switch v.(type) {
		case env.Info, map[string]any, nil:
		default:
			return fmt.Errorf("externalenv: episode %q: info of agent %q is a %T, want env.Info or map[string]any (info maps agent ids to their infos)", id, agent, v)
		}
	}
	return nil
}

// newAgents counts the agents that rewards, dones and info name and the episode has not
// seen, each once.
func (ep *episode) newAgents(rewards map[env.AgentID]float64, dones map[env.AgentID]bool, info env.Info) int {
	added := 0
	for agent := range rewards {
		if ep.agent(agent, false) < 0 {
			added++
		}
	}
	for agent := range dones {
		if _, dup := rewards[agent]; !dup && ep.agent(agent, false) < 0 {
			added++
		}
	}
	for agent := range info {
		_, r := rewards[agent]
		_, d := dones[agent]
		if !r && !d && ep.agent(agent, false) < 0 {
			added++
		}
	}
	return added
}

// EndEpisode reports the final observations of episode id (terminated: the episode reached
// a terminal state) and completes it: the id cannot be used again. Every agent that took
// part and has not ended ends here, those not in obs with their last observation repeated.
func (e *ExternalMultiAgentEnv) EndEpisode(id string, obs map[env.AgentID][]float32) error {
	return e.end(id, obs, terminated)
}

// EndEpisodeTruncated is EndEpisode for an episode cut short (a time limit, the simulator
// giving up): the final observations are reported Truncated instead of Terminated (agents
// marked done stay Terminated), so the sampler bootstraps their returns from their values.
func (e *ExternalMultiAgentEnv) EndEpisodeTruncated(id string, obs map[env.AgentID][]float32) error {
	return e.end(id, obs, truncated)
}

func (e *ExternalMultiAgentEnv) end(id string, obs map[env.AgentID][]float32, kind endKind) error {
	c := e.c
	if err := c.checkObsMap(id, obs); err != nil {
		return err
	}
	ep, err := c.lock(id)
	if err != nil {
		return err
	}
	ev, err := c.multiEvent(ep, obs, nil, kind)
	if err != nil {
		ep.mu.Unlock()
		return err
	}
	push := c.end(ep, ev, kind)
	ep.mu.Unlock()
	c.forget(ep)
	if push {
		c.ready.push(ep)
	}
	return nil
}
