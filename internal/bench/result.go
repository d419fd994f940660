// Package bench holds what `sample bench` produces from its measurements: the summary of
// each configuration (median throughput with its range, where a step's time goes, the ratio
// against another sampler pair by pair), the raw results as CSV, report.md, and PNG plots.
// Measuring is the command's job; this package only turns results into files.
package bench

import (
	"fmt"
	"sort"
)

// Config is one point of a benchmark matrix.
type Config struct {
	Env, Model, Device string
	NumEnvs, Workers   int
}

// Series names the configuration without its sub-environment count: the line it belongs to
// in the throughput plot.
func (c Config) Series() string {
	return fmt.Sprintf("%s %s %s w%d", c.Env, c.Model, c.Device, c.Workers)
}

// String names the configuration in full.
func (c Config) String() string {
	return fmt.Sprintf("%s %s %s envs=%d workers=%d", c.Env, c.Model, c.Device, c.NumEnvs, c.Workers)
}

// Phases is the time of one runner step by phase, in seconds.
type Phases struct {
	EnvWait, ObsProcessing, Inference, ActionProcessing, Output, Other float64
}

// PhaseNames are the phases in the order of Phases.Values.
var PhaseNames = []string{"env wait", "obs processing", "inference", "action processing", "output", "other"}

// Values returns the phases in the order of PhaseNames.
func (p Phases) Values() []float64 {
	return []float64{p.EnvWait, p.ObsProcessing, p.Inference, p.ActionProcessing, p.Output, p.Other}
}

// Total is the sum of the phases: a runner step's time.
func (p Phases) Total() float64 {
	var t float64
	for _, v := range p.Values() {
		t += v
	}
	return t
}

// Samplers as they appear in Run.Sampler.
const (
	Ours = "ours"
	Vs   = "vs"
)

// Run is one measured repeat of one configuration by one sampler.
type Run struct {
	Config
	Sampler string // Ours or Vs
	Repeat  int    // 1-based
	// EnvSteps counts the environment steps of the repeat, RunnerSteps the runners' steps
	// (poll, infer, send) summed over the workers.
	EnvSteps, RunnerSteps int64
	Seconds, StepsPerSec  float64
	// Phases is the mean time of a runner step by phase (ours only).
	Phases Phases
}

// Summary is what report.md says about one configuration.
type Summary struct {
	Config
	// Skipped, when set, says why the configuration did not run; nothing else is set.
	Skipped string
	// Repeats is the number of measured runs; StepsPerSec their median, Min and Max the range.
	Repeats               int
	StepsPerSec, Min, Max float64
	// Phases holds each phase's median over the repeats.
	Phases Phases
	// Vs* describe the other sampler's runs; VsSkipped says why it did not run this one.
	VsRepeats                   int
	VsStepsPerSec, VsMin, VsMax float64
	VsSkipped                   string
	// Ratio is the median of ours/theirs over the pairs (repeat i against repeat i);
	// RatioMin and RatioMax the range.
	Ratio, RatioMin, RatioMax float64
}

// Summarize groups runs by configuration (in order of first appearance) and computes each
// one's summary. skipped lists configurations that did not run, with the reason, and
// vsSkipped those the other sampler declined.
func Summarize(runs []Run, skipped map[Config]string, vsSkipped map[Config]string, order []Config) []Summary {
	byCfg := map[Config][]Run{}
	for _, r := range runs {
		byCfg[r.Config] = append(byCfg[r.Config], r)
	}
	out := make([]Summary, 0, len(order))
	for _, c := range order {
		s := Summary{Config: c}
		if why, ok := skipped[c]; ok {
			s.Skipped = why
			out = append(out, s)
			continue
		}
		var ours, theirs []Run
		for _, r := range byCfg[c] {
			if r.Sampler == Vs {
				theirs = append(theirs, r)
			} else {
				ours = append(ours, r)
			}
		}
		s.Repeats = len(ours)
		s.StepsPerSec, s.Min, s.Max = medianRange(ours, func(r Run) float64 { return r.StepsPerSec })
		ph := make([][]float64, len(PhaseNames))
		for _, r := range ours {
			for i, v := range r.Phases.Values() {
				ph[i] = append(ph[i], v)
			}
		}
		vals := make([]float64, len(PhaseNames))
		for i := range ph {
			vals[i] = median(ph[i])
		}
		s.Phases = Phases{vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]}
		s.VsSkipped = vsSkipped[c]
		s.VsRepeats = len(theirs)
		s.VsStepsPerSec, s.VsMin, s.VsMax = medianRange(theirs, func(r Run) float64 { return r.StepsPerSec })
		var ratios []float64
		for _, o := range ours {
			for _, t := range theirs {
				if t.Repeat == o.Repeat && t.StepsPerSec > 0 {
					ratios = append(ratios, o.StepsPerSec/t.StepsPerSec)
				}
			}
		}
		if len(ratios) > 0 {
			s.Ratio = median(ratios)
			s.RatioMin, s.RatioMax = minMax(ratios)
		}
		out = append(out, s)
	}
	return out
}

func medianRange(runs []Run, f func(Run) float64) (med, lo, hi float64) {
	if len(runs) == 0 {
		return 0, 0, 0
	}
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	lo, hi = minMax(v)
	return median(v), lo, hi
}

// median returns the median of v (the mean of the middle two for an even count); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
