package envrunner

import "time"

// perfStats accumulates the step timings as RLlib's _PerfStats: sums over all steps, or
// exponential moving averages with coefficient ema.
type perfStats struct {
	ema                                                float64
	iters                                              int64
	rawObs, inference, action, envWait, render, output float64 // seconds
	step                                               [6]time.Duration
}

// The phases of a step, indexes of perfStats.step.
const (
	phRawObs = iota
	phInference
	phAction
	phEnvWait
	phRender
	phOutput // building sample batches (Take)
)

// add adds d to the current step's time of phase ph.
func (s *perfStats) add(ph int, d time.Duration) { s.step[ph] += d }

// addOutput adds d, a Take's time, to the output phase: straight into the sums (so a
// reader between steps sees it at once), or into the current step for moving averages.
func (s *perfStats) addOutput(d time.Duration) {
	if s.ema == 0 {
		s.output += d.Seconds()
		return
	}
	s.step[phOutput] += d
}

// endStep folds the step's phase times into the sums (or moving averages), once per step as
// RLlib's _PerfStats does, however many chunks or policies the step ran.
func (s *perfStats) endStep() {
	s.iters++
	fields := [6]*float64{&s.rawObs, &s.inference, &s.action, &s.envWait, &s.render, &s.output}
	for ph, f := range fields {
		v := s.step[ph].Seconds()
		if s.ema > 0 {
			*f = (1-s.ema)**f + s.ema*v
		} else {
			*f += v
		}
		s.step[ph] = 0
	}
}

// PerfStats are the mean times of one step's phases, in milliseconds (RLlib's sampler perf
// stats).
type PerfStats struct {
	// MeanRawObsProcessingMs includes the resets of sub-environments whose episode ended
	// (RLlib's EnvRunnerV2 resets inside _process_observations, under this timer).
	MeanRawObsProcessingMs float64 `json:"mean_raw_obs_processing_ms"`
	MeanInferenceMs        float64 `json:"mean_inference_ms"`
	MeanActionProcessingMs float64 `json:"mean_action_processing_ms"`
	// MeanEnvWaitMs is the time in Poll and SendActions (a vector env's stepping); resets
	// are not in it.
	MeanEnvWaitMs   float64 `json:"mean_env_wait_ms"`
	MeanEnvRenderMs float64 `json:"mean_env_render_ms"`
	// MeanSampleOutputMs is the time spent moving finished transitions into sample batches
	// (Take: cutting fragments, GAE), spread over the steps.
	MeanSampleOutputMs float64 `json:"mean_sample_output_ms"`
}

func (s *perfStats) get() PerfStats {
	f := 1000.0
	if s.ema == 0 {
		if s.iters == 0 {
			return PerfStats{}
		}
		f = 1000.0 / float64(s.iters)
	}
	return PerfStats{MeanRawObsProcessingMs: s.rawObs * f, MeanInferenceMs: s.inference * f,
		MeanActionProcessingMs: s.action * f, MeanEnvWaitMs: s.envWait * f, MeanEnvRenderMs: s.render * f,
		MeanSampleOutputMs: s.output * f}
}
