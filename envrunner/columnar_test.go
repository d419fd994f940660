package envrunner_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// hidden hides the env.Columnar side of a BaseEnv: the runner then drives it through Poll
// and SendActions.
type hidden struct{ env.BaseEnv }

// flaky is an Env that panics on its failAt-th step (counted over its life), once.
type flaky struct {
	env.Env
	steps, failAt int
}

func (f *flaky) Step(action, obs []float32) (env.StepResult, error) {
	f.steps++
	if f.steps == f.failAt {
		panic("flaky: planned failure")
	}
	return f.Env.Step(action, obs)
}

// vectorOf builds a VectorEnv BaseEnv of n registered environments; with failAt > 0,
// sub-environment 1 panics on its failAt-th step (and is restarted).
func vectorOf(tb testing.TB, name string, cfg env.Config, n int, failAt int) env.BaseEnv {
	tb.Helper()
	made := 0
	v, err := env.NewVectorEnv(func(i int) (env.Env, error) {
		e, err := env.Make(name, cfg)
		if err != nil {
			return nil, err
		}
		made++
		if i == 1 && failAt > 0 && made <= n { // the first instance only; its restart is well
			return &flaky{Env: e.Env(), failAt: failAt}, nil
		}
		return e.Env(), nil
	}, n)
	require.NoError(tb, err)
	be, err := env.NewVectorBaseEnv(v, env.BaseEnvOptions{Seed: env.WithSeed(77), RestartFailedSubEnvironments: failAt > 0})
	require.NoError(tb, err)
	return be
}

// trace records the callbacks in order.
type trace struct {
	log []string
}

func (t *trace) OnEpisodeStart(_ *envrunner.Runner, ep *envrunner.Episode) {
	t.log = append(t.log, fmt.Sprintf("start %d %d", ep.EnvID, ep.ID))
}

func (t *trace) OnEpisodeStep(_ *envrunner.Runner, ep *envrunner.Episode) {
	t.log = append(t.log, fmt.Sprintf("step %d %d %v %v %v %v", ep.EnvID, ep.Length(), ep.LastObservation(env.DefaultAgentID), ep.LastAction(env.DefaultAgentID),
		ep.LastReward(env.DefaultAgentID), ep.LastInfo(env.DefaultAgentID)))
}

func (t *trace) OnEpisodeEnd(_ *envrunner.Runner, ep *envrunner.Episode) {
	if ep.Err != nil { // the last values of a faulty episode are the failed step's (see Episode.Err)
		t.log = append(t.log, fmt.Sprintf("faulty %d %d %v %v", ep.EnvID, ep.Length(), ep.TotalReward(), ep.Err))
		return
	}
	t.log = append(t.log, fmt.Sprintf("end %d %d %v %v %v %v %v", ep.EnvID, ep.Length(), ep.TotalReward(), ep.LastAction(env.DefaultAgentID),
		ep.LastObservation(env.DefaultAgentID), ep.LastReward(env.DefaultAgentID), ep.LastInfo(env.DefaultAgentID)))
}

// columnarCase is a configuration that TestColumnarMatchesPollSend runs both ways.
type columnarCase struct {
	name    string
	env     string
	cfg     env.Config
	model   string // a bundled model (the case skips without ONNX Runtime); "" for random policies
	explore bool
	// policies is the number of random policies (0 means 1), mapped by sub-environment
	// (episode e goes to policy e % policies).
	policies int
	mutate   func(*envrunner.Config)
	failAt   int
}

// TestColumnarMatchesPollSend runs the same configurations over a VectorEnv through the
// columnar protocol and through Poll/SendActions: batches, metrics, counters and callbacks
// must be the same. Each runs with callbacks (OnEpisodeStep: the columnar runner takes every
// row on its general path) and without (its fast path: columnProtocol.fast, the column run
// and its deferred rows).
// The random-policy cases need no runtime and run everywhere; the model cases (the model
// paths: a column run in one copy, rows through the connectors, values, RNN states) skip
// without ONNX Runtime.
func TestColumnarMatchesPollSend(t *testing.T) {
	short := env.Config{"max_episode_steps": 23}
	gae := func(c *envrunner.Config) { c.FragmentLength = 7; c.GAE = &envrunner.GAE{Gamma: 0.9, Lambda: 0.8} }
	complete := func(c *envrunner.Config) {
		c.BatchMode = envrunner.CompleteEpisodes
		c.CountStepsBy = envrunner.AgentSteps
		c.FragmentLength = 10
	}
	noSamples := func(c *envrunner.Config) { c.NoSamples = true; c.MaxEpisodes = 12 }
	cases := []columnarCase{
		{name: "random", env: "CartPole-v1", cfg: short, mutate: func(c *envrunner.Config) { c.FragmentLength = 5 }},
		{name: "random no samples", env: "CartPole-v1", cfg: short, mutate: noSamples},
		{name: "random gae truncations", env: "CartPole-v1", cfg: short, mutate: gae},
		{name: "random complete episodes by agent steps", env: "CartPole-v1", cfg: short, mutate: complete},
		{name: "random two policies", env: "CartPole-v1", cfg: short, policies: 2, mutate: gae},
		{name: "random pendulum", env: "Pendulum-v1", cfg: env.Config{"max_episode_steps": 17},
			mutate: func(c *envrunner.Config) { c.FragmentLength = 6; c.GAE = &envrunner.GAE{Gamma: 0.99, Lambda: 1} }},
		{name: "random faults", env: "CartPole-v1", cfg: short, failAt: 30, mutate: func(c *envrunner.Config) { c.FragmentLength = 8 }},
		{name: "greedy no samples", env: "CartPole-v1", cfg: short, model: "cartpole_mlp", mutate: noSamples},
		{name: "explore gae truncations", env: "CartPole-v1", cfg: short, model: "cartpole_mlp", explore: true, mutate: gae},
		{name: "complete episodes by agent steps", env: "CartPole-v1", cfg: short, model: "cartpole_mlp", explore: true, mutate: complete},
		{name: "recurrent", env: "StatelessCartPole", cfg: short, model: "lstm_policy", explore: true,
			mutate: func(c *envrunner.Config) {
				c.FragmentLength = 9
				c.MaxSeqLen = 4
				c.GAE = &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}
			}},
		{name: "gaussian", env: "Pendulum-v1", cfg: env.Config{"max_episode_steps": 17}, model: "pendulum_gaussian", explore: true,
			mutate: func(c *envrunner.Config) { c.FragmentLength = 6; c.GAE = &envrunner.GAE{Gamma: 0.99, Lambda: 1} }},
		{name: "faults", env: "CartPole-v1", cfg: short, model: "cartpole_mlp", explore: true, failAt: 30,
			mutate: func(c *envrunner.Config) { c.FragmentLength = 8 }},
		// Greedy, the episodes of every sub-environment end together, so that most steps
		// run the model over one column run, whose rows wait in the policy's deferred rows
		// when the fault comes.
		{name: "greedy faults", env: "CartPole-v1", cfg: short, model: "cartpole_mlp", failAt: 30,
			mutate: func(c *envrunner.Config) { c.FragmentLength = 8 }},
	}
	for _, c := range cases {
		for _, callbacks := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/callbacks=%v", c.name, callbacks), func(t *testing.T) {
				testColumnarMatches(t, c, callbacks)
			})
		}
		if c.model != "" { // the column run's rows deferred, as at thousands of sub-environments
			t.Run(c.name+"/deferred", func(t *testing.T) {
				defer envrunner.SetDeferEnvs(1, 64<<20)()
				testColumnarMatches(t, c, false)
			})
			t.Run(c.name+"/deferred_one_block", func(t *testing.T) { // defRows full at every step
				defer envrunner.SetDeferEnvs(1, 1)()
				testColumnarMatches(t, c, false)
			})
		}
	}
}

// columnarPolicies returns the policies of a case, and their mapping (nil for one).
func columnarPolicies(t *testing.T, c columnarCase) (map[envrunner.PolicyID]envrunner.PolicyConfig, func(env.AgentID, *envrunner.Episode) envrunner.PolicyID) {
	if c.model != "" {
		return singlePolicy(bundledPolicy(t, c.model), c.explore), nil
	}
	probe, err := env.Make(c.env, c.cfg)
	require.NoError(t, err)
	e := probe.Env()
	n := max(c.policies, 1)
	pols := map[envrunner.PolicyID]envrunner.PolicyConfig{}
	ids := make([]envrunner.PolicyID, n)
	for i := range n {
		ids[i] = fmt.Sprintf("random_%d", i)
		pols[ids[i]] = envrunner.PolicyConfig{Random: true, ObservationSpace: e.ObservationSpace(), ActionSpace: e.ActionSpace()}
	}
	if n == 1 {
		return pols, nil
	}
	return pols, func(_ env.AgentID, ep *envrunner.Episode) envrunner.PolicyID { return ids[ep.EnvID%n] }
}

func testColumnarMatches(t *testing.T, c columnarCase, callbacks bool) {
	type result struct {
		batches  []*envrunner.MultiAgentBatch
		metrics  []envrunner.RolloutMetrics
		counters envrunner.Counters
		log      []string
	}
	run := func(columnar bool) result {
		const n = 5
		be := vectorOf(t, c.env, c.cfg, n, c.failAt)
		_, isCol := be.(env.Columnar)
		require.True(t, isCol)
		if !columnar {
			be = hidden{be}
		}
		tr := &trace{}
		cfg := envrunner.Config{Env: be, NumEnvs: n, Seed: 5}
		if callbacks {
			cfg.Callbacks = tr
		}
		cfg.Policies, cfg.PolicyMapping = columnarPolicies(t, c)
		c.mutate(&cfg)
		r := newRunner(t, cfg)
		var res result
		for range 6 {
			if cfg.NoSamples {
				for range 40 {
					require.NoError(t, r.Step())
				}
				continue
			}
			b := &envrunner.MultiAgentBatch{}
			require.NoError(t, r.Sample(b))
			for _, id := range b.PolicyIDs() {
				require.NoError(t, b.Policy(id).Validate())
			}
			res.batches = append(res.batches, b)
		}
		res.metrics = r.Metrics(nil)
		res.counters = r.Counters()
		res.log = tr.log
		return res
	}
	col, gen := run(true), run(false)
	require.NotEmpty(t, col.metrics)
	require.Equal(t, gen.counters, col.counters)
	require.Equal(t, gen.metrics, col.metrics)
	require.Equal(t, gen.log, col.log)
	require.Equal(t, len(gen.batches), len(col.batches))
	for i := range gen.batches {
		require.Equal(t, gen.batches[i], col.batches[i], "batch %d", i)
	}
	if c.failAt > 0 {
		require.Positive(t, col.counters.FaultyEpisodes)
	}
}
