package envrunner

import (
	"slices"

	"github.com/onnxrl/sampler/env"
)

// Episode is one episode of one sub-environment, as callbacks see it (RLlib's Episode).
// Episodes are reused by the runner once they end: a callback must not keep the pointer
// after OnEpisodeEnd (copy what it needs).
//
// The episode's length and total reward are its agents' (Length, TotalReward), not kept
// twice: a step of an episode of one agent (every sub-environment of a VectorEnv) touches its
// agent's record only, not the episode.
type Episode struct {
	// What a step of an episode of several agents touches.
	agents []*agentRec               // in order of first appearance (agent_index)
	index  map[env.AgentID]*agentRec // agents by id, once there are more than indexAgents
	// length: the env steps of an episode of several agents (see Length), counted once per
	// step in which any of them completed a transition (Step, through the touched list).
	length    int
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
	// ExternalID is the id the environment gives the episode (env.EpisodeIDer: an
	// ExternalEnv's episode id), asked once when the episode starts; "" when it has none.
	ExternalID string
	// Err is the error of the episode's sub-environment when the episode is faulty (the
	// sub-environment failed: env.EnvStatus.Err), set before OnEpisodeEnd (RLlib passes the
	// exception to on_episode_end); nil for an episode that ended normally. The Last*
	// methods of a faulty episode may show what the failed step left behind.
	Err error

	common env.Info    // the episode-wide info of the last step (env.EnvStatus.Info)
	proto  envProtocol // the runner's: it knows where the agents' last values are (Last*)
	byAll  bool        // ended by the sub-environment's episode-wide flags ("__all__")
	over   bool        // its transitions of the current step belong to the next fragment (see stepDone)
}

// AgentReward is the total reward of one agent of an episode.
type AgentReward struct {
	Agent  env.AgentID
	Policy PolicyID
	Reward float64
}

// Length returns the number of environment steps so far: for an episode of one agent, the
// transitions it completed; for several, the steps in which any of them completed one.
func (e *Episode) Length() int {
	if len(e.agents) == 1 {
		return e.agents[0].steps
	}
	return e.length
}

// TotalReward returns the sum of the rewards of all agents so far: the sum of their totals
// (AgentRewards), as RLlib's MultiAgentEpisode.get_return.
func (e *Episode) TotalReward() float64 {
	t := 0.0
	for _, a := range e.agents {
		t += a.reward
	}
	return t
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
	if a == nil {
		return nil
	}
	if c := e.proto.inColumns(a); c != nil {
		return c.ObsRow(int(a.envID))
	}
	return a.lastObs
}

// LastInfo returns the info the environment reported with the agent's last observation; for
// env.CommonAgentID, the episode-wide info of the sub-environment's last step (RLlib's
// last_info_for("__common__")), nil when that step had none.
func (e *Episode) LastInfo(agent env.AgentID) env.Info {
	if agent == env.CommonAgentID {
		return e.common
	}
	a := e.agent(agent)
	if a == nil {
		return nil
	}
	if c := e.proto.inColumns(a); c != nil {
		return c.Results[a.envID].Info
	}
	return a.lastInfo
}

// LastReward returns the reward reported with the agent's last observation.
func (e *Episode) LastReward(agent env.AgentID) float64 {
	a := e.agent(agent)
	if a == nil {
		return 0
	}
	if c := e.proto.inColumns(a); c != nil {
		return c.Results[a.envID].Reward
	}
	return a.lastReward
}

// LastAction returns the agent's last action (nil before its first action), valid during the
// callback that asks: the action sent to the environment, or the one the environment took
// itself where it reported one (env.AgentObs.OffPolicyAction), as the batch records it.
func (e *Episode) LastAction(agent env.AgentID) []float32 {
	a := e.agent(agent)
	if a == nil {
		return nil
	}
	if c := e.proto.inColumns(a); c != nil {
		if !a.pending && a.steps == 0 {
			return nil
		}
		return c.ActionRow(int(a.envID))
	}
	return a.lastAct
}

// agent returns the episode's agent id, or nil. Episodes of a few agents search the slice;
// beyond indexAgents agents a map is kept (a multi-agent episode of 100,000 agents made
// each step quadratic: 70 s for one external /action).
func (e *Episode) agent(id env.AgentID) *agentRec {
	if e.index != nil {
		return e.index[id]
	}
	for _, a := range e.agents {
		if a.id == id {
			return a
		}
	}
	return nil
}

// indexAgents is the number of agents above which an episode indexes them by id.
const indexAgents = 8

// addAgent appends a new agent to the episode. A second agent starts the episode's own count
// of env steps (length) from the first agent's: the steps it completed so far, less the one
// of the current step that Step's touched list is still to count (stepped).
func (e *Episode) addAgent(a *agentRec) {
	if len(e.agents) == 1 {
		e.length = e.agents[0].steps
		if e.stepped {
			e.length--
		}
	}
	e.agents = append(e.agents, a)
	switch {
	case e.index != nil:
		e.index[a.id] = a
	case len(e.agents) > indexAgents:
		e.index = make(map[env.AgentID]*agentRec, 2*len(e.agents))
		for _, b := range e.agents {
			e.index[b.id] = b
		}
	}
}

// clearAgents forgets the agents when the episode is reused.
func (e *Episode) clearAgents() {
	clear(e.agents)
	e.agents = e.agents[:0]
	e.index = nil // an episode with many agents is rare: its map is not kept
}

// RolloutMetrics are the metrics of one finished episode (RLlib's RolloutMetrics).
type RolloutMetrics struct {
	Worker        int
	EpisodeID     int64
	EpisodeLength int
	EpisodeReturn float64
	// Faulty marks an episode whose sub-environment failed (RLlib's episode_faulty): its
	// length and return are as far as it got, and summaries leave it out, as RLlib's
	// summarize_episodes does. A reset that failed before an episode could start is reported
	// as a Faulty entry with EpisodeID 0.
	Faulty bool
	// AgentReturns is nil for an episode with one agent.
	AgentReturns []AgentReward
	// CustomMetrics is nil when the callbacks set none.
	CustomMetrics map[string]float64
}

// agentRec is one agent of one episode: where it stands, and its trajectory since the last
// cut (RLlib's AgentCollector). Observation rows o_0..o_k are kept (k+1 of them); the
// transitions 0..n-1 are complete (reward and new observation known); a pending action at
// row n waits for its reward.
//
// The trajectory is row-major (tr): row i holds o_i and what belongs to it, at the offsets
// of the policy's trajLayout: the reward that came with o_i (row i+1 holds transition i's),
// the value of o_i, the action taken at o_i with its log-probability, distribution inputs
// and RNN states (the done flags are the record's, in end: only the last transition can
// have them). A step writes each agent's values into one place
// instead of appending to a column per value (a column per value and agent is thousands of
// write streams over a vector env); emit gathers the rows into the batch's columns. Under
// the columnar protocol at thousands of sub-environments, the last rows of a record on the
// fast path wait in its policy's defRows instead (columnProtocol.pend), one block a step,
// until something reads or writes its trajectory or a cut emits them from there.
type agentRec struct {
	// The fields every step touches fill the first two cache lines (the struct's size is a
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
	// end: the flags (flagTerminated | flagTruncated) of transition n-1, the only one that can
	// end the episode (the trajectory rows have no flags of their own).
	end uint8
	// logged: the environment took its own action at the last observation (offBuf holds it;
	// env.AgentObs.OffPolicyAction), which the row and the agent connectors record instead of
	// the policy's.
	logged bool
	n      int       // complete transitions
	tr     []float32 // trajectory rows since the last cut (trajLayout.stride values each; see pend)

	// The last observation, info, reward and action, unless the protocol keeps them
	// (envProtocol.inColumns).
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
	offBuf  []float32 // a copy of the logged action (see logged)
	// carry: rewards reported without an observation (env.AgentObs with Obs nil), added to
	// the agent's next transition.
	carry float64
	// cutAt, when positive, is 1 + the number of complete transitions that belong to the
	// fragment being built: the later ones came in the step that filled it (stepDone) and go
	// to the next one.
	cutAt int32
	// infos are the infos that came with the new observations of the kept transitions, by
	// transition (RLlib's infos column: the info after stepping), for the transitions that
	// have one: most environments report none, and a transition without one costs nothing.
	infos []transitionInfo

	_ [20]byte // to a multiple of 64 bytes
}

// transitionInfo is the info of a record's transition i (the one reported with o_{i+1}).
type transitionInfo struct {
	i    int32
	info env.Info
}

// Flags of a record's last transition (agentRec.end).
const (
	flagTerminated = 1
	flagTruncated  = 2
)

// trajLayout places a policy's values in a row of an agent's trajectory. The observation
// is at offset 0; an offset is -1 when the policy has no such value.
type trajLayout struct {
	stride     int // values per row
	vf         int // value of the observation (models with a value output)
	act        int // the action taken at the observation (actW values)
	logp, dist int // its log-probability and distribution inputs (models)
	// rew: the reward that came with the row's observation, that of the transition that
	// ends at it (row i+1 holds transition i's reward; row 0's belongs to no transition).
	// It is written with the row, so that completing a transition writes no row.
	rew               int
	stateIn, stateOut []int
	// t: the episode's env step at which the observation came (RLlib's t), as the bits of
	// an int32, for the row protocol only (addT): an agent of a multi-agent episode may skip
	// env steps. Under the columnar protocol every sub-environment's one agent observes at
	// every env step, so row i's t is the record's t0 + i and the row has no t (-1).
	t int
	// outs..outputs are the values after the observation and its reward (t, where there is
	// one, comes after them): clearing a row's outputs leaves its reward and t.
	outs, outputs int
}

// addT gives the rows a t (see trajLayout.t), after all other values.
func (l *trajLayout) addT() {
	l.t = l.stride
	l.stride++
}

// newTrajLayout lays out a row for the policy's widths.
func newTrajLayout(p *policy) trajLayout {
	l := trajLayout{vf: -1, logp: -1, dist: -1, t: -1}
	next := func(w int) int {
		off := l.stride
		l.stride += w
		return off
	}
	next(p.obsW)
	l.rew = next(1)
	l.outs = l.stride
	if p.hasValue {
		l.vf = next(1)
	}
	l.act = next(p.actW)
	if !p.random {
		l.logp, l.dist = next(1), next(p.distW)
	}
	for _, w := range p.stateW {
		l.stateIn = append(l.stateIn, next(w))
		l.stateOut = append(l.stateOut, next(w))
	}
	l.outputs = l.stride
	return l
}

// complete completes the agent's pending transition, the one transition path of every
// protocol (observe, finalRow, addColumns): its reward goes to the agent's total and counts
// as one of the agent's steps (the episode's totals are its agents'), and where the record
// collects, the end flags (0, flagTerminated, flagTruncated) go to the record, whose row n
// (the pending action's) becomes a complete transition. The reward goes to the trajectory
// with the transition's new observation, row n+1 (trajLayout.rew), wherever the protocol
// writes that row: completing a transition touches the record only. The caller has taken
// the agent off pending and counted the step for the runner (stepDone, or addColumns
// inline).
func (a *agentRec) complete(reward float64, flags uint8) {
	a.reward += reward
	a.steps++
	if a.collect {
		a.end = flags
		a.n++
	}
}

// rowAction returns the action to record for the agent's last observation: the logged one
// where the environment took its own, else act (the policy's).
func (a *agentRec) rowAction(act []float32) []float32 {
	if a.logged {
		return a.offBuf
	}
	return act
}

// rows returns the number of observation rows kept.
func (a *agentRec) rows() int { return len(a.tr) / a.pol.lay.stride }

// lastRow returns the last trajectory row.
func (a *agentRec) lastRow() []float32 {
	s := a.pol.lay.stride
	return a.tr[len(a.tr)-s:]
}

// newRow appends a trajectory row and returns it. The row is not cleared: its values are
// the caller's to write, every one of them (record writes the observation; the value,
// action, log-probability, distribution inputs and RNN states are written after the
// model's run, or cleared where the row has none; the reward and flags when its transition
// completes, or by keepLast).
func (a *agentRec) newRow() []float32 {
	s := a.pol.lay.stride
	n := len(a.tr)
	if cap(a.tr)-n < s {
		a.tr = slices.Grow(a.tr, s)
	}
	a.tr = a.tr[:n+s]
	return a.tr[n:]
}

// clearTrajectory drops all kept data.
func (a *agentRec) clearTrajectory() {
	a.tr = a.tr[:0]
	a.n, a.end = 0, 0
	if len(a.infos) > 0 {
		clear(a.infos)
		a.infos = a.infos[:0]
	}
}

// dropInfos drops the infos of the first k transitions and renumbers the rest.
func (a *agentRec) dropInfos(k int) {
	kept := a.infos[:0]
	for _, ti := range a.infos {
		if int(ti.i) >= k {
			kept = append(kept, transitionInfo{ti.i - int32(k), ti.info})
		}
	}
	clear(a.infos[len(kept):])
	a.infos = kept
}

// keepLast drops the complete transitions 0..n-1, keeping the last observation row (and its
// pending action), which becomes row 0.
func (a *agentRec) keepLast() {
	a.dropFirst(a.n)
}

// dropFirst drops the first k complete transitions (0 <= k <= n): their rows go, and row k
// becomes row 0. With k == n the last observation row is kept, as keepLast says.
func (a *agentRec) dropFirst(k int) {
	if len(a.infos) > 0 {
		a.dropInfos(k)
	}
	if k < a.n {
		s := a.pol.lay.stride
		n := copy(a.tr, a.tr[k*s:])
		a.tr = a.tr[:n]
		a.t0 += int32(k)
		a.n -= k
		return
	}
	s := a.pol.lay.stride
	last := len(a.tr)/s - 1
	if last < 0 {
		return
	}
	copy(a.tr[:s], a.tr[last*s:])
	a.tr = a.tr[:s]
	a.end = 0
	a.t0 += int32(a.n)
	a.n = 0
}

// EpisodeTotals sums finished episodes as a run's summary reports them (how many, mean return
// and length, lowest and highest return), so that a caller can fold metrics in as they come
// rather than keep every episode's. Faulty episodes are left out, as RLlib's
// summarize_episodes leaves them out.
type EpisodeTotals struct {
	N                    int64
	ReturnSum, LenSum    float64
	ReturnMin, ReturnMax float64 // meaningful once N > 0
}

// Add counts the episodes of ms that are not faulty.
func (e *EpisodeTotals) Add(ms []RolloutMetrics) {
	for _, m := range ms {
		if m.Faulty {
			continue
		}
		if e.N == 0 {
			e.ReturnMin, e.ReturnMax = m.EpisodeReturn, m.EpisodeReturn
		}
		e.N++
		e.ReturnSum += m.EpisodeReturn
		e.LenSum += float64(m.EpisodeLength)
		e.ReturnMin, e.ReturnMax = min(e.ReturnMin, m.EpisodeReturn), max(e.ReturnMax, m.EpisodeReturn)
	}
}

// Means returns the mean return and length (0 and 0 without an episode).
func (e *EpisodeTotals) Means() (ret, length float64) {
	if e.N == 0 {
		return 0, 0
	}
	return e.ReturnSum / float64(e.N), e.LenSum / float64(e.N)
}
