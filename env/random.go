package env

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/spaces"
)

// RandomEnvConfig configures a RandomEnv (and, embedded, a RandomMultiAgentEnv). The zero
// value is a usable configuration.
type RandomEnvConfig struct {
	// ObservationSpace is sampled for every observation. Default: Box(-1, 1, (4,), float32).
	ObservationSpace spaces.Space
	// ActionSpace is what Step accepts; other actions are an *ActionError. Default:
	// Discrete(2).
	ActionSpace spaces.Space
	// EpisodeLen, when positive, is the fixed number of steps of an episode. Otherwise the
	// length is drawn uniformly from [MinEpisodeLen, MaxEpisodeLen] at every reset (each
	// defaults to the other, and both to 10). The step that reaches the length reports
	// Truncated (a time limit, as RLlib's max_episode_len).
	EpisodeLen                   int
	MinEpisodeLen, MaxEpisodeLen int
	// PTerminated is the probability that a step terminates the episode early (RLlib's
	// p_terminated); such a step reports Terminated.
	PTerminated float64
	// Reward is the reward of every step; with RewardIsStep the reward is instead the 1-based
	// number of the step within its episode (1, 2, 3, ...), which lets tests check that
	// rewards are passed through unchanged.
	Reward       float64
	RewardIsStep bool
	// StepDelay is slept in every Step (to make slow sub-environments).
	StepDelay time.Duration
	// PError and PPanic are per-Step probabilities of an injected failure: Step returns an
	// error, or panics.
	PError, PPanic float64
	// FailAtStep, when positive, makes the FailAtStep-th Step call of this instance (counted
	// over its lifetime, across episodes) fail; FailAtReset does the same for Reset. A failed
	// call fails with an error, or panics when FailByPanic is set. A recreated instance
	// counts from zero again.
	FailAtStep, FailAtReset int
	FailByPanic             bool
	// Seed seeds the random source until a Reset with a seed reseeds it.
	Seed uint64
}

// ErrInjected is the error of the failures a RandomEnv or RandomMultiAgentEnv injects (and
// the value of its injected panics).
var ErrInjected = errors.New("env: injected failure")

var defaultRandomObs = spaces.NewBox(-1, 1, 4)

func (c *RandomEnvConfig) fill() error {
	if c.ObservationSpace == nil {
		c.ObservationSpace = defaultRandomObs
	}
	if c.ActionSpace == nil {
		c.ActionSpace = &spaces.Discrete{N: 2}
	}
	if err := c.ObservationSpace.Validate(); err != nil {
		return fmt.Errorf("env: RandomEnv observation space: %w", err)
	}
	if err := c.ActionSpace.Validate(); err != nil {
		return fmt.Errorf("env: RandomEnv action space: %w", err)
	}
	if c.EpisodeLen > 0 {
		c.MinEpisodeLen, c.MaxEpisodeLen = c.EpisodeLen, c.EpisodeLen
	}
	switch {
	case c.MinEpisodeLen <= 0 && c.MaxEpisodeLen <= 0:
		c.MinEpisodeLen, c.MaxEpisodeLen = 10, 10
	case c.MinEpisodeLen <= 0:
		c.MinEpisodeLen = c.MaxEpisodeLen
	case c.MaxEpisodeLen <= 0:
		c.MaxEpisodeLen = c.MinEpisodeLen
	}
	if c.MinEpisodeLen > c.MaxEpisodeLen {
		return fmt.Errorf("env: RandomEnv min_episode_len %d > max_episode_len %d", c.MinEpisodeLen, c.MaxEpisodeLen)
	}
	for name, p := range map[string]float64{"p_terminated": c.PTerminated, "p_error": c.PError, "p_panic": c.PPanic} {
		if p < 0 || p > 1 || p != p {
			return fmt.Errorf("env: RandomEnv %s must be in [0, 1], got %v", name, p)
		}
	}
	if c.StepDelay < 0 {
		return fmt.Errorf("env: RandomEnv step_delay must not be negative, got %v", c.StepDelay)
	}
	return nil
}

// randomCore is the part shared by RandomEnv and RandomMultiAgentEnv: random source,
// failure injection and counters.
type randomCore struct {
	cfg        RandomEnvConfig
	pcg        *rand.PCG
	rng        *rand.Rand
	stepCalls  int // Step calls of this instance (for FailAtStep)
	resetCalls int
	steps      atomic.Int64
	resets     atomic.Int64
}

func (c *randomCore) init(cfg RandomEnvConfig) {
	c.cfg = cfg
	c.pcg = rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)
	c.rng = rand.New(c.pcg)
}

func (c *randomCore) reseed(seed Seed) {
	if seed.Set {
		c.pcg.Seed(seed.Value, 0x9e3779b97f4a7c15)
	}
}

func (c *randomCore) episodeLen() int {
	lo, hi := c.cfg.MinEpisodeLen, c.cfg.MaxEpisodeLen
	if lo == hi {
		return lo
	}
	return lo + c.rng.IntN(hi-lo+1)
}

func (c *randomCore) fail(what string, n int) error {
	if c.cfg.FailByPanic {
		panic(fmt.Errorf("%w: panic in %s call %d", ErrInjected, what, n))
	}
	return fmt.Errorf("%w: %s call %d", ErrInjected, what, n)
}

// beforeReset counts the call and injects a reset failure.
func (c *randomCore) beforeReset() error {
	c.resetCalls++
	if c.cfg.FailAtReset > 0 && c.resetCalls == c.cfg.FailAtReset {
		return c.fail("reset", c.resetCalls)
	}
	return nil
}

// beforeStep sleeps the delay and injects step failures. It runs after the actions were
// validated.
func (c *randomCore) beforeStep() error {
	c.stepCalls++
	if c.cfg.StepDelay > 0 {
		time.Sleep(c.cfg.StepDelay)
	}
	if c.cfg.FailAtStep > 0 && c.stepCalls == c.cfg.FailAtStep {
		return c.fail("step", c.stepCalls)
	}
	if c.cfg.PError > 0 && c.rng.Float64() < c.cfg.PError {
		return fmt.Errorf("%w: random error in step call %d", ErrInjected, c.stepCalls)
	}
	if c.cfg.PPanic > 0 && c.rng.Float64() < c.cfg.PPanic {
		panic(fmt.Errorf("%w: random panic in step call %d", ErrInjected, c.stepCalls))
	}
	return nil
}

func (c *randomCore) reward(t int) float64 {
	if c.cfg.RewardIsStep {
		return float64(t)
	}
	return c.cfg.Reward
}

// Steps returns the number of successful Step calls of this instance. It is safe to call
// from any goroutine.
func (c *randomCore) Steps() int64 { return c.steps.Load() }

// Resets returns the number of successful Reset calls of this instance. It is safe to call
// from any goroutine.
func (c *randomCore) Resets() int64 { return c.resets.Load() }

// RandomEnv is RLlib's RandomEnv: observations are samples of the observation space,
// rewards are constant (or the step number), episodes end after a fixed or random number of
// steps or with probability PTerminated, and failures can be injected. It validates actions
// like any Env and allocates nothing per step (injected failures aside).
type RandomEnv struct {
	randomCore
	t, length int
	running   bool
}

// NewRandomEnv returns a RandomEnv configured by cfg.
func NewRandomEnv(cfg RandomEnvConfig) (*RandomEnv, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	e := &RandomEnv{}
	e.init(cfg)
	return e, nil
}

// ObservationSpace returns the configured observation space.
func (e *RandomEnv) ObservationSpace() spaces.Space { return e.cfg.ObservationSpace }

// ActionSpace returns the configured action space.
func (e *RandomEnv) ActionSpace() spaces.Space { return e.cfg.ActionSpace }

// Reset starts an episode and samples the first observation into obs.
func (e *RandomEnv) Reset(seed Seed, obs []float32) (Info, error) {
	if err := e.beforeReset(); err != nil {
		return nil, err
	}
	e.reseed(seed)
	e.t, e.length, e.running = 0, e.episodeLen(), true
	e.cfg.ObservationSpace.Sample(e.rng, obs)
	e.resets.Add(1)
	return nil, nil
}

// Step checks the action, then samples the next observation into obs.
func (e *RandomEnv) Step(action []float32, obs []float32) (StepResult, error) {
	if !e.running {
		return StepResult{}, ErrNeedsReset
	}
	if !e.cfg.ActionSpace.Contains(action) {
		return StepResult{}, &ActionError{Action: slices.Clone(action), Space: spaces.String(e.cfg.ActionSpace)}
	}
	if err := e.beforeStep(); err != nil {
		return StepResult{}, err
	}
	e.t++
	r := StepResult{Reward: e.reward(e.t)}
	if e.cfg.PTerminated > 0 && e.rng.Float64() < e.cfg.PTerminated {
		r.Terminated = true
	} else if e.t >= e.length {
		r.Truncated = true
	}
	e.running = !r.Terminated && !r.Truncated
	e.cfg.ObservationSpace.Sample(e.rng, obs)
	e.steps.Add(1)
	return r, nil
}

// Render returns a one-line text description of the state.
func (e *RandomEnv) Render() (any, error) {
	return fmt.Sprintf("RandomEnv t=%d/%d", e.t, e.length), nil
}

// RandomMultiAgentEnvConfig configures a RandomMultiAgentEnv.
type RandomMultiAgentEnvConfig struct {
	// RandomEnvConfig applies to every agent: its spaces, its episode length (drawn per agent
	// at each reset, so with MinEpisodeLen < MaxEpisodeLen agents leave at different steps),
	// PTerminated per agent and step, rewards, and the per-Step delay and failures.
	RandomEnvConfig
	// NumAgents is the number of agents, "agent0" ... (default 2).
	NumAgents int
	// JoinEvery, when positive, makes agent i join the episode late, at step i*JoinEvery
	// (its first observation is reported by that step, reward 0); with 0 every agent
	// reports on reset. An agent's episode length counts from its join.
	JoinEvery int
}

type randomAgentState uint8

const (
	agentWaiting randomAgentState = iota // has not joined yet
	agentActive
	agentDone
)

// RandomMultiAgentEnv is a multi-agent RandomEnv (RLlib's make_multi_agent(RandomEnv)): each
// agent lives for its own number of steps, agents may join late, and the episode ends
// (AllTruncated, or AllTerminated when every agent terminated) once every agent is done.
// Step requires exactly one valid action per agent that reported an observation and is not
// done.
type RandomMultiAgentEnv struct {
	randomCore
	ids     []AgentID
	index   map[AgentID]int
	state   []randomAgentState
	t       []int // steps of each agent since it joined
	length  []int
	joinAt  []int
	seen    []bool
	step    int
	running bool
	// anyTruncated: an agent of this episode ended by truncation, so the episode ends with
	// AllTruncated rather than AllTerminated.
	anyTruncated bool
}

// NewRandomMultiAgentEnv returns a RandomMultiAgentEnv configured by cfg.
func NewRandomMultiAgentEnv(cfg RandomMultiAgentEnvConfig) (*RandomMultiAgentEnv, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if cfg.NumAgents <= 0 {
		cfg.NumAgents = 2
	}
	if cfg.JoinEvery < 0 {
		return nil, fmt.Errorf("env: RandomMultiAgentEnv join_every must not be negative, got %d", cfg.JoinEvery)
	}
	n := cfg.NumAgents
	e := &RandomMultiAgentEnv{
		ids: make([]AgentID, n), index: make(map[AgentID]int, n), state: make([]randomAgentState, n),
		t: make([]int, n), length: make([]int, n), joinAt: make([]int, n), seen: make([]bool, n),
	}
	for i := range n {
		e.ids[i] = "agent" + strconv.Itoa(i)
		e.index[e.ids[i]] = i
	}
	e.init(cfg.RandomEnvConfig)
	for i := range n {
		e.joinAt[i] = i * cfg.JoinEvery
	}
	return e, nil
}

// PossibleAgents returns "agent0" ... "agent<NumAgents-1>".
func (e *RandomMultiAgentEnv) PossibleAgents() []AgentID { return e.ids }

// ObservationSpace returns the configured observation space (the same for every agent).
func (e *RandomMultiAgentEnv) ObservationSpace(AgentID) spaces.Space { return e.cfg.ObservationSpace }

// ActionSpace returns the configured action space (the same for every agent).
func (e *RandomMultiAgentEnv) ActionSpace(AgentID) spaces.Space { return e.cfg.ActionSpace }

// Reset starts an episode: the agents that join at step 0 report their first observation.
func (e *RandomMultiAgentEnv) Reset(seed Seed, out *MultiAgentStep) error {
	out.Clear()
	if err := e.beforeReset(); err != nil {
		return err
	}
	e.reseed(seed)
	e.step, e.running, e.anyTruncated = 0, true, false
	size := e.cfg.ObservationSpace.Size()
	for i, id := range e.ids {
		e.t[i], e.length[i], e.state[i] = 0, e.episodeLen(), agentWaiting
		if e.joinAt[i] == 0 {
			e.state[i] = agentActive
			e.cfg.ObservationSpace.Sample(e.rng, out.Add(id, size).Obs)
		}
	}
	e.resets.Add(1)
	return nil
}

// Step checks the actions (one valid action for every active agent, none for others), then
// advances every active agent and lets waiting agents join.
func (e *RandomMultiAgentEnv) Step(actions []AgentAction, out *MultiAgentStep) error {
	if !e.running {
		return ErrNeedsReset
	}
	clear(e.seen)
	for _, a := range actions {
		i, ok := e.index[a.ID]
		if !ok || e.state[i] != agentActive {
			return fmt.Errorf("env: RandomMultiAgentEnv: agent %q is not expected to act", a.ID)
		}
		if e.seen[i] {
			return fmt.Errorf("env: RandomMultiAgentEnv: two actions for agent %q", a.ID)
		}
		e.seen[i] = true
		if !e.cfg.ActionSpace.Contains(a.Action) {
			return &ActionError{Agent: a.ID, Action: slices.Clone(a.Action), Space: spaces.String(e.cfg.ActionSpace)}
		}
	}
	for i, st := range e.state {
		if st == agentActive && !e.seen[i] {
			return fmt.Errorf("env: RandomMultiAgentEnv: no action for agent %q", e.ids[i])
		}
	}
	out.Clear()
	if err := e.beforeStep(); err != nil {
		return err
	}
	e.step++
	size := e.cfg.ObservationSpace.Size()
	allDone := true
	for i, id := range e.ids {
		switch e.state[i] {
		case agentActive:
			e.t[i]++
			a := out.Add(id, size)
			a.Reward = e.reward(e.t[i])
			if e.cfg.PTerminated > 0 && e.rng.Float64() < e.cfg.PTerminated {
				a.Terminated = true
			} else if e.t[i] >= e.length[i] {
				a.Truncated = true
			}
			if a.Terminated || a.Truncated {
				e.state[i] = agentDone
				e.anyTruncated = e.anyTruncated || a.Truncated
			}
			e.cfg.ObservationSpace.Sample(e.rng, a.Obs)
		case agentWaiting:
			if e.joinAt[i] == e.step {
				e.state[i] = agentActive
				e.cfg.ObservationSpace.Sample(e.rng, out.Add(id, size).Obs)
			}
		}
		if e.state[i] != agentDone {
			allDone = false
		}
	}
	if allDone {
		out.AllTruncated = e.anyTruncated
		out.AllTerminated = !e.anyTruncated
		e.running = false
	}
	e.steps.Add(1)
	return nil
}

// Render returns a one-line text description of the state.
func (e *RandomMultiAgentEnv) Render() (any, error) {
	return fmt.Sprintf("RandomMultiAgentEnv step=%d agents=%d", e.step, len(e.ids)), nil
}

// configSpace reads a space from a config value: a spaces.Space, its JSON as a string or
// []byte, or the decoded JSON object (map[string]any) of a JSON config file.
func configSpace(c Config, key string, def spaces.Space) (spaces.Space, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	var data []byte
	switch x := v.(type) {
	case spaces.Space:
		return x, nil
	case string:
		data = []byte(x)
	case []byte:
		data = x
	case map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("env: config %s: %w", key, err)
		}
		data = b
	default:
		return nil, fmt.Errorf("env: config %s: want a space (JSON), got %T", key, v)
	}
	s, err := spaces.Unmarshal(data)
	if err != nil {
		return nil, fmt.Errorf("env: config %s: %w", key, err)
	}
	return s, nil
}

var randomEnvKeys = []string{
	"observation_space", "action_space", "episode_len", "min_episode_len", "max_episode_len",
	"p_terminated", "reward", "reward_is_step", "step_delay", "p_error", "p_panic",
	"fail_at_step", "fail_at_reset", "fail_by_panic", "seed",
}

// RandomEnvConfigFrom reads a RandomEnvConfig from registry config keys (see the package
// documentation for the list).
func RandomEnvConfigFrom(c Config) (RandomEnvConfig, error) {
	var r RandomEnvConfig
	var err error
	get := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	get(func() (e error) { r.ObservationSpace, e = configSpace(c, "observation_space", nil); return })
	get(func() (e error) { r.ActionSpace, e = configSpace(c, "action_space", nil); return })
	get(func() (e error) { r.EpisodeLen, e = c.Int("episode_len", 0); return })
	get(func() (e error) { r.MinEpisodeLen, e = c.Int("min_episode_len", 0); return })
	get(func() (e error) { r.MaxEpisodeLen, e = c.Int("max_episode_len", 0); return })
	get(func() (e error) { r.PTerminated, e = c.Float("p_terminated", 0); return })
	get(func() (e error) { r.Reward, e = c.Float("reward", 0); return })
	get(func() (e error) { r.RewardIsStep, e = c.Bool("reward_is_step", false); return })
	get(func() (e error) { r.StepDelay, e = c.Duration("step_delay", 0); return })
	get(func() (e error) { r.PError, e = c.Float("p_error", 0); return })
	get(func() (e error) { r.PPanic, e = c.Float("p_panic", 0); return })
	get(func() (e error) { r.FailAtStep, e = c.Int("fail_at_step", 0); return })
	get(func() (e error) { r.FailAtReset, e = c.Int("fail_at_reset", 0); return })
	get(func() (e error) { r.FailByPanic, e = c.Bool("fail_by_panic", false); return })
	get(func() error {
		s, e := c.Int("seed", 0)
		r.Seed = uint64(s)
		return e
	})
	return r, err
}

func init() {
	Register("RandomEnv", func(c Config) (any, error) {
		if err := c.Check(randomEnvKeys...); err != nil {
			return nil, err
		}
		cfg, err := RandomEnvConfigFrom(c)
		if err != nil {
			return nil, err
		}
		return NewRandomEnv(cfg)
	})
	Register("RandomMultiAgentEnv", func(c Config) (any, error) {
		if err := c.Check(append(slices.Clone(randomEnvKeys), "num_agents", "join_every")...); err != nil {
			return nil, err
		}
		var cfg RandomMultiAgentEnvConfig
		var err error
		if cfg.RandomEnvConfig, err = RandomEnvConfigFrom(c); err != nil {
			return nil, err
		}
		if cfg.NumAgents, err = c.Int("num_agents", 2); err != nil {
			return nil, err
		}
		if cfg.JoinEvery, err = c.Int("join_every", 0); err != nil {
			return nil, err
		}
		return NewRandomMultiAgentEnv(cfg)
	})
}
