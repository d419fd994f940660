package bench

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testRuns() ([]Run, []Config, map[Config]string) {
	a := Config{Env: "CartPole-v1", Model: "cartpole_mlp", Device: "cpu", NumEnvs: 1, Workers: 1}
	b := a
	b.NumEnvs = 16
	c := a
	c.NumEnvs, c.Workers = 1, 2
	ph := Phases{EnvWait: 2e-6, ObsProcessing: 1e-6, Inference: 5e-6, ActionProcessing: 1e-6, Output: 0.5e-6, Other: 0.5e-6}
	var runs []Run
	for i, sps := range []float64{100, 300, 200} {
		runs = append(runs, Run{Config: a, Sampler: Ours, Repeat: i + 1, EnvSteps: 1000, RunnerSteps: 1000, Seconds: 1000 / sps, StepsPerSec: sps, Phases: ph})
		runs = append(runs, Run{Config: a, Sampler: Vs, Repeat: i + 1, EnvSteps: 500, Seconds: 1, StepsPerSec: sps / 2})
		runs = append(runs, Run{Config: b, Sampler: Ours, Repeat: i + 1, EnvSteps: 16000, RunnerSteps: 1000, Seconds: 1, StepsPerSec: 16 * sps, Phases: ph})
	}
	return runs, []Config{a, b, c}, map[Config]string{c: "--workers 2 is more than --num-envs 1"}
}

func TestSummarize(t *testing.T) {
	runs, order, skipped := testRuns()
	sums := Summarize(runs, skipped, nil, order)
	require.Len(t, sums, 3)
	assert.Equal(t, 3, sums[0].Repeats)
	assert.Equal(t, 200.0, sums[0].StepsPerSec)
	assert.Equal(t, 100.0, sums[0].Min)
	assert.Equal(t, 300.0, sums[0].Max)
	assert.Equal(t, 100.0, sums[0].VsStepsPerSec)
	assert.InDelta(t, 2.0, sums[0].Ratio, 1e-12, "ours is twice theirs in every pair")
	assert.InDelta(t, 2.0, sums[0].RatioMin, 1e-12)
	assert.InDelta(t, 10e-6, sums[0].Phases.Total(), 1e-15)
	assert.Equal(t, 3200.0, sums[1].StepsPerSec)
	assert.Zero(t, sums[1].VsRepeats)
	assert.NotEmpty(t, sums[2].Skipped)
	assert.Equal(t, 2.5, median([]float64{4, 1, 2, 3}))
}

// TestOutputs: the CSV parses with a row per run, report.md has a row per configuration
// and the phase table, the PNGs decode.
func TestOutputs(t *testing.T) {
	runs, order, skipped := testRuns()
	sums := Summarize(runs, skipped, nil, order)
	dir := t.TempDir()

	var buf bytes.Buffer
	require.NoError(t, WriteCSV(&buf, runs))
	rows, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, len(runs)+1)
	assert.Equal(t, CSVHeader, rows[0])
	assert.Equal(t, "ours", rows[1][5])
	assert.Equal(t, "2", rows[1][11], "env wait in µs")

	buf.Reset()
	meta := Meta{Date: time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC), Command: "sample bench --quick", Machine: "test",
		Repeats: 3, Warmup: time.Second, Duration: time.Second, VsCommand: "python3 x.py", VsName: "numpy", Plots: []string{"throughput.png"}}
	require.NoError(t, WriteReport(&buf, meta, sums))
	md := buf.String()
	for _, want := range []string{"2026-11-23 20:00 UTC", "`sample bench --quick`", "| CartPole-v1 | cartpole_mlp | cpu | 1 | 1 | 200 | 100-300 | 100 (50-150) | 2.00x (2.00-2.00) |",
		"| CartPole-v1 | cartpole_mlp | cpu | 16 | 1 | 3.2k | 1.6k-4.8k | n/a | |", "skipped: --workers 2", "![throughput](throughput.png)",
		"| CartPole-v1 cartpole_mlp cpu envs=1 workers=1 | 10.0 | 2.0 (20%) | 1.0 (10%) | 5.0 (50%) |"} {
		assert.Contains(t, md, want)
	}
	assert.Equal(t, 2, strings.Count(md, "| CartPole-v1 cartpole_mlp cpu envs="), "one phase row per configuration that ran")

	for name, plot := range map[string]func(string, []Summary) error{"throughput.png": PlotThroughput, "breakdown.png": PlotBreakdown} {
		path := filepath.Join(dir, name)
		require.NoError(t, plot(path, sums), name)
		f, err := os.Open(path)
		require.NoError(t, err)
		img, err := png.Decode(f)
		f.Close()
		require.NoError(t, err, name)
		assert.Greater(t, img.Bounds().Dx(), 100, name)
	}
	assert.Error(t, PlotThroughput(filepath.Join(dir, "x.png"), sums[2:]), "only skipped configurations: nothing to plot")
	// One configuration: one point on each axis.
	for name, plot := range map[string]func(string, []Summary) error{"one-throughput.png": PlotThroughput, "one-breakdown.png": PlotBreakdown} {
		require.NoError(t, plot(filepath.Join(dir, name), sums[:1]), name)
	}
	one := sums[0]
	one.Min = 0 // a run that measured nothing
	require.NoError(t, PlotThroughput(filepath.Join(dir, "zero.png"), []Summary{one}))
}

func TestRate(t *testing.T) {
	for x, want := range map[float64]string{12.3: "12.3", 999.9: "1k", 12345: "12.3k", 999999: "1M", 2.5e6: "2.5M"} {
		assert.Equal(t, want, Rate(x), "%v", x)
	}
}
