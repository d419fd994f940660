package envrunner_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	first := len(seen)
	for _, r := range runners {
		r.SetLimits(150, 0)
	}
	require.NoError(t, g.Run(context.Background(), envrunner.GroupOptions{Sink: sink}))
	assert.Equal(t, int64(300), g.Counters().EnvSteps)
	assert.Equal(t, int64(300), rows)
	assert.Equal(t, first, len(seen), "the second Run hands over the first one's batches")
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
