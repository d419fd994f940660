package envrunner

import (
	"github.com/onnxrl/sampler/env"
)

// Episode is one episode of one sub-environment, as callbacks see it (RLlib's Episode).
// Episodes are reused by the runner once they end: a callback must not keep the pointer
// after OnEpisodeEnd (copy what it needs).
type Episode struct {
	// Length is the number of environment steps so far.
	Length int
	// TotalReward is the sum of the rewards of all agents so far.
	TotalReward float64

	// What every step touches, in the same cache line as Length and TotalReward.
	agents    []*agentRec // in order of first appearance (agent_index)
	ended     bool
	endCalled bool // OnEpisodeEnd ran and the metrics are recorded
	extra     bool // started beyond Config.MaxEpisodes: not recorded, not counted
	faulty    bool
	stepped   bool // an agent of the episode completed a transition in the current step

	// ID is unique within a run (drawn from the runner's seed, its index and a counter).
	ID int64
	// EnvID is the sub-environment the episode runs in.
	EnvID env.EnvID
	// Worker is the index of the runner.
	Worker int
	// CustomMetrics are reported with the episode's RolloutMetrics (RLlib's custom_metrics).
	// The runner makes the map; callbacks write into it.
	CustomMetrics map[string]float64
	// UserData is free for callbacks (RLlib's user_data): a map the runner makes, cleared when
	// the episode is reused.
	UserData map[string]any
	// TrainingEnabled is false for an episode whose data is left out of the sample batches
	// (an ExternalEnv episode started with training disabled).
	TrainingEnabled bool
}

// AgentReward is the total reward of one agent of an episode.
type AgentReward struct {
	Agent  env.AgentID
	Policy PolicyID
	Reward float64
}

// NumAgents returns the number of agents that took part in the episode so far.
func (e *Episode) NumAgents() int { return len(e.agents) }

// AgentRewards appends the total reward of each agent so far to dst and returns it.
func (e *Episode) AgentRewards(dst []AgentReward) []AgentReward {
	for _, a := range e.agents {
		dst = append(dst, AgentReward{Agent: a.id, Policy: a.pol.id, Reward: a.reward})
	}
	return dst
}

// PolicyFor returns the policy the agent is mapped to in this episode ("" for an agent that
// has not appeared).
func (e *Episode) PolicyFor(agent env.AgentID) PolicyID {
	if a := e.agent(agent); a != nil {
		return a.pol.id
	}
	return ""
}

// LastObservation returns the agent's last raw observation, valid during the callback that
// asks (nil for an agent that has not appeared).
func (e *Episode) LastObservation(agent env.AgentID) []float32 {
	a := e.agent(agent)
	switch {
	case a == nil:
		return nil
	case a.inCol:
		return a.col.ObsRow(int(a.envID))
	}
	return a.lastObs
}

// LastInfo returns the info the environment reported with the agent's last observation.
func (e *Episode) LastInfo(agent env.AgentID) env.Info {
	a := e.agent(agent)
	switch {
	case a == nil:
		return nil
	case a.inCol:
		return a.col.Results[a.envID].Info
	}
	return a.lastInfo
}

// LastReward returns the reward reported with the agent's last observation.
func (e *Episode) LastReward(agent env.AgentID) float64 {
	a := e.agent(agent)
	switch {
	case a == nil:
		return 0
	case a.inCol:
		return a.col.Results[a.envID].Reward
	}
	return a.lastReward
}

// LastAction returns the agent's last action as sent to the environment (nil before its
// first action), valid during the callback that asks.
func (e *Episode) LastAction(agent env.AgentID) []float32 {
	a := e.agent(agent)
	switch {
	case a == nil:
		return nil
	case a.inCol:
		if !a.pending && a.steps == 0 {
			return nil
		}
		return a.col.ActionRow(int(a.envID))
	}
	return a.lastAct
}

func (e *Episode) agent(id env.AgentID) *agentRec {
	for _, a := range e.agents {
		if a.id == id {
			return a
		}
	}
	return nil
}

// RolloutMetrics are the metrics of one finished episode (RLlib's RolloutMetrics).
type RolloutMetrics struct {
	Worker        int
	EpisodeID     int64
	EpisodeLength int
	EpisodeReturn float64
	// AgentReturns is nil for an episode with one agent.
	AgentReturns []AgentReward
	// CustomMetrics is nil when the callbacks set none.
	CustomMetrics map[string]float64
}

// agentRec is one agent of one episode: where it stands, and its trajectory since the last
// cut (RLlib's AgentCollector). Observation rows o_0..o_k are kept (k+1 of them); the
// transitions 0..n-1 are complete (reward and new observation known); a pending action at
// index n waits for its reward. Per-transition columns hold n (or n+1 with a pending action)
// entries.
type agentRec struct {
	// The fields every step touches fill the first cache line (the struct's size is a
	// multiple of 64 bytes, so each record starts on a line; a test checks it).
	ep      *Episode
	pol     *policy
	reward  float64 // total
	steps   int     // transitions completed in the episode
	slot    int
	envID   int32
	done    bool // terminated or truncated: no more actions
	pending bool // took an action and waits for the next observation
	collect bool // the record's data goes to the sample batches
	listed  bool // in the runner's list of records with data
	// inCol: the last observation, info and reward are row envID of col (and so is the
	// last action, once there is one), not lastObs, lastInfo, lastReward and lastAct.
	inCol bool

	col        *env.Columns // the runner's columns, for a record of a columnar runner
	lastObs    []float32
	lastInfo   env.Info
	lastReward float64
	lastAct    []float32

	id    env.AgentID
	index int32 // agent_index
	t0    int32
	epsID int64

	final   []float32 // a copy of the final observation (storage kept across reuse)
	lastBuf []float32 // a copy of the last action (storage kept across reuse)

	// Trajectory since the last cut.
	obs      []float32 // rows o_0..o_k (ObsWidth each)
	vf       []float32 // value of each obs row (when the model has a value output)
	actions  []float32
	logp     []float32
	dist     []float32
	rewards  []float32
	terms    []bool
	truncs   []bool
	stateIn  [][]float32
	stateOut [][]float32
	n        int // complete transitions

	_ [56]byte // to a multiple of 64 bytes
}

// rows returns the number of observation rows kept.
func (a *agentRec) rows() int {
	if a.pol.obsW == 0 {
		return 0
	}
	return len(a.obs) / a.pol.obsW
}

// clearTrajectory drops all kept data.
func (a *agentRec) clearTrajectory() {
	a.obs, a.vf, a.actions, a.logp, a.dist = a.obs[:0], a.vf[:0], a.actions[:0], a.logp[:0], a.dist[:0]
	a.rewards, a.terms, a.truncs = a.rewards[:0], a.terms[:0], a.truncs[:0]
	for k := range a.stateIn {
		a.stateIn[k] = a.stateIn[k][:0]
		a.stateOut[k] = a.stateOut[k][:0]
	}
	a.n = 0
}

// keepLast drops the complete transitions 0..n-1, keeping the last observation row (and its
// pending action), which becomes index 0.
func (a *agentRec) keepLast() {
	p := a.pol
	n := a.n
	w := p.obsW
	k := a.rows() - 1
	if k < 0 {
		return
	}
	a.obs = append(a.obs[:0], a.obs[k*w:(k+1)*w]...)
	if len(a.vf) > k {
		a.vf = append(a.vf[:0], a.vf[k])
	}
	shift := func(col []float32, width int) []float32 {
		m := len(col)/max(width, 1) - n
		if width == 0 || m <= 0 {
			return col[:0]
		}
		copy(col, col[n*width:])
		return col[:m*width]
	}
	a.actions = shift(a.actions, p.actW)
	a.logp = shift(a.logp, 1)
	a.dist = shift(a.dist, p.distW)
	for s := range a.stateIn {
		a.stateIn[s] = shift(a.stateIn[s], p.stateW[s])
		a.stateOut[s] = shift(a.stateOut[s], p.stateW[s])
	}
	a.rewards, a.terms, a.truncs = a.rewards[:0], a.terms[:0], a.truncs[:0]
	a.t0 += int32(n)
	a.n = 0
}
