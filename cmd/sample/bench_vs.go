package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/onnxrl/sampler/internal/bench"
	"github.com/onnxrl/sampler/models"
)

// vsSampler runs another sampler for sample bench --vs. The protocol (docs/benchmarking.md):
// the command is run by sh with these flags appended:
//
//	--env NAME --model PATH|random --num-envs N --workers N --device D --seed S
//	--explore true|false --warmup SECONDS --duration SECONDS --fragment-length N
//
// It steps for the warm-up, then for the duration, and prints as its last line on stdout one
// JSON object: {"steps_per_sec": X, "env_steps": N, "seconds": S}, or {"skipped": "why"} for
// settings it does not support. Any other ending (a non-zero exit status, no JSON) is an
// error. Bundled model names are passed as paths to copies of the model files.
type vsSampler struct {
	command string
	f       *benchFlags
	dir     string            // the model copies
	paths   map[string]string // model name -> path
}

func newVsSampler(f *benchFlags) (*vsSampler, error) {
	dir, err := os.MkdirTemp("", "sample-bench-")
	if err != nil {
		return nil, err
	}
	return &vsSampler{command: f.vs, f: f, dir: dir, paths: map[string]string{}}, nil
}

func (v *vsSampler) close() { os.RemoveAll(v.dir) }

// vsDefaultName is a command's first word without its folder ("python3 x.py" -> the script's
// name when the first word is an interpreter).
func vsDefaultName(command string) string {
	words := strings.Fields(command)
	if len(words) == 0 {
		return "vs"
	}
	name := filepath.Base(words[0])
	if strings.HasPrefix(name, "python") && len(words) > 1 {
		name = filepath.Base(words[1])
	}
	return strings.TrimSuffix(name, filepath.Ext(name))
}

// modelPath gives the other sampler a file for model.
func (v *vsSampler) modelPath(model string) (string, error) {
	if p, ok := v.paths[model]; ok {
		return p, nil
	}
	p := model
	if model != "random" {
		if _, err := os.Stat(model); err != nil {
			if p, err = models.WriteBundled(v.dir, model); err != nil {
				return "", err
			}
		} else if p, err = filepath.Abs(model); err != nil {
			return "", err
		}
	}
	v.paths[model] = p
	return p, nil
}

// vsResult is the other sampler's last line.
type vsResult struct {
	StepsPerSec *float64 `json:"steps_per_sec"`
	EnvSteps    int64    `json:"env_steps"`
	Seconds     float64  `json:"seconds"`
	Skipped     string   `json:"skipped"`
}

// run runs the other sampler once on c. why is set when it declined the settings.
func (v *vsSampler) run(ctx context.Context, c bench.Config) (run bench.Run, why string, err error) {
	model, err := v.modelPath(c.Model)
	if err != nil {
		return run, "", err
	}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }
	args := []string{"-c", v.command + ` "$@"`, "sh",
		"--env", c.Env, "--model", model, "--num-envs", strconv.Itoa(c.NumEnvs), "--workers", strconv.Itoa(c.Workers),
		"--device", c.Device, "--seed", strconv.FormatUint(v.f.seed, 10), "--explore", strconv.FormatBool(v.f.explore),
		"--warmup", secs(v.f.warmup), "--duration", secs(v.f.duration), "--fragment-length", strconv.Itoa(v.f.fragment)}
	cmd := exec.CommandContext(ctx, "sh", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return run, "", errInterrupted
		}
		return run, "", fmt.Errorf("--vs %q: %w%s", v.command, err, tail(stderr.String()))
	}
	res, err := parseVsOutput(stdout.String())
	if err != nil {
		return run, "", fmt.Errorf("--vs %q: %w%s", v.command, err, tail(stderr.String()))
	}
	if res.Skipped != "" {
		return run, res.Skipped, nil
	}
	run.StepsPerSec, run.EnvSteps, run.Seconds = *res.StepsPerSec, res.EnvSteps, res.Seconds
	return run, "", nil
}

// parseVsOutput reads the JSON object on the last non-empty line of out.
func parseVsOutput(out string) (vsResult, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	var res vsResult
	if last == "" {
		return res, fmt.Errorf("printed nothing; want a JSON line such as {\"steps_per_sec\": 12345}")
	}
	if err := json.Unmarshal([]byte(last), &res); err != nil {
		return res, fmt.Errorf("last line %q is not a JSON object: %v", clip(last, 120), err)
	}
	if res.Skipped == "" && (res.StepsPerSec == nil || !(*res.StepsPerSec > 0)) {
		return res, fmt.Errorf("last line %q has no positive steps_per_sec and no skipped", clip(last, 120))
	}
	return res, nil
}

// tail is the end of a command's stderr, for an error message.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return "; its stderr: " + s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
