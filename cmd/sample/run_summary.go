package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/runspec"
)

// runSummary is the JSON summary of sample run (DESIGN.md's CLI contract), its counters and
// episode metrics under RLlib's new API stack names (envrunner.NewAPIStackMetrics; the
// table of every key is docs/metrics.md).
type runSummary struct {
	Env               string              `json:"env"`
	Model             string              `json:"model"`
	NumEnvs           int                 `json:"num_envs"`
	Workers           int                 `json:"workers"`
	Explore           bool                `json:"explore"`
	Seed              uint64              `json:"seed"`
	EnvSteps          int64               `json:"num_env_steps_sampled_lifetime"`
	AgentSteps        int64               `json:"num_agent_steps_sampled_lifetime"`
	Episodes          int64               `json:"num_episodes_lifetime"`
	FaultyEpisodes    int64               `json:"num_env_step_failures"`
	EpisodeReturnMean float64             `json:"episode_return_mean"`
	EpisodeReturnMin  float64             `json:"episode_return_min"`
	EpisodeReturnMax  float64             `json:"episode_return_max"`
	EpisodeLenMean    float64             `json:"episode_len_mean"`
	Seconds           float64             `json:"seconds"`
	StepsPerSec       float64             `json:"num_env_steps_sampled_lifetime_throughput"`
	Perf              envrunner.PerfStats `json:"perf"`
	Out               []string            `json:"out,omitempty"`
	Batches           int64               `json:"batches"`
	Rows              int64               `json:"rows"`
	Interrupted       bool                `json:"interrupted,omitempty"`
}

// summarize reports the run. totals holds the episodes taken with the batches (a run of a
// number of steps); the runners' metrics not taken yet are added here.
func summarize(f *runFlags, r *runspec.Run, elapsed time.Duration, totals *episodeTotals) runSummary {
	s, g := &f.spec, r.Group
	c := g.Counters()
	sum := runSummary{Env: s.Env, Model: r.Model, NumEnvs: s.NumEnvs, Workers: s.Workers, Explore: s.Explore, Seed: s.Seed,
		EnvSteps: c.EnvSteps, AgentSteps: c.AgentSteps, FaultyEpisodes: c.FaultyEpisodes,
		Seconds: elapsed.Seconds(), Perf: g.PerfStats()}
	ms := g.Metrics(nil)
	if s.MaxEpisodes > 0 {
		// Exactly that many count (the runners stop starting episodes that count once their
		// share started, so none is left out by its length).
		ms = slices.DeleteFunc(ms, func(m envrunner.RolloutMetrics) bool { return m.Faulty })
		ms = ms[:min(int64(len(ms)), s.MaxEpisodes)]
	}
	totals.add(ms)
	totals.fill(&sum)
	if elapsed > 0 {
		sum.StepsPerSec = float64(c.EnvSteps) / elapsed.Seconds()
	}
	return sum
}

func printSummary(w io.Writer, s runSummary) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("env", fmt.Sprintf("%s (%s, %s)", s.Env, plural(s.NumEnvs, "sub-environment", "sub-environments"), plural(s.Workers, "worker", "workers")))
	row("model", fmt.Sprintf("%s (explore=%v)", s.Model, s.Explore))
	row("env steps", fmt.Sprint(s.EnvSteps))
	row("agent steps", fmt.Sprint(s.AgentSteps))
	row("episodes", fmt.Sprint(s.Episodes))
	if s.FaultyEpisodes > 0 {
		row("faulty episodes", fmt.Sprint(s.FaultyEpisodes))
	}
	if s.Episodes > 0 {
		row("episode return", fmt.Sprintf("mean %.2f  min %.2f  max %.2f", s.EpisodeReturnMean, s.EpisodeReturnMin, s.EpisodeReturnMax))
		row("episode length", fmt.Sprintf("mean %.1f", s.EpisodeLenMean))
	}
	row("time", fmt.Sprintf("%.2fs", s.Seconds))
	row("throughput", fmt.Sprintf("%.0f env steps/s", s.StepsPerSec))
	row("per step (ms)", fmt.Sprintf("env wait %.4f  obs processing %.4f  inference %.4f  action processing %.4f",
		s.Perf.MeanEnvWaitMs, s.Perf.MeanRawObsProcessingMs, s.Perf.MeanInferenceMs, s.Perf.MeanActionProcessingMs))
	if len(s.Out) > 0 {
		row("output", fmt.Sprintf("%s (%s, %s)", strings.Join(s.Out, ", "), plural(s.Batches, "batch", "batches"), plural(s.Rows, "row", "rows")))
	}
	if s.Interrupted {
		row("interrupted", "yes (everything sampled so far was written)")
	}
	tw.Flush()
}
