package main

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// TestRunSummaryCountsEveryEpisode: a run of a number of steps takes its episodes' metrics
// with the batches, and its summary still counts every episode that ended, the last batch's
// too: the episodes, returns and lengths are those of the episodes whose last row is in the
// written batches (two workers, a random policy: hundreds of short CartPole episodes).
func TestRunSummaryCountsEveryEpisode(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	s := runJSON(t, "--model", "random", "--num-envs", "6", "--workers", "2", "--steps", "6000",
		"--fragment-length", "50", "--seed", "5", "--out", out)
	returns := map[int64]float64{}
	lengths := map[int64]int{}
	var ended []int64
	for _, mb := range readBatches(t, s.Out) {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		for i := range b.Count {
			id := b.EpsID[i]
			returns[id] += float64(b.Rewards[i])
			lengths[id]++
			if b.Terminateds[i] || b.Truncateds[i] {
				ended = append(ended, id)
			}
		}
	}
	require.Greater(t, len(ended), 100)
	var sum, length float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, id := range ended {
		sum += returns[id]
		length += float64(lengths[id])
		lo, hi = min(lo, returns[id]), max(hi, returns[id])
	}
	n := float64(len(ended))
	assert.Equal(t, int64(len(ended)), s.Episodes)
	assert.InDelta(t, sum/n, s.EpisodeReturnMean, 1e-9)
	assert.InDelta(t, length/n, s.EpisodeLenMean, 1e-9)
	assert.Equal(t, lo, s.EpisodeReturnMin)
	assert.Equal(t, hi, s.EpisodeReturnMax)
}

// TestEpisodeTotals: faulty episodes are left out; no episode leaves the summary at zero.
func TestEpisodeTotals(t *testing.T) {
	var e episodeTotals
	var s runSummary
	e.fill(&s)
	assert.Equal(t, runSummary{}, s)
	e.add([]envrunner.RolloutMetrics{{EpisodeReturn: 3, EpisodeLength: 4}, {EpisodeReturn: -9, EpisodeLength: 1, Faulty: true}})
	e.add([]envrunner.RolloutMetrics{{EpisodeReturn: 1, EpisodeLength: 2}})
	e.fill(&s)
	assert.Equal(t, runSummary{Episodes: 2, EpisodeReturnMean: 2, EpisodeLenMean: 3, EpisodeReturnMin: 1, EpisodeReturnMax: 3}, s)
}

// TestTakingMetrics: the sink takes the metrics with every batch, so none are left in
// the runners after the run (they would keep a whole run's otherwise), and the totals count
// every episode once.
func TestTakingMetrics(t *testing.T) {
	be, err := env.ToBaseEnv(func(int) (any, error) { return env.Make("CartPole-v1", nil) },
		env.BaseEnvOptions{NumEnvs: 4, Seed: env.WithSeed(2)})
	require.NoError(t, err)
	r, err := envrunner.New(envrunner.Config{Env: be, NumEnvs: 4, FragmentLength: 25, MaxEnvSteps: 4000, MaxMetrics: -1,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true,
			ObservationSpace: spaces.NewBox(-1, 1, 4), ActionSpace: &spaces.Discrete{N: 2}}}})
	require.NoError(t, err)
	g := envrunner.NewGroup([]*envrunner.Runner{r})
	defer g.Close()
	var totals episodeTotals
	var batches, rows int64
	require.NoError(t, g.Run(context.Background(), envrunner.GroupOptions{Sink: takingMetrics(g, totals.add, g.CountAndRelease(&batches, &rows))}))
	assert.Empty(t, g.Metrics(nil), "metrics left in the runner")
	require.Greater(t, totals.N, int64(50))
	assert.Equal(t, g.Counters().Episodes, totals.N)
}
