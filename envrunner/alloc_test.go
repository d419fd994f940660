package envrunner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/models"
)

// allocCase is a runner configuration whose steady state should not allocate.
type allocCase struct {
	name, model, env string
	envCfg           env.Config
	cfg              envrunner.Config
	deferred         bool // rows deferred (envrunner.SetDeferEnvs), whatever the size
}

func allocCases() []allocCase {
	return []allocCase{
		{name: "cartpole", model: "cartpole_mlp", env: "CartPole-v1"},
		{name: "cartpole_gae_complete", model: "cartpole_mlp", env: "CartPole-v1",
			cfg: envrunner.Config{GAE: &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}, BatchMode: envrunner.CompleteEpisodes}},
		{name: "lstm", model: "lstm_policy", env: "StatelessCartPole", envCfg: env.Config{"max_episode_steps": 50},
			cfg: envrunner.Config{GAE: &envrunner.GAE{Gamma: 0.99, Lambda: 0.95}}},
		{name: "multiagent_cartpole", model: "cartpole_mlp", env: "MultiAgentCartPole", envCfg: env.Config{"num_agents": 3},
			cfg: envrunner.Config{CountStepsBy: envrunner.AgentSteps}},
		{name: "random_policy", env: "RandomEnv", envCfg: env.Config{"min_episode_len": 5, "max_episode_len": 40}},
	}
}

// allocRunner builds the case's runner over numEnvs sub-environments.
func allocRunner(tb testing.TB, c allocCase, numEnvs, frag int) *envrunner.Runner {
	tb.Helper()
	cfg := c.cfg
	cfg.Env = makeEnv(tb, c.env, c.envCfg, envOpts{numEnvs: numEnvs, seed: 1})
	cfg.NumEnvs, cfg.FragmentLength, cfg.Seed = numEnvs, frag, 1
	if c.model == "" {
		cfg.Policies = randomPolicies(envrunner.DefaultPolicyID)
	} else {
		var p *models.Policy = bundledPolicy(tb, c.model)
		cfg.Policies = singlePolicy(p, true)
	}
	return newRunner(tb, cfg)
}

// TestSteadyStateAllocations: once warm, Sample into the same batch allocates less than 0.01
// times per environment step (16 sub-environments, 512 env steps per fragment); the cartpole
// cases also with their rows deferred to defRows, as at thousands of sub-environments.
func TestSteadyStateAllocations(t *testing.T) {
	if underRace {
		t.Skip("the race detector allocates")
	}
	if testing.Short() {
		t.Skip("short")
	}
	const envs, frag = 16, 32
	cases := allocCases()
	// The cartpole cases again with their column runs' rows waiting in defRows, as at
	// hundreds of sub-environments and more (SetDeferEnvs).
	for _, c := range allocCases()[:2] {
		c.name += "_deferred"
		c.deferred = true
		cases = append(cases, c)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.deferred {
				defer envrunner.SetDeferEnvs(1, 64<<20)()
			}
			r := allocRunner(t, c, envs, frag)
			var mb envrunner.MultiAgentBatch
			var ms []envrunner.RolloutMetrics
			// Warm up: the episode and record pools, trajectories and batch columns grow to
			// their working sizes.
			for range 100 {
				require.NoError(t, r.Sample(&mb))
				ms = r.Metrics(ms[:0])
			}
			c0 := r.Counters()
			const runs = 20
			allocs := testing.AllocsPerRun(runs, func() {
				if err := r.Sample(&mb); err != nil {
					panic(err)
				}
				ms = r.Metrics(ms[:0]) // metrics are handed over, as a caller would
			})
			steps := float64(r.Counters().EnvSteps-c0.EnvSteps) / (runs + 1)
			perStep := allocs / steps
			t.Logf("%.2f allocations per Sample of %.0f env steps: %.5f per env step", allocs, steps, perStep)
			require.Less(t, perStep, 0.01)
		})
	}
}

// TestBatchesSizedOnce: the runner sizes its first batch for a fragment's steps and each
// batch that comes back to it for a fragment like the last one, before filling it; in
// truncate_episodes mode counting env steps with an agent per sub-environment, where every
// fragment has the same rows, no column grows while it is filled (a grown column's capacity
// would be rounded up past its length).
func TestBatchesSizedOnce(t *testing.T) {
	const envs, frag = 4, 8
	for _, c := range allocCases() {
		if c.cfg.BatchMode == envrunner.CompleteEpisodes || c.cfg.CountStepsBy == envrunner.AgentSteps {
			continue // fragments of different rows
		}
		t.Run(c.name, func(t *testing.T) {
			r := allocRunner(t, c, envs, frag)
			for i := range 4 {
				var mb envrunner.MultiAgentBatch // the runner fills the storage it got from the last one
				require.NoError(t, r.Sample(&mb))
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				require.Equal(t, envs*frag, b.Count)
				for name, lc := range columnSizes(b) {
					require.Equal(t, lc[0], lc[1], "batch %d: column %s has room for %d values, holds %d", i, name, lc[1], lc[0])
				}
			}
		})
	}
}

// columnSizes returns the length and capacity of every column of b that holds values
// (seq_lens aside: a batch is not sized for it).
func columnSizes(b *envrunner.SampleBatch) map[string][2]int {
	m := map[string][2]int{}
	add := func(name string, l, c int) {
		if l > 0 {
			m[name] = [2]int{l, c}
		}
	}
	add("obs", len(b.Obs), cap(b.Obs))
	add("new_obs", len(b.NewObs), cap(b.NewObs))
	add("actions", len(b.Actions), cap(b.Actions))
	add("rewards", len(b.Rewards), cap(b.Rewards))
	add("terminateds", len(b.Terminateds), cap(b.Terminateds))
	add("truncateds", len(b.Truncateds), cap(b.Truncateds))
	add("eps_id", len(b.EpsID), cap(b.EpsID))
	add("env_id", len(b.EnvID), cap(b.EnvID))
	add("agent_index", len(b.AgentIndex), cap(b.AgentIndex))
	add("agent_id", len(b.AgentID), cap(b.AgentID))
	add("t", len(b.T), cap(b.T))
	add("action_dist_inputs", len(b.ActionDistInputs), cap(b.ActionDistInputs))
	add("action_logp", len(b.ActionLogp), cap(b.ActionLogp))
	add("vf_preds", len(b.VfPreds), cap(b.VfPreds))
	for k := range b.StateIn {
		add(fmt.Sprintf("state_in_%d", k), len(b.StateIn[k]), cap(b.StateIn[k]))
		add(fmt.Sprintf("state_out_%d", k), len(b.StateOut[k]), cap(b.StateOut[k]))
	}
	add("advantages", len(b.Advantages), cap(b.Advantages))
	add("value_targets", len(b.ValueTargets), cap(b.ValueTargets))
	return m
}

// BenchmarkSample measures Sample on CartPole-v1 with the bundled policy: env steps per
// second and allocations per fragment.
func BenchmarkSample(b *testing.B) {
	for _, c := range allocCases() {
		for _, envs := range []int{16, 64} {
			b.Run(fmt.Sprintf("%s/envs=%d", c.name, envs), func(b *testing.B) {
				r := allocRunner(b, c, envs, 32)
				var mb envrunner.MultiAgentBatch
				var ms []envrunner.RolloutMetrics
				for range 5 {
					require.NoError(b, r.Sample(&mb))
				}
				before := r.Counters().EnvSteps
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := r.Sample(&mb); err != nil {
						b.Fatal(err)
					}
					ms = r.Metrics(ms[:0])
				}
				steps := float64(r.Counters().EnvSteps - before)
				b.ReportMetric(steps/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}

// The per-agent returns of multi-agent episodes are cut from one slab: each episode's slice
// is its own, and a caller appending to one does not overwrite the next.
func TestAgentReturnsDoNotAlias(t *testing.T) {
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "RandomMultiAgentEnv", env.Config{"num_agents": 3, "min_episode_len": 2, "max_episode_len": 6, "reward_is_step": true},
		envOpts{numEnvs: 2, seed: 3}), NumEnvs: 2, Policies: randomPolicies(envrunner.DefaultPolicyID), FragmentLength: 600})
	var mb envrunner.MultiAgentBatch
	require.NoError(t, r.Sample(&mb))
	ms := r.Metrics(nil)
	require.Greater(t, len(ms), 2*256/3, "enough episodes to fill more than one slab")
	want := make([][]envrunner.AgentReward, len(ms))
	for i, m := range ms {
		require.Len(t, m.AgentReturns, 3)
		want[i] = slices.Clone(m.AgentReturns)
		sum := 0.0
		for _, ar := range m.AgentReturns {
			sum += ar.Reward
		}
		require.Equal(t, m.EpisodeReturn, sum, "episode %d", i)
	}
	for i := range ms {
		ms[i].AgentReturns = append(ms[i].AgentReturns, envrunner.AgentReward{Agent: "intruder", Reward: -1})
	}
	for i := range ms {
		require.Equal(t, want[i], ms[i].AgentReturns[:3], "episode %d", i)
	}
}

// TestTakeDropsStaleAgentIDs: the agent ids a batch held when it was given to Take are gone
// from its storage by the time the runner hands it back filled with a truncate_episodes
// fragment, written straight into that storage (Take leaves the ids for the fragment's rows
// to write over and clears the rest), and Reset clears them.
func TestTakeDropsStaleAgentIDs(t *testing.T) {
	const envs, frag, stale = 4, 8, 100
	r := allocRunner(t, allocCases()[0], envs, frag)
	var mb envrunner.MultiAgentBatch
	old := mb.Policy(envrunner.DefaultPolicyID)
	for range stale {
		old.AgentID = append(old.AgentID, "stale")
	}
	storage := old.AgentID[:cap(old.AgentID)]
	require.NoError(t, r.Sample(&mb))
	b := mb.PolicyBatches[envrunner.DefaultPolicyID]
	require.Equal(t, envs*frag, b.Count)
	require.Less(t, b.Count, stale, "some stale ids are past the fragment's rows")
	require.Same(t, &storage[0], &b.AgentID[:1][0], "the runner filled the storage it was given")
	require.NotContains(t, storage, "stale")
	for _, id := range b.AgentID {
		require.Equal(t, env.DefaultAgentID, id)
	}
	b.Reset()
	require.Equal(t, make([]string, len(storage)), storage)
}
