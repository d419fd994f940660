package env

import "github.com/onnxrl/sampler/internal/grow"

// EnvID identifies a sub-environment of a BaseEnv: 0..n-1 for the adapters of this package.
type EnvID = int

// AgentObs is one ready agent reported by BaseEnv.Poll or BaseEnv.TryReset.
type AgentObs struct {
	Env   EnvID
	Agent AgentID
	// Obs is the observation in the raw layout of the agent's observation space. It may point
	// into the BaseEnv's own buffers: it stays valid until the next Poll, SendActions or
	// TryReset on the same BaseEnv. Nil means the agent reports a reward without an
	// observation (a MultiAgentEnv may reward an agent that does not observe this step): it
	// is added to the agent's next transition, and the agent needs no action.
	Obs []float32
	// Reward is the reward since the agent's last action (0 on the first observation of an
	// episode).
	Reward     float64
	Terminated bool
	Truncated  bool
	Info       Info
	// OffPolicyAction is the action the environment itself took at this observation
	// (ExternalEnv's log_action, RLlib's off_policy_actions), in the raw layout of the action
	// space, or nil when the policy is to choose. The runner records it as the action of this
	// observation's row; SendActions still carries an action for the agent, which the
	// environment ignores.
	OffPolicyAction []float32
}

// EnvStatus reports the state of one sub-environment in a Poll or TryReset result.
type EnvStatus struct {
	Env EnvID
	// Terminated and Truncated are the episode-wide flags ("__all__"): the episode of this
	// sub-environment is over and it needs TryReset before it acts again.
	Terminated bool
	Truncated  bool
	// Reset is set when the agents reported for this sub-environment carry the first
	// observations of a new episode.
	Reset bool
	// TrainingDisabled, reported with Reset, marks an episode whose experience is left out of
	// the sample batches (ExternalEnv's start_episode with training_enabled=false).
	TrainingDisabled bool
	// Info is the episode-wide info of this step (RLlib's infos["__common__"] of a
	// MultiAgentEnv, the info an ExternalEnv's log_returns gave), or nil. The runner shows it
	// to callbacks as the last info of CommonAgentID until the next status of the
	// sub-environment replaces it.
	Info Info
	// Err is set when the sub-environment failed (an error or a panic in its step or reset)
	// and was restarted (restart_failed_sub_environments): the episode that was running is
	// faulty and should be discarded; the sub-environment needs TryReset.
	Err error
}

// CommonAgentID is the key of the episode-wide info (RLlib's "__common__"): Episode.LastInfo
// of the runner returns EnvStatus.Info under it.
const CommonAgentID AgentID = "__common__"

// Batch holds the result of one Poll (or TryReset): the ready agents and the status of each
// sub-environment that reported. The caller owns it and reuses it from step to step; BaseEnv
// implementations only append to it.
type Batch struct {
	Agents []AgentObs
	Envs   []EnvStatus
}

// Clear empties b, keeping its storage.
func (b *Batch) Clear() {
	clear(b.Agents) // drop references to observation buffers and infos
	b.Agents = b.Agents[:0]
	clear(b.Envs)
	b.Envs = b.Envs[:0]
}

// AddAgent appends a zero AgentObs to b.Agents and returns it, to be filled in place (a
// filled struct appended is built aside and copied whole, which costs more per agent).
func (b *Batch) AddAgent() *AgentObs { return grow.Zero(&b.Agents) }

// Action is the action for one polled agent, in the raw layout of its action space. The slice
// is read during SendActions only.
type Action struct {
	Env    EnvID
	Agent  AgentID
	Action []float32
}

// BaseEnv is the interface the sampling loop drives, with the semantics of RLlib's BaseEnv.
//
// Poll appends to dst every agent that is ready since the last Poll, and a status entry for
// each sub-environment that reported. SendActions must then be called with actions for exactly
// the agents that were polled and are not done (agents whose episode ended need none).
// TryReset resets a sub-environment whose episode ended; a synchronous reset appends the first
// observations to dst and returns async=false, an asynchronous one returns async=true and the
// observations arrive through a later Poll. Stop releases the environments.
//
// A BaseEnv is owned by one goroutine (the runner's); implementations may use goroutines
// inside.
type BaseEnv interface {
	Poll(dst *Batch) error
	SendActions(actions []Action) error
	TryReset(env EnvID, seed Seed, dst *Batch) (async bool, err error)
	Stop() error
}

// SubEnvironmentser is implemented by a BaseEnv that can hand out its sub-environments (RLlib's
// get_sub_environments).
type SubEnvironmentser interface {
	SubEnvironments() []any
}

// TryRenderer is implemented by a BaseEnv that can render one of its sub-environments.
type TryRenderer interface {
	TryRender(env EnvID) (any, error)
}

// Columnar is implemented by the BaseEnv of NewVectorBaseEnv: every sub-environment has one
// agent, DefaultAgentID, and all of them step together. It lets a caller that drives such an
// environment skip the per-agent records of Poll and SendActions and work on whole columns:
// PollColumns is Poll, ResetColumns is TryReset and StepColumns is SendActions, with the
// observations, rewards and flags read from, and the actions written to, the buffers of
// Columns. A caller uses either protocol at a time, not both within one step.
type Columnar interface {
	BaseEnv
	// Columns returns the shared buffers; they stay the same for the BaseEnv's life.
	Columns() Columns
	// PollColumns is Poll without the agents: dst gets only the status of sub-environments
	// that failed (and were restarted); the result lists the ready sub-environments, whose
	// rows, results and reset flags are in Columns. The slice is valid until the next call.
	PollColumns(dst *Batch) ([]EnvID, error)
	// ResetColumns is TryReset without the agent: true when the sub-environment is ready with
	// the first observation of an episode in its row; false (and a status in dst) when it
	// failed and was restarted.
	ResetColumns(env EnvID, seed Seed, dst *Batch) (bool, error)
	// StepColumns is SendActions with every sub-environment's action in its row of
	// Columns().Actions: every sub-environment must be polled and not done.
	StepColumns() error
}

// Columns are the buffers a Columnar BaseEnv shares with its caller, one row per
// sub-environment.
type Columns struct {
	// Obs holds ObsSize values per sub-environment, the raw layout of the observation space.
	// A ready sub-environment's row is valid until its next step or reset.
	Obs     []float32
	ObsSize int
	// Actions holds ActionSize values per sub-environment, written by the caller before
	// StepColumns.
	Actions    []float32
	ActionSize int
	// Results holds each sub-environment's last reward, flags and info (reward 0 and the
	// reset's info after a reset).
	Results []StepResult
	// Reset is set while a sub-environment's row holds the first observation of an episode.
	Reset []bool
}

// ObsRow returns sub-environment i's row of Obs.
func (c *Columns) ObsRow(i int) []float32 {
	w := c.ObsSize
	return c.Obs[i*w : (i+1)*w : (i+1)*w]
}

// ActionRow returns sub-environment i's row of Actions.
func (c *Columns) ActionRow(i int) []float32 {
	w := c.ActionSize
	return c.Actions[i*w : (i+1)*w : (i+1)*w]
}

// AllResetter is implemented by a BaseEnv that can reset all its sub-environments in one
// call: RLlib's try_reset(env_id=None). Every BaseEnv adapter of this package implements it.
type AllResetter interface {
	// TryResetAll resets every sub-environment, as TryReset does one: with async=false the
	// first observations are appended to dst, with async=true a later Poll returns them. A
	// set seed gives sub-environment i the seed Seed.Value+i (RLlib passes the same seed to
	// every sub-environment, which would make them all replay the same episode).
	TryResetAll(seed Seed, dst *Batch) (async bool, err error)
}

// AllRenderer is implemented by a BaseEnv that can render all its sub-environments in one
// call. Every BaseEnv adapter of this package implements it. (RLlib's try_render(env_id=None)
// renders sub-environment 0 only: that is the first entry here.)
type AllRenderer interface {
	// TryRenderAll returns what TryRender returns for each sub-environment, in order; an
	// entry is nil where TryRender failed, and the errors are joined.
	TryRenderAll() ([]any, error)
}
