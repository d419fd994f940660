package main

import "github.com/onnxrl/sampler/envrunner"

// episodeTotals is what sample run's summary says of the episodes (envrunner.EpisodeTotals:
// faulty ones left out, counted apart in Counters), handed over by the runners as they go.
type episodeTotals struct{ envrunner.EpisodeTotals }

// add counts the episodes of ms that are not faulty.
func (e *episodeTotals) add(ms []envrunner.RolloutMetrics) { e.Add(ms) }

// fill writes the totals into the summary (zeros without an episode).
func (e *episodeTotals) fill(s *runSummary) {
	s.Episodes = e.N
	if e.N == 0 {
		return
	}
	s.EpisodeReturnMean, s.EpisodeLenMean = e.Means()
	s.EpisodeReturnMin, s.EpisodeReturnMax = e.ReturnMin, e.ReturnMax
}

// takingMetrics returns sink, preceded by taking the group's ended episodes' metrics into
// add: the runners then keep a fragment's worth, not a whole run's (sample run's totals, a
// worker that runs for days).
func takingMetrics(g *envrunner.Group, add func([]envrunner.RolloutMetrics), sink func(*envrunner.MultiAgentBatch) error) func(*envrunner.MultiAgentBatch) error {
	var ms []envrunner.RolloutMetrics
	return func(b *envrunner.MultiAgentBatch) error {
		ms = g.Metrics(ms[:0])
		add(ms)
		clear(ms) // no references kept to the episodes' maps and slices
		return sink(b)
	}
}
