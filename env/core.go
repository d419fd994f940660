package env

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/onnxrl/sampler/spaces"
)

// slotState is where a sub-environment of a BaseEnv adapter stands.
type slotState uint8

const (
	stNew      slotState = iota // made; its first reset has not run yet
	stReady                     // has a result that the next Poll reports (synchronous adapters)
	stInFlight                  // a reset or step runs on its goroutine (RemoteVectorEnv)
	stAwaiting                  // polled; waits for actions of its expected agents
	stEnded                     // its episode ended; needs TryReset
	stFailed                    // its reset or step failed; needs TryReset
)

// expect is one agent that the next SendActions must give an action.
type expect struct {
	id     AgentID
	space  spaces.Space
	action []float32 // set by table.match, read by the dispatch
	got    bool
}

// expectSet is the state of one sub-environment as the action checks see it.
type expectSet struct {
	state  slotState
	listed bool // in table.await
	exp    []expect
}

func (s *expectSet) find(id AgentID) int {
	for j := range s.exp {
		if s.exp[j].id == id {
			return j
		}
	}
	return -1
}

// table checks SendActions against what was polled. It holds no maps: the expected agents of
// each sub-environment are a short slice, and the sub-environments that wait for actions are
// listed in await, so a SendActions costs O(actions + waiting agents).
type table struct {
	sets  []expectSet
	await []int // sub-environments that were reported as waiting since the last SendActions
}

func newTable(n int) table {
	return table{sets: make([]expectSet, n), await: make([]int, 0, n)}
}

// setAwaiting marks sub-environment i as waiting for actions.
func (t *table) setAwaiting(i int) {
	s := &t.sets[i]
	s.state = stAwaiting
	if !s.listed {
		s.listed = true
		t.await = append(t.await, i)
	}
}

// match records every action in its expect entry, or returns an error naming the first bad
// one (and then clears what it recorded).
func (t *table) match(actions []Action) error {
	err := t.match1(actions)
	if err != nil {
		t.clearGot()
	}
	return err
}

func (t *table) match1(actions []Action) error {
	for k := range actions {
		a := &actions[k]
		if a.Env < 0 || a.Env >= len(t.sets) {
			return fmt.Errorf("%w: unknown sub-environment %d (agent %q; there are %d)", ErrBadActions, a.Env, a.Agent, len(t.sets))
		}
		s := &t.sets[a.Env]
		switch s.state {
		case stAwaiting:
		case stEnded, stFailed:
			return fmt.Errorf("env: action for agent %q of sub-environment %d: %w", a.Agent, a.Env, ErrNeedsReset)
		case stInFlight:
			return fmt.Errorf("%w: sub-environment %d (agent %q) was not returned by the last Poll", ErrBadActions, a.Env, a.Agent)
		default:
			return fmt.Errorf("%w: sub-environment %d (agent %q) has results that were not polled yet", ErrBadActions, a.Env, a.Agent)
		}
		j := s.find(a.Agent)
		if j < 0 {
			return fmt.Errorf("%w: agent %q of sub-environment %d is not waiting for an action (unknown, done, or not polled)", ErrBadActions, a.Agent, a.Env)
		}
		e := &s.exp[j]
		if e.got {
			return fmt.Errorf("%w: two actions for agent %q of sub-environment %d", ErrBadActions, a.Agent, a.Env)
		}
		if !e.space.Contains(a.Action) {
			return fmt.Errorf("env: sub-environment %d: %w", a.Env,
				&ActionError{Agent: a.Agent, Action: slices.Clone(a.Action), Space: spaces.String(e.space)})
		}
		e.got, e.action = true, a.Action
	}
	for _, i := range t.await {
		s := &t.sets[i]
		if s.state != stAwaiting {
			continue
		}
		for j := range s.exp {
			if !s.exp[j].got {
				return fmt.Errorf("%w: no action for agent %q of sub-environment %d", ErrBadActions, s.exp[j].id, i)
			}
		}
	}
	return nil
}

func (t *table) clearGot() {
	for _, i := range t.await {
		for j := range t.sets[i].exp {
			t.sets[i].exp[j].got, t.sets[i].exp[j].action = false, nil
		}
	}
}

// singleAgent presents an Env as a MultiAgentEnv with the one agent DefaultAgentID.
type singleAgent struct {
	e        Env
	obs, act spaces.Space
	obsN     int
}

var defaultAgents = []AgentID{DefaultAgentID}

func newSingleAgent(e Env) *singleAgent {
	s := &singleAgent{e: e, obs: e.ObservationSpace(), act: e.ActionSpace()}
	s.obsN = s.obs.Size()
	return s
}

func (s *singleAgent) PossibleAgents() []AgentID             { return defaultAgents }
func (s *singleAgent) ObservationSpace(AgentID) spaces.Space { return s.obs }
func (s *singleAgent) ActionSpace(AgentID) spaces.Space      { return s.act }

func (s *singleAgent) Reset(seed Seed, out *MultiAgentStep) error {
	out.Clear()
	a := out.Add(DefaultAgentID, s.obsN)
	info, err := s.e.Reset(seed, a.Obs)
	a.Info = info
	return err
}

func (s *singleAgent) Step(actions []AgentAction, out *MultiAgentStep) error {
	if len(actions) != 1 || actions[0].ID != DefaultAgentID {
		return fmt.Errorf("env: single-agent environment: want one action for %q, got %d", DefaultAgentID, len(actions))
	}
	out.Clear()
	a := out.Add(DefaultAgentID, s.obsN)
	r, err := s.e.Step(actions[0].Action, a.Obs)
	if err != nil {
		return err
	}
	a.Reward, a.Terminated, a.Truncated, a.Info = r.Reward, r.Terminated, r.Truncated, r.Info
	out.AllTerminated, out.AllTruncated = r.Terminated, r.Truncated
	return nil
}

// slot is one sub-environment of the Env/MultiAgentEnv adapters and of RemoteVectorEnv: the
// environment (an Env is wrapped as a one-agent MultiAgentEnv), its reusable step buffers,
// and the fault handling. Its methods run on one goroutine at a time (the owner's, or the
// sub-environment's goroutine of a RemoteVectorEnv, handing over through channels).
type slot struct {
	index, numEnvs int
	make           func(index int) (any, error)
	restart        bool
	baseSeed       Seed

	raw      any // the environment as made: Env or MultiAgentEnv
	env      MultiAgentEnv
	actSpace map[AgentID]spaces.Space
	out      MultiAgentStep
	acts     []AgentAction
	actBuf   [][]float32 // owned copies of the actions (RemoteVectorEnv)

	restarts   int // times this sub-environment was recreated
	instResets int // successful resets of the current instance
	dead       bool

	// Outcome of the last reset or step.
	wasReset  bool
	fault     *SubEnvError
	restarted bool
}

func newSlot(index, numEnvs int, make func(int) (any, error), opts BaseEnvOptions, raw any) (*slot, error) {
	s := &slot{index: index, numEnvs: numEnvs, make: make, restart: opts.RestartFailedSubEnvironments, baseSeed: opts.Seed}
	if raw == nil {
		var err error
		if raw, err = s.callMake(); err != nil {
			return nil, fmt.Errorf("env: make sub-environment %d: %w", index, err)
		}
	}
	if err := s.setEnv(raw); err != nil {
		return nil, fmt.Errorf("env: sub-environment %d: %w", index, err)
	}
	return s, nil
}

func (s *slot) callMake() (raw any, err error) {
	defer recoverTo(&err)
	raw, err = s.make(s.index)
	if err == nil && raw == nil {
		err = errors.New("the maker returned nil")
	}
	return raw, err
}

func (s *slot) setEnv(raw any) error {
	var m MultiAgentEnv
	switch e := raw.(type) {
	case MultiAgentEnv:
		m = e
	case Env:
		m = newSingleAgent(e)
	default:
		return fmt.Errorf("want an Env or a MultiAgentEnv, got %T", raw)
	}
	s.raw, s.env = raw, m
	s.actSpace = make(map[AgentID]spaces.Space, len(m.PossibleAgents()))
	for _, id := range m.PossibleAgents() {
		s.actSpace[id] = m.ActionSpace(id)
	}
	return nil
}

func (s *slot) space(id AgentID) spaces.Space {
	sp, ok := s.actSpace[id]
	if !ok {
		sp = s.env.ActionSpace(id)
		s.actSpace[id] = sp
	}
	return sp
}

func (s *slot) run(reset bool, seed Seed) (err error) {
	defer recoverTo(&err)
	if reset {
		return s.env.Reset(seed, &s.out)
	}
	return s.env.Step(s.acts, &s.out)
}

// seedFor returns the seed of a reset: the caller's, else on the first reset of an instance
// BaseEnvOptions.Seed + index + restarts*numEnvs, else none.
func (s *slot) seedFor(seed Seed) Seed {
	if seed.Set || !s.baseSeed.Set || s.instResets > 0 {
		return seed
	}
	return WithSeed(s.baseSeed.Value + uint64(s.index) + uint64(s.restarts)*uint64(s.numEnvs))
}

func (s *slot) doReset(seed Seed) {
	s.wasReset, s.fault, s.restarted = true, nil, false
	if s.dead {
		if err := s.recreate(); err != nil {
			s.fault = &SubEnvError{Env: s.index, Op: "restart", Err: err}
			return
		}
	}
	if err := s.run(true, s.seedFor(seed)); err != nil {
		s.failed("reset", err)
		return
	}
	s.instResets++
}

func (s *slot) doStep() {
	s.wasReset, s.fault, s.restarted = false, nil, false
	if err := s.run(false, Seed{}); err != nil {
		s.failed("step", err)
	}
}

func (s *slot) failed(op string, err error) {
	s.fault = &SubEnvError{Env: s.index, Op: op, Err: err}
	if !s.restart {
		return
	}
	if rerr := s.recreate(); rerr != nil {
		s.dead = true
		s.fault = &SubEnvError{Env: s.index, Op: "restart", Err: fmt.Errorf("recreating after %s failed (%v): %w", op, err, rerr)}
		return
	}
	s.restarted = true
}

// recreate replaces the environment with a new one from the maker, closing the old one when
// it is an io.Closer.
func (s *slot) recreate() error {
	raw, err := s.callMake()
	if err == nil {
		err = s.setEnv(raw)
	}
	if err != nil {
		s.dead = true
		return err
	}
	s.restarts++
	s.instResets, s.dead = 0, false
	s.out.Clear()
	return nil
}

func (s *slot) close() error {
	if c, ok := s.raw.(io.Closer); ok {
		return safeClose(c)
	}
	return nil
}

func safeClose(c io.Closer) (err error) {
	defer recoverTo(&err)
	return c.Close()
}

func safeRender(r Renderer) (v any, err error) {
	defer recoverTo(&err)
	return r.Render()
}

// report appends the agents of s's last reset or step to dst and records which of them act
// next. Agents of an episode that ended (__all__) are reported done.
func (t *table) report(s *slot, dst *Batch) {
	out := &s.out
	all := out.AllTerminated || out.AllTruncated
	dst.Envs = append(dst.Envs, EnvStatus{Env: s.index, Terminated: out.AllTerminated, Truncated: out.AllTruncated, Reset: s.wasReset,
		Info: out.Info})
	set := &t.sets[s.index]
	set.exp = set.exp[:0]
	for j := range out.Agents {
		a := &out.Agents[j]
		term, trunc := a.Terminated || out.AllTerminated, a.Truncated || out.AllTruncated
		o := dst.AddAgent()
		o.Env, o.Agent, o.Obs, o.Reward, o.Terminated, o.Truncated, o.Info = s.index, a.ID, a.Obs, a.Reward, term, trunc, a.Info
		if !term && !trunc && a.Obs != nil { // a reward without an observation does not act
			set.exp = append(set.exp, expect{id: a.ID, space: s.space(a.ID)})
		}
	}
	if all {
		set.state = stEnded
	} else {
		t.setAwaiting(s.index)
	}
}

// takeActions moves the matched actions of sub-environment i into s.acts; with copyData the
// action values are copied into buffers owned by s (for a step on another goroutine).
func (t *table) takeActions(s *slot, copyData bool) {
	set := &t.sets[s.index]
	s.acts = s.acts[:0]
	for j := range set.exp {
		e := &set.exp[j]
		act := e.action
		if copyData {
			for len(s.actBuf) <= j {
				s.actBuf = append(s.actBuf, nil)
			}
			s.actBuf[j] = append(s.actBuf[j][:0], act...)
			act = s.actBuf[j]
		}
		s.acts = append(s.acts, AgentAction{ID: e.id, Action: act})
		e.got, e.action = false, nil
	}
}
