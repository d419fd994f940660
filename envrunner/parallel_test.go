package envrunner_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// randomGroup is a Group of two runners of random policies (no runtime needed) over CartPole,
// each with envs sub-environments (seeded alike) and cfg's other settings; it is closed when
// the test ends.
func randomGroup(t *testing.T, envs int, cfg envrunner.Config) (*envrunner.Group, []*envrunner.Runner) {
	t.Helper()
	pols := columnarRandom(t)
	var runners []*envrunner.Runner
	for w := range 2 {
		c := cfg
		c.Env, c.NumEnvs, c.Worker, c.Policies = vectorOf(t, "CartPole-v1", nil, envs, 0), envs, w, pols
		r, err := envrunner.New(c)
		require.NoError(t, err)
		runners = append(runners, r)
	}
	g := envrunner.NewGroup(runners)
	t.Cleanup(func() { require.NoError(t, g.Close()) })
	return g, runners
}

// TestGroupRunAgain runs a group of two runners (random policies, no runtime needed) with
// CountAndRelease, raises their limits and runs it again: the second Run goes on where the
// first stopped, hands over the same batches (their storage reused), and the sink counts
// every row.
func TestGroupRunAgain(t *testing.T) {
	g, runners := randomGroup(t, 3, envrunner.Config{Seed: 1, FragmentLength: 10, MaxEnvSteps: 60})
	var batches, rows int64
	count := g.CountAndRelease(&batches, &rows)
	seen := map[*envrunner.MultiAgentBatch]int{}
	sink := func(b *envrunner.MultiAgentBatch) error {
		seen[b]++
		return count(b)
	}
	require.NoError(t, g.Run(context.Background(), envrunner.GroupOptions{Sink: sink}))
	assert.Equal(t, int64(120), g.Counters().EnvSteps)
	assert.Equal(t, int64(120), rows, "every env step is a row (one agent per sub-environment)")
	for _, r := range runners {
		r.SetLimits(150, 0)
	}
	require.NoError(t, g.Run(context.Background(), envrunner.GroupOptions{Sink: sink}))
	assert.Equal(t, int64(300), g.Counters().EnvSteps)
	assert.Equal(t, int64(300), rows)
	// The second Run reuses the first one's storage: each runner has two batches at most (one
	// filling while the sink holds the other), whichever run first needed its second one (a
	// runner whose first batch came back in time used one batch in the first run: comparing
	// the two runs' counts failed 5 times in 200 under load).
	assert.LessOrEqual(t, len(seen), 4, "two batches per runner")
}

// TestGroupMetricsWhileRunning takes the runners' episode metrics from the sink, while they
// step (run it with -race): the episodes are those of the same run whose metrics are taken
// once at the end, each once.
func TestGroupMetricsWhileRunning(t *testing.T) {
	run := func(during bool) map[[2]int64]int {
		g, _ := randomGroup(t, 4, envrunner.Config{Seed: 2, FragmentLength: 8, MaxEnvSteps: 4000})
		var batches, rows int64
		count := g.CountAndRelease(&batches, &rows)
		ids := map[[2]int64]int{}
		var ms []envrunner.RolloutMetrics
		take := func() {
			ms = g.Metrics(ms[:0])
			for _, m := range ms {
				ids[[2]int64{int64(m.Worker), m.EpisodeID}]++
			}
		}
		sink := func(b *envrunner.MultiAgentBatch) error {
			if during {
				take()
			}
			return count(b)
		}
		require.NoError(t, g.Run(context.Background(), envrunner.GroupOptions{Sink: sink}))
		take()
		return ids
	}
	during, after := run(true), run(false)
	require.Greater(t, len(after), 100)
	assert.Equal(t, after, during)
	for id, n := range during {
		require.Equal(t, 1, n, "episode %v taken %d times", id, n)
	}
}

// TestMetricsBounded: a runner keeps the metrics of the last MaxMetrics episodes, oldest
// first, and counts the ones it dropped.
func TestMetricsBounded(t *testing.T) {
	run := func(limit int) ([]envrunner.RolloutMetrics, envrunner.Counters) {
		r, err := envrunner.New(envrunner.Config{Env: vectorOf(t, "CartPole-v1", nil, 4, 0), NumEnvs: 4, Seed: 3,
			FragmentLength: 8, Policies: columnarRandom(t), MaxEnvSteps: 2000, MaxMetrics: limit, NoSamples: true})
		require.NoError(t, err)
		defer r.Close()
		for !r.Done() {
			require.NoError(t, r.Step())
		}
		return r.Metrics(nil), r.Counters()
	}
	all, c := run(-1)
	require.Greater(t, len(all), 30)
	require.Zero(t, c.MetricsDropped)
	last, c := run(10)
	assert.Equal(t, all[len(all)-10:], last, "the last 10, oldest first")
	assert.Equal(t, int64(len(all)-10), c.MetricsDropped)
}

// oneRunnerGroup is a Group of one runner of a random policy over envs CartPole
// sub-environments, fragments of frag env steps, up to max; it is closed when the test ends.
func oneRunnerGroup(t *testing.T, envs, frag int, max int64) (*envrunner.Group, *envrunner.Runner) {
	t.Helper()
	r, err := envrunner.New(envrunner.Config{Env: vectorOf(t, "CartPole-v1", nil, envs, 0), NumEnvs: envs, Seed: 4,
		Policies: columnarRandom(t), FragmentLength: frag, MaxEnvSteps: max})
	require.NoError(t, err)
	g := envrunner.NewGroup([]*envrunner.Runner{r})
	t.Cleanup(func() { require.NoError(t, g.Close()) })
	return g, r
}

// runWithin runs g with sink, failing the test instead of hanging when Run does not return
// (a batch the last Run never gave back leaves the runner waiting for it).
func runWithin(t *testing.T, g *envrunner.Group, sink func(*envrunner.MultiAgentBatch) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.Run(context.Background(), envrunner.GroupOptions{Sink: sink}) }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Group.Run did not return: a batch was not given back")
		return nil
	}
}

// TestGroupOfOneStepsBetweenSinkCalls: the runner of a one-runner group steps on Run's
// goroutine, between the sink's calls: at every call it has taken exactly the env steps of
// the rows handed over (one agent per sub-environment), and it does not step while the sink
// holds the batch. On a goroutine of its own, with a second free batch, it would already
// have stepped the next fragment.
func TestGroupOfOneStepsBetweenSinkCalls(t *testing.T) {
	g, r := oneRunnerGroup(t, 3, 10, 90)
	var rows int64
	var calls int
	sink := func(b *envrunner.MultiAgentBatch) error {
		calls++
		before := r.Progress().EnvSteps
		time.Sleep(20 * time.Millisecond) // long enough for a runner of its own to step
		assert.Equal(t, before, r.Progress().EnvSteps, "the runner stepped while the sink held batch %d", calls)
		rows += int64(b.Rows())
		assert.Equal(t, rows, before, "batch %d", calls)
		g.Release(b)
		return nil
	}
	require.NoError(t, runWithin(t, g, sink))
	assert.Equal(t, int64(90), rows)
	assert.Equal(t, 4, calls, "three fragments of 30 env steps and the run's last, empty, batch")
}

// TestGroupOfOneSinkError: a sink error stops a one-runner group's Run, which returns it
// (wrapped: "sink: ..."); the batches handed over after it, the last partial one included,
// are given back by Run, so the next Run goes on from where the runner stopped.
func TestGroupOfOneSinkError(t *testing.T) {
	g, r := oneRunnerGroup(t, 3, 10, 300)
	errFull := errors.New("full")
	var calls int
	failing := func(b *envrunner.MultiAgentBatch) error {
		calls++
		if calls == 2 {
			return errFull // b is kept: Run gives it back
		}
		g.Release(b)
		return nil
	}
	err := runWithin(t, g, failing)
	require.ErrorIs(t, err, errFull)
	assert.Contains(t, err.Error(), "sink: full")
	assert.Equal(t, 2, calls, "no batch reaches the sink after its error")
	stopped := r.Counters().EnvSteps
	assert.Less(t, stopped, int64(300), "the runner stopped at the error")
	var batches, rows int64
	require.NoError(t, runWithin(t, g, g.CountAndRelease(&batches, &rows)))
	assert.Equal(t, int64(300), r.Counters().EnvSteps)
}

// TestGroupOfOneRunnerError: a one-runner group's Run returns the runner's error as
// "worker 0: ..." (as a group of several does), after handing its last batch to the sink.
func TestGroupOfOneRunnerError(t *testing.T) {
	r, err := envrunner.New(envrunner.Config{Env: makeEnv(t, "RandomEnv", env.Config{"fail_at_step": 7}, envOpts{numEnvs: 2}),
		NumEnvs: 2, Policies: randomPolicies(envrunner.DefaultPolicyID), FragmentLength: 4})
	require.NoError(t, err)
	g := envrunner.NewGroup([]*envrunner.Runner{r})
	t.Cleanup(func() { require.NoError(t, g.Close()) })
	var batches, rows int64
	err = runWithin(t, g, g.CountAndRelease(&batches, &rows))
	require.ErrorIs(t, err, env.ErrInjected)
	assert.Contains(t, err.Error(), "worker 0: envrunner: send actions")
	assert.Equal(t, r.Counters().AgentSteps, rows, "every recorded row reached the sink")
}
