package envrunner

import "time"

// perfStats accumulates the step timings as RLlib's _PerfStats: sums over all steps, or
// exponential moving averages with coefficient ema.
type perfStats struct {
	ema                                        float64
	iters                                      int64
	rawObs, inference, action, envWait, render float64 // seconds
}

func (s *perfStats) add(field *float64, d time.Duration) {
	v := d.Seconds()
	if s.ema > 0 {
		*field = (1-s.ema)**field + s.ema*v
		return
	}
	*field += v
}

// PerfStats are the mean times of one step's phases, in milliseconds (RLlib's sampler perf
// stats).
type PerfStats struct {
	MeanRawObsProcessingMs float64 `json:"mean_raw_obs_processing_ms"`
	MeanInferenceMs        float64 `json:"mean_inference_ms"`
	MeanActionProcessingMs float64 `json:"mean_action_processing_ms"`
	MeanEnvWaitMs          float64 `json:"mean_env_wait_ms"`
	MeanEnvRenderMs        float64 `json:"mean_env_render_ms"`
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
		MeanActionProcessingMs: s.action * f, MeanEnvWaitMs: s.envWait * f, MeanEnvRenderMs: s.render * f}
}
