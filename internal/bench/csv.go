package bench

import (
	"encoding/csv"
	"io"
	"strconv"
)

// CSVHeader is the first row of the raw results file. Phase times are microseconds per
// runner step.
var CSVHeader = []string{"env", "model", "device", "num_envs", "workers", "sampler", "repeat",
	"env_steps", "runner_steps", "seconds", "steps_per_sec",
	"env_wait_us", "obs_processing_us", "inference_us", "action_processing_us", "output_us", "other_us"}

// WriteCSV writes the runs, one row each, after CSVHeader.
func WriteCSV(w io.Writer, runs []Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, r := range runs {
		row := []string{r.Env, r.Model, r.Device, strconv.Itoa(r.NumEnvs), strconv.Itoa(r.Workers), r.Sampler,
			strconv.Itoa(r.Repeat), strconv.FormatInt(r.EnvSteps, 10), strconv.FormatInt(r.RunnerSteps, 10),
			f(r.Seconds), f(r.StepsPerSec)}
		for _, v := range r.Phases.Values() {
			row = append(row, f(v*1e6))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
