package classic

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// MultiAgentCartPole is RLlib's MultiAgentCartPole (make_multi_agent("CartPole-v1")): n
// independent CartPole-v1 environments, one per agent, stepped together.
//
// Agents are named "agent_0" .. "agent_{n-1}" (RLlib uses the integers 0..n-1). Each agent's
// CartPole ends on its own (terminated, or truncated by its own 500-step limit): on that step
// the agent reports its final observation with its flags, and it is gone for the rest of the
// episode. The episode ends when every agent is done: AllTerminated is set when all agents
// terminated, AllTruncated when all are done and at least one was truncated.
//
// Reset(env.WithSeed(s), out) resets agent i's CartPole with seed s+i, as RLlib does; without
// a seed each agent keeps drawing from its own stream, and agent i of a new environment starts
// from DefaultSeed+i.
//
// Step takes actions for any non-empty subset of the agents that are still active; only those
// agents step and report. An unknown or departed agent, a duplicate, an empty action list or an
// action outside Discrete(2) is an error, and nothing changes.
//
// Config keys: num_agents (default 2), max_episode_steps (default 500, per agent).
type MultiAgentCartPole struct {
	ids      []env.AgentID
	envs     []*CartPole
	active   []bool
	seen     []bool // scratch for Step's duplicate check
	left     int    // agents still active
	anyTrunc bool
	running  bool
}

// NewMultiAgentCartPole returns a MultiAgentCartPole.
func NewMultiAgentCartPole(cfg env.Config) (*MultiAgentCartPole, error) {
	if err := cfg.Check("max_episode_steps", "num_agents"); err != nil {
		return nil, err
	}
	n, err := cfg.Int("num_agents", 2)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > 1<<16 {
		return nil, fmt.Errorf("classic: config num_agents: must be in [1, 65536], got %d", n)
	}
	sub := env.Config{}
	if v, ok := cfg["max_episode_steps"]; ok {
		sub["max_episode_steps"] = v
	}
	m := &MultiAgentCartPole{
		ids:    make([]env.AgentID, n),
		envs:   make([]*CartPole, n),
		active: make([]bool, n),
		seen:   make([]bool, n),
	}
	for i := range n {
		m.ids[i] = "agent_" + strconv.Itoa(i)
		c, err := NewCartPole(sub)
		if err != nil {
			return nil, err
		}
		c.src.seed(DefaultSeed + uint64(i))
		m.envs[i] = c
	}
	return m, nil
}

// PossibleAgents returns "agent_0" .. "agent_{n-1}" (a copy).
func (m *MultiAgentCartPole) PossibleAgents() []env.AgentID { return slices.Clone(m.ids) }

// ObservationSpace returns CartPole-v1's observation space for any agent of the environment,
// nil for an unknown id.
func (m *MultiAgentCartPole) ObservationSpace(id env.AgentID) spaces.Space {
	if i := m.index(id); i >= 0 {
		return m.envs[i].ObservationSpace()
	}
	return nil
}

// ActionSpace returns Discrete(2) for any agent of the environment, nil for an unknown id.
func (m *MultiAgentCartPole) ActionSpace(id env.AgentID) spaces.Space {
	if i := m.index(id); i >= 0 {
		return m.envs[i].ActionSpace()
	}
	return nil
}

// index returns the index of agent id, or -1.
func (m *MultiAgentCartPole) index(id env.AgentID) int {
	s, ok := strings.CutPrefix(id, "agent_")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= len(m.ids) || m.ids[i] != id {
		return -1
	}
	return i
}

// NumAgents returns the number of agents.
func (m *MultiAgentCartPole) NumAgents() int { return len(m.ids) }

// Agent returns agent i's CartPole (for State, SetState and tests). Stepping it directly
// bypasses the multi-agent bookkeeping.
func (m *MultiAgentCartPole) Agent(i int) *CartPole { return m.envs[i] }

// Reset resets every agent's CartPole (agent i with seed s+i) and reports all agents.
func (m *MultiAgentCartPole) Reset(seed env.Seed, out *env.MultiAgentStep) error {
	out.Clear()
	for i, c := range m.envs {
		s := seed
		if s.Set {
			s.Value += uint64(i)
		}
		a := out.Add(m.ids[i], 4)
		if _, err := c.Reset(s, a.Obs); err != nil {
			return err
		}
		m.active[i] = true
	}
	m.left = len(m.envs)
	m.anyTrunc = false
	m.running = true
	return nil
}

// errNoActions is returned by Step with no actions while agents are active.
var errNoActions = errors.New("classic: MultiAgentCartPole: Step needs an action for at least one agent")

// Step steps the agents given actions and reports them.
func (m *MultiAgentCartPole) Step(actions []env.AgentAction, out *env.MultiAgentStep) error {
	if !m.running {
		return env.ErrNeedsReset
	}
	if len(actions) == 0 {
		return errNoActions
	}
	if err := m.validate(actions); err != nil {
		return err
	}
	out.Clear()
	for _, act := range actions {
		i := m.index(act.ID)
		c := m.envs[i]
		a := out.Add(act.ID, 4)
		res, err := c.Step(act.Action, a.Obs)
		if err != nil { // cannot happen: validate checked the action and the agent
			return err
		}
		a.Reward, a.Terminated, a.Truncated = res.Reward, res.Terminated, res.Truncated
		if res.Terminated || res.Truncated {
			m.active[i] = false
			m.left--
			m.anyTrunc = m.anyTrunc || res.Truncated
		}
	}
	if m.left == 0 {
		m.running = false
		out.AllTruncated = m.anyTrunc
		out.AllTerminated = !m.anyTrunc
	}
	return nil
}

// validate checks every action before anything steps; it leaves m.seen all false.
func (m *MultiAgentCartPole) validate(actions []env.AgentAction) error {
	var err error
	for k, act := range actions {
		i := m.index(act.ID)
		switch {
		case i < 0:
			err = fmt.Errorf("classic: MultiAgentCartPole: unknown agent %q", act.ID)
		case !m.active[i]:
			err = fmt.Errorf("classic: MultiAgentCartPole: agent %q is done and cannot act until Reset", act.ID)
		case m.seen[i]:
			err = fmt.Errorf("classic: MultiAgentCartPole: two actions for agent %q", act.ID)
		case !m.envs[i].actSpace.Contains(act.Action):
			err = actionError(act.ID, act.Action, m.envs[i].actSpace)
		}
		if err != nil {
			for _, prev := range actions[:k] {
				if j := m.index(prev.ID); j >= 0 {
					m.seen[j] = false
				}
			}
			return err
		}
		m.seen[i] = true
	}
	for _, act := range actions {
		m.seen[m.index(act.ID)] = false
	}
	return nil
}

// Render returns one line per agent.
func (m *MultiAgentCartPole) Render() (any, error) {
	var sb strings.Builder
	for i, c := range m.envs {
		if i > 0 {
			sb.WriteByte('\n')
		}
		line, _ := c.Render()
		status := "active"
		if !m.active[i] {
			status = "done"
		}
		fmt.Fprintf(&sb, "%s (%s): %s", m.ids[i], status, line)
	}
	return sb.String(), nil
}
