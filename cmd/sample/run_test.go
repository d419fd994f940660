package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/spaces"
)

// runJSON runs sample run with --json and decodes the summary.
func runJSON(t *testing.T, args ...string) runSummary {
	t.Helper()
	code, out, errs := runCLI(append([]string{"run", "--json"}, args...)...)
	require.Equal(t, 0, code, errs)
	var s runSummary
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	return s
}

// readBatches decodes every line of the sample files.
func readBatches(t *testing.T, files []string) []*envrunner.MultiAgentBatch {
	t.Helper()
	var out []*envrunner.MultiAgentBatch
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<30)
		for sc.Scan() {
			b, err := output.Decode(sc.Bytes())
			require.NoError(t, err, f)
			out = append(out, b)
		}
		require.NoError(t, sc.Err())
		fh.Close()
	}
	return out
}

func rowsOf(bs []*envrunner.MultiAgentBatch) int64 {
	n := int64(0)
	for _, b := range bs {
		n += int64(b.Rows())
	}
	return n
}

func TestRunSummary(t *testing.T) {
	needRuntime(t)
	s := runJSON(t, "--env", "CartPole-v1", "--num-envs", "4", "--steps", "2000", "--seed", "3")
	assert.Equal(t, "cartpole_mlp", s.Model)
	assert.GreaterOrEqual(t, s.EnvSteps, int64(2000))
	assert.Less(t, s.EnvSteps, int64(2000+4))
	assert.Equal(t, s.EnvSteps, s.AgentSteps)
	assert.Positive(t, s.Episodes)
	assert.GreaterOrEqual(t, s.EpisodeReturnMax, s.EpisodeReturnMean)
	assert.LessOrEqual(t, s.EpisodeReturnMin, s.EpisodeReturnMean)
	assert.Equal(t, s.EpisodeReturnMean, s.EpisodeLenMean) // CartPole: reward 1 per step
	assert.Positive(t, s.StepsPerSec)
	assert.Positive(t, s.Perf.MeanInferenceMs)
	assert.Positive(t, s.Perf.MeanEnvWaitMs)

	// The raw JSON carries the contract's keys.
	code, out, _ := runCLI("run", "--json", "--steps", "100")
	require.Equal(t, 0, code)
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	for _, k := range []string{"num_env_steps_sampled_lifetime", "num_agent_steps_sampled_lifetime", "num_episodes_lifetime",
		"episode_return_mean", "episode_return_min", "episode_return_max", "episode_len_mean",
		"num_env_steps_sampled_lifetime_throughput", "perf"} {
		assert.Contains(t, raw, k)
	}
	for _, k := range []string{"mean_env_wait_ms", "mean_raw_obs_processing_ms", "mean_inference_ms", "mean_action_processing_ms"} {
		assert.Contains(t, raw["perf"], k)
	}

	// The table, without progress (stdout is not a terminal here).
	code, out, errs := runCLI("run", "--steps", "500")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "episode return")
	assert.Contains(t, out, "env steps")
	assert.NotContains(t, out, "\r")
}

func TestRunEpisodes(t *testing.T) {
	needRuntime(t)
	// More sub-environments than episodes: exactly the budget is reported.
	s := runJSON(t, "--env", "CartPole-v1", "--num-envs", "8", "--workers", "2", "--episodes", "5")
	assert.Equal(t, int64(5), s.Episodes)
	s = runJSON(t, "--env", "Pendulum-v1", "--num-envs", "3", "--episodes", "7", "--explore=false")
	assert.Equal(t, int64(7), s.Episodes)
	assert.Equal(t, float64(200), s.EpisodeLenMean)
	assert.Equal(t, int64(7*200), s.EnvSteps)
}

// TestRunOutputNothingLost checks that every agent step of a run is a row of the sample
// files, also across rotated files and several workers, and that the rows are consistent.
func TestRunOutputNothingLost(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "samples.jsonl")
	s := runJSON(t, "--env", "CartPole-v1", "--num-envs", "6", "--workers", "3", "--steps", "5000",
		"--fragment-length", "50", "--gae", "--out", out, "--max-file-size", "64KiB")
	require.Greater(t, len(s.Out), 2, "rotated files")
	assert.Equal(t, out, s.Out[0])
	bs := readBatches(t, s.Out)
	assert.Equal(t, s.AgentSteps, rowsOf(bs))
	assert.Equal(t, s.Rows, rowsOf(bs))
	assert.Equal(t, s.Batches, int64(len(bs)))
	for _, b := range bs {
		sb := b.PolicyBatches[envrunner.DefaultPolicyID]
		require.NotNil(t, sb)
		require.NoError(t, sb.Validate())
		assert.Equal(t, 4, sb.ObsWidth)
		assert.Equal(t, sb.Count, len(sb.Advantages))
		assert.Equal(t, sb.Count, len(sb.ActionLogp))
		assert.Equal(t, sb.Count, len(sb.VfPreds))
		for i := 1; i < sb.Count; i++ {
			if sb.EpsID[i] == sb.EpsID[i-1] {
				require.Equal(t, sb.T[i-1]+1, sb.T[i])
				require.Equal(t, envrunner.Row(sb.NewObs, 4, i-1), envrunner.Row(sb.Obs, 4, i))
			}
		}
	}
}

// TestRunDeterministic checks that the same seed and configuration give a byte-identical
// sample file (several workers included, and --remote with --remote-wait all), and another
// seed another file.
func TestRunDeterministic(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	file := func(name string, seed string) []byte {
		p := filepath.Join(dir, name)
		runJSON(t, "--env", "CartPole-v1", "--num-envs", "4", "--workers", "2", "--steps", "3000",
			"--seed", seed, "--gae", "--fragment-length", "64", "--out", p)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NotEmpty(t, b)
		return b
	}
	a, b := file("a.jsonl", "11"), file("b.jsonl", "11")
	assert.True(t, bytes.Equal(a, b), "same seed, different sample files")
	c := file("c.jsonl", "12")
	assert.False(t, bytes.Equal(a, c), "different seeds, same sample file")

	// A recurrent policy, a random one, and sub-environments on their own goroutines polled
	// all together (their steps finish in any order).
	for _, args := range [][]string{{"--env", "StatelessCartPole"}, {"--env", "Pendulum-v1", "--model", "random"},
		{"--env", "MultiAgentCartPole", "--remote", "--remote-wait", "all"}} {
		p1, p2 := filepath.Join(dir, "r1.jsonl"), filepath.Join(dir, "r2.jsonl")
		runJSON(t, append(args, "--num-envs", "3", "--steps", "1500", "--seed", "4", "--out", p1, "--overwrite")...)
		runJSON(t, append(args, "--num-envs", "3", "--steps", "1500", "--seed", "4", "--out", p2, "--overwrite")...)
		x, err := os.ReadFile(p1)
		require.NoError(t, err)
		y, err := os.ReadFile(p2)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(x, y), "%v: same seed, different sample files", args)
	}
}

func TestRunRandomAndRecurrent(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "pendulum.jsonl")
	s := runJSON(t, "--env", "Pendulum-v1", "--model", "random", "--num-envs", "2", "--steps", "600", "--out", p)
	assert.Equal(t, "random", s.Model)
	bs := readBatches(t, s.Out)
	box := spaces.NewBox(-2, 2, 1)
	for _, b := range bs {
		sb := b.PolicyBatches[envrunner.DefaultPolicyID]
		require.Len(t, sb.ActionLogp, sb.Count)
		for i := range sb.Count {
			assert.True(t, box.Contains(envrunner.Row(sb.Actions, 1, i)))
			assert.InDelta(t, -math.Log(4), sb.ActionLogp[i], 1e-6, "row %d: uniform on [-2, 2]", i)
		}
	}

	p = filepath.Join(dir, "lstm.jsonl")
	s = runJSON(t, "--env", "StatelessCartPole", "--num-envs", "2", "--steps", "600", "--out", p)
	bs = readBatches(t, s.Out)
	sb := bs[0].PolicyBatches[envrunner.DefaultPolicyID]
	require.Len(t, sb.StateWidths, 2)
	assert.NotEmpty(t, sb.SeqLens)

	// Any registered environment with a random policy, multi-agent included.
	s = runJSON(t, "--env", "RandomMultiAgentEnv", "--model", "random", "--num-envs", "2", "--steps", "300",
		"--count-steps-by", "agent_steps", "--batch-mode", "complete_episodes")
	assert.Greater(t, s.AgentSteps, s.EnvSteps)
}

// TestRunBadInput checks that bad input fails before sampling: a non-zero exit, one short
// line on stderr, no stack trace, and no sample file.
func TestRunBadInput(t *testing.T) {
	needRuntime(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.onnx")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a model"), 0o644))
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown env", []string{"--env", "NoSuchEnv-v0"}, 2, "unknown environment"},
		{"model/env mismatch", []string{"--env", "Pendulum-v1", "--model", "cartpole_mlp"}, 1, "the model wants [batch,4]"},
		{"garbage model", []string{"--model", garbage}, 1, "not an ONNX model"},
		{"missing model", []string{"--model", filepath.Join(dir, "nope.onnx")}, 1, "no such file"},
		{"no default model", []string{"--env", "RandomEnv"}, 2, "--model"},
		{"bad batch mode", []string{"--batch-mode", "sometimes"}, 2, "--batch-mode"},
		{"bad count", []string{"--count-steps-by", "minutes"}, 2, "--count-steps-by"},
		{"bad env config", []string{"--env-config", "max_episode_steps"}, 2, "--env-config"},
		{"unknown env config key", []string{"--env-config", "bogus=1"}, 1, "unknown config key"},
		{"bad config value", []string{"--env-config", "max_episode_steps=-3"}, 1, "max_episode_steps"},
		{"both budgets", []string{"--steps", "5", "--episodes", "5"}, 2, "not both"},
		{"workers", []string{"--workers", "3", "--num-envs", "2"}, 2, "--workers"},
		{"bad size", []string{"--max-file-size", "lots"}, 2, "--max-file-size"},
		{"bad device", []string{"--device", "abacus"}, 2, "--device"},
		{"unknown flag", []string{"--frobnicate"}, 2, "frobnicate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.NewReplacer(" ", "_", "/", "_").Replace(c.name)+".jsonl")
			code, _, errs := runCLI(append([]string{"run", "--out", out}, c.args...)...)
			assert.Equal(t, c.code, code, errs)
			assert.Contains(t, errs, c.want)
			assert.NotContains(t, errs, "goroutine")
			assert.NotContains(t, errs, "panic")
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "a sample file was created")
		})
	}
}

// TestRunSignal interrupts a long run with SIGINT (JSON lines) and SIGTERM (Parquet): the run
// stops, writes every step it sampled, closes its file (the Parquet footer) and prints its
// summary, then exits with status 130 (128 + SIGINT, as after any interruption).
func TestRunSignal(t *testing.T) {
	needRuntime(t)
	for name, sig := range map[string]os.Signal{"int.jsonl": os.Interrupt, "term.parquet": syscall.SIGTERM} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), name)
			cmd := exec.Command(os.Args[0], "run", "--json", "--num-envs", "4", "--steps", "2000000000", "--out", out)
			cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			deadline := time.Now().Add(30 * time.Second)
			for {
				// The open file is out.partial until closed (at --flush-interval, 5 s).
				if st, err := os.Stat(out + output.PartialSuffix); err == nil && st.Size() > 0 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no samples written after 30s; stderr: %s", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			require.NoError(t, cmd.Process.Signal(sig))
			err := cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, stderr.String())
			assert.Equal(t, 130, exit.ExitCode(), "after the summary")
			var s runSummary
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &s), stdout.String())
			assert.True(t, s.Interrupted)
			assert.Equal(t, out, s.Out[0])
			bs := readAll(t, s.Out)
			assert.Equal(t, s.AgentSteps, rowsOf(bs))
			assert.Positive(t, s.AgentSteps)
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "100": 100, "64KiB": 64 << 10, "3MiB": 3 << 20, "1GiB": 1 << 30,
		"5MB": 5e6, "2K": 2048, " 7 MiB ": 7 << 20} {
		got, err := parseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "x", "-1", "1.5MiB", "99999999999999999999GiB"} {
		_, err := parseSize(in)
		assert.Error(t, err, in)
	}
}
