package main

import (
	"math"

	"github.com/onnxrl/sampler/envrunner"
)

// episodeTotals sums what sample run's summary says of the episodes (count, mean return and
// length, lowest and highest return), so that a run can hand its runners' metrics over as it
// goes rather than keep every episode's until the end. Faulty episodes are left out, as
// RLlib's summarize_episodes leaves them out; they are counted apart (Counters).
type episodeTotals struct {
	n              int64
	ret, length    float64
	minRet, maxRet float64
}

// add counts the episodes of ms that are not faulty.
func (e *episodeTotals) add(ms []envrunner.RolloutMetrics) {
	for _, m := range ms {
		if m.Faulty {
			continue
		}
		if e.n == 0 {
			e.minRet, e.maxRet = math.Inf(1), math.Inf(-1)
		}
		e.n++
		e.ret += m.EpisodeReturn
		e.length += float64(m.EpisodeLength)
		e.minRet = min(e.minRet, m.EpisodeReturn)
		e.maxRet = max(e.maxRet, m.EpisodeReturn)
	}
}

// fill writes the totals into the summary (zeros without an episode).
func (e *episodeTotals) fill(s *runSummary) {
	s.Episodes = e.n
	if e.n == 0 {
		return
	}
	s.EpisodeReturnMean, s.EpisodeLenMean = e.ret/float64(e.n), e.length/float64(e.n)
	s.EpisodeReturnMin, s.EpisodeReturnMax = e.minRet, e.maxRet
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
