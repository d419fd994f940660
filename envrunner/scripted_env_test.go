package envrunner_test

import (
	"errors"
	"fmt"
	"slices"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// scriptedEnv is a BaseEnv of n sub-environments whose episodes follow a script, to check
// the runner against RLlib's BaseEnv semantics. Every episode of a sub-environment runs
// length steps; agent k observes [env, episode, t, k] (episode counts the sub-environment's
// episodes from 0) and gets reward 1 per step. Hooks change the script; nil means the
// default. It accepts any actions (it records them in sent) and never checks them.
type scriptedEnv struct {
	n, length int
	agents    []env.AgentID
	// async makes TryReset asynchronous: the first observations come with the next Poll.
	async bool
	// logged returns the action the environment itself takes at this observation (reported
	// as OffPolicyAction with it), or nil.
	logged func(e, ep, t int, agent env.AgentID) []float32
	// ready says whether sub-environment e, waiting for its step, reports it in Poll number
	// poll (1, 2, ...); nil: always.
	ready func(e, poll int) bool
	// fail says whether the step of sub-environment e to t fails (reported as EnvStatus.Err,
	// like a restarted sub-environment).
	fail func(e, ep, t int) bool
	// common returns the episode-wide info of a step (EnvStatus.Info), or nil.
	common func(e, ep, t int) env.Info
	// skip says whether agent k sits out step t (no observation; never at a reset or the
	// episode's end); nil: no agent does.
	skip func(t, k int) bool
	// info returns agent k's info at step t (AgentObs.Info), or nil.
	info func(e, ep, t, k int) env.Info
	// joins returns the step at which agent k first observes in each episode (from then on
	// at every step, as skip allows); nil: at the reset.
	joins func(k int) int

	ep, t     []int
	waiting   []bool // actions sent, step not reported yet
	resetting []bool // an asynchronous reset in flight
	needReset []bool
	polls     int
	// events logs "reset e" for every TryReset, for the callbacks to interleave with.
	events *[]string
	sent   map[scriptKey][]float32 // the actions the runner sent, by the observation they answer
}

// scriptKey names one observation of one agent.
type scriptKey struct {
	env, ep, t int
	agent      env.AgentID
}

var errScriptedFault = errors.New("scripted sub-environment failure")

func newScriptedEnv(n, length int, agents ...env.AgentID) *scriptedEnv {
	if len(agents) == 0 {
		agents = []env.AgentID{env.DefaultAgentID}
	}
	return &scriptedEnv{n: n, length: length, agents: agents, ep: make([]int, n), t: make([]int, n),
		waiting: make([]bool, n), resetting: make([]bool, n), needReset: make([]bool, n),
		events: new([]string), sent: map[scriptKey][]float32{}}
}

// scriptedPolicies are random policies for scriptedEnv's spaces.
func scriptedPolicies(ids ...envrunner.PolicyID) map[envrunner.PolicyID]envrunner.PolicyConfig {
	m := map[envrunner.PolicyID]envrunner.PolicyConfig{}
	for _, id := range ids {
		m[id] = envrunner.PolicyConfig{Random: true, ObservationSpace: spaces.NewBox(-1e6, 1e6, 4), ActionSpace: &spaces.Discrete{N: 2}}
	}
	return m
}

// keyOfRow names the observation of row i of a batch of scriptedEnv rows.
func keyOfRow(b *envrunner.SampleBatch, i int, agents []env.AgentID) scriptKey {
	o := envrunner.Row(b.Obs, b.ObsWidth, i)
	return scriptKey{env: int(o[0]), ep: int(o[1]), t: int(o[2]), agent: agents[int(o[3])]}
}

func (s *scriptedEnv) report(dst *env.Batch, e int, reset bool) {
	ep, t := s.ep[e], s.t[e]
	end := t == s.length
	st := env.EnvStatus{Env: e, Reset: reset, Terminated: end}
	if s.common != nil {
		st.Info = s.common(e, ep, t)
	}
	dst.Envs = append(dst.Envs, st)
	for k, id := range s.agents {
		if s.skip != nil && !reset && !end && s.skip(t, k) {
			continue
		}
		if s.joins != nil && t < s.joins(k) {
			continue
		}
		a := dst.AddAgent()
		a.Env, a.Agent, a.Obs, a.Terminated = e, id, []float32{float32(e), float32(ep), float32(t), float32(k)}, end
		if s.info != nil {
			a.Info = s.info(e, ep, t, k)
		}
		if !reset {
			a.Reward = 1
		}
		if s.logged != nil && !end {
			a.OffPolicyAction = s.logged(e, ep, t, id)
		}
	}
	s.needReset[e] = end
}

func (s *scriptedEnv) Poll(dst *env.Batch) error {
	s.polls++
	if s.polls == 1 {
		for e := range s.n {
			s.report(dst, e, true)
		}
		return nil
	}
	for e := range s.n {
		switch {
		case s.resetting[e]:
			s.resetting[e] = false
			s.report(dst, e, true)
		case s.waiting[e] && (s.ready == nil || s.ready(e, s.polls)):
			s.waiting[e] = false
			s.t[e]++
			if s.fail != nil && s.fail(e, s.ep[e], s.t[e]) {
				s.needReset[e] = true
				dst.Envs = append(dst.Envs, env.EnvStatus{Env: e, Err: &env.SubEnvError{Env: e, Op: "step", Err: errScriptedFault}})
				continue
			}
			s.report(dst, e, false)
		}
	}
	return nil
}

func (s *scriptedEnv) SendActions(actions []env.Action) error {
	for _, a := range actions {
		if a.Env < 0 || a.Env >= s.n || s.needReset[a.Env] || s.resetting[a.Env] {
			return fmt.Errorf("scriptedEnv: action for sub-environment %d, which does not wait for one", a.Env)
		}
		s.waiting[a.Env] = true
		s.sent[scriptKey{a.Env, s.ep[a.Env], s.t[a.Env], a.Agent}] = slices.Clone(a.Action)
	}
	return nil
}

func (s *scriptedEnv) TryReset(e env.EnvID, _ env.Seed, dst *env.Batch) (bool, error) {
	*s.events = append(*s.events, fmt.Sprintf("reset %d", e))
	s.ep[e]++
	s.t[e] = 0
	s.waiting[e] = false
	if s.async {
		s.resetting[e] = true
		s.needReset[e] = false
		return true, nil
	}
	s.report(dst, e, true)
	return false, nil
}

func (s *scriptedEnv) Stop() error { return nil }

// idEnv is a scriptedEnv whose episodes have ids given from outside (env.EpisodeIDer), and
// counts how often the runner asks.
type idEnv struct {
	*scriptedEnv
	asked int
}

func (e *idEnv) EpisodeID(i env.EnvID) string {
	e.asked++
	return fmt.Sprintf("ext-%d-%d", i, e.ep[i])
}
