package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/scaleout"
)

// drainJSON runs sample drain --json and decodes the summary.
func drainJSON(t *testing.T, args ...string) drainSummary {
	t.Helper()
	code, out, errs := runCLI(append([]string{"drain", "--json"}, args...)...)
	require.Equal(t, 0, code, errs)
	var s drainSummary
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	return s
}

// readParquet reads every batch of the files and checks that no row (env_id, eps_id, t)
// comes twice; it returns the number of rows.
func readRowsOnce(t *testing.T, files []string) int64 {
	t.Helper()
	seen := map[string]bool{}
	for _, f := range files {
		require.NoError(t, output.ReadParquet(f, func(m *envrunner.MultiAgentBatch) error {
			b := m.Policy(envrunner.DefaultPolicyID)
			for i := range b.Count {
				k := fmt.Sprint(b.EnvID[i], b.EpsID[i], b.T[i])
				if seen[k] {
					return fmt.Errorf("row %s twice", k)
				}
				seen[k] = true
			}
			return nil
		}))
	}
	return int64(len(seen))
}

// TestPublishDrain: sample run publishes to a broker; a drain stops after some rows (its
// segments closed and acknowledged), a second drain takes the rest; every step is in the
// files exactly once.
func TestPublishDrain(t *testing.T) {
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	const steps = 3000
	s := runJSON(t, "--model", "random", "--num-envs", "4", "--workers", "2", "--steps", fmt.Sprint(steps),
		"--fragment-length", "50", "--publish", b.URL(), "--run", "t1", "--sampler", "w")
	require.EqualValues(t, steps, s.EnvSteps)
	require.EqualValues(t, steps, s.Rows)

	out := filepath.Join(t.TempDir(), "data.parquet")
	d1 := drainJSON(t, "--server", b.URL(), "--run", "t1", "--out", out, "--max-rows", "1000", "--segment-rows", "400", "--idle-exit", "1s")
	require.Equal(t, int64(1000), d1.Rows)
	require.Len(t, d1.Out, 3) // segments of 400, 400 and 200 rows (batches of 100)
	d2 := drainJSON(t, "--server", b.URL(), "--run", "t1", "--out", out, "--idle-exit", "1s")
	require.Equal(t, int64(steps), d1.Rows+d2.Rows)
	require.Equal(t, int64(steps), d1.EnvSteps+d2.EnvSteps)
	require.Equal(t, output.RotatedName(out, 3), d2.Out[0], "the second drain must not overwrite the first one's files")
	require.EqualValues(t, steps, readRowsOnce(t, append(d1.Out, d2.Out...)))
}

// TestPublishEmbedded: --publish embedded keeps the batches in its store; a broker started
// later on the same store serves them to a drain.
func TestPublishEmbedded(t *testing.T) {
	store := t.TempDir()
	code, _, errs := runCLI("run", "--model", "random", "--steps", "500", "--publish", "embedded", "--store", store, "--wait-drained=false")
	require.Equal(t, 0, code, errs)
	require.Contains(t, errs, "NATS server at nats://127.0.0.1:")
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: store})
	require.NoError(t, err)
	defer b.Close()
	out := filepath.Join(t.TempDir(), "x.parquet")
	d := drainJSON(t, "--server", b.URL(), "--out", out, "--idle-exit", "500ms")
	require.EqualValues(t, 500, d.Rows)
	require.EqualValues(t, 500, readRowsOnce(t, d.Out))
}

func TestScaleoutBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--publish", "embedded", "--out", "x.jsonl"},
		{"run", "--publish", "embedded", "--run", "a.b"},
		{"drain", "--run", "x"},
		{"drain", "--out", "x.parquet", "--run", "bad name"},
		{"broker", "--max-payload", "1"},
		{"drain", "--out", "x.parquet", "--max-rate", "-5"},
		{"drain", "--out", "x.parquet", "--max-rate", "NaN"},
		{"drain", "--out", "x.parquet", "--max-rate", "+Inf"},
		{"worker", "--stop-wait", "-1s"},
	} {
		code, _, errs := runCLI(args...)
		require.Equal(t, 2, code, "%v: %s", args, errs)
	}
	code, _, errs := runCLI("broker", "--listen", "0.0.0.0:0", "--store", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, errs, "token is required")
}

func TestPublishPolicyAndStatus(t *testing.T) {
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	code, out, errs := runCLI("publish-policy", "--server", b.URL(), "--run", "p", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "policy default_policy version 1 (default_policy/v000001.onnx")
	code, out, errs = runCLI("publish-policy", "--server", b.URL(), "--run", "p", "--json", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)
	var pv scaleout.PolicyVersion
	require.NoError(t, json.Unmarshal([]byte(out), &pv))
	require.EqualValues(t, 2, pv.Version)

	runJSON(t, "--model", "random", "--steps", "300", "--fragment-length", "100", "--publish", b.URL(), "--run", "p", "--sampler", "s1")
	code, out, errs = runCLI("status", "--server", b.URL(), "--run", "p", "--json")
	require.Equal(t, 0, code, errs)
	var st scaleout.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.EqualValues(t, 3, st.Messages)
	require.Len(t, st.Policies, 1)
	require.EqualValues(t, 2, st.Policies[0].Version)
	require.Len(t, st.Samplers, 1)
	require.EqualValues(t, 300, st.Samplers[0].Stats.Rows)
	code, out, errs = runCLI("status", "--server", b.URL(), "--run", "p")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "sampler s1")
	require.Contains(t, out, "2 versions behind")

	code, _, _ = runCLI("publish-policy", "--server", b.URL(), "--run", "p", "missing.onnx")
	require.Equal(t, 1, code)
	code, _, _ = runCLI("status", "--server", b.URL(), "--run", "nope")
	require.Equal(t, 1, code)
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestDrainKilledMidCommitExactlyOnce: a drain SIGKILLed after committing a segment but
// before renaming it (claim), or after renaming it but before acknowledging its messages
// (rename), is restarted: the server delivers those messages again, the new drain drops them
// by their journaled ids (and finishes the rename), and the files hold every row exactly once.
func TestDrainKilledMidCommitExactlyOnce(t *testing.T) {
	for _, step := range []string{"claim", "rename"} {
		t.Run(step, func(t *testing.T) {
			b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
			require.NoError(t, err)
			defer b.Close()
			const steps = 2000
			s := runJSON(t, "--model", "random", "--num-envs", "4", "--steps", fmt.Sprint(steps),
				"--fragment-length", "50", "--publish", b.URL(), "--run", "k", "--sampler", "w")
			require.EqualValues(t, steps, s.Rows)

			dir := t.TempDir()
			out := filepath.Join(dir, "d.parquet")
			args := []string{"--server", b.URL(), "--run", "k", "--out", out, "--segment-rows", "600",
				"--segment-time", "200ms", "--ack-wait", "2s", "--idle-exit", "4s"}
			cmd := exec.Command(os.Args[0], append([]string{"drain"}, args...)...)
			cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1", "SAMPLE_DRAIN_CRASH="+step)
			var first bytes.Buffer
			cmd.Stdout, cmd.Stderr = &first, &first
			err = cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the first drain should have been killed: %s", first.String())
			require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())

			code, stdout, errs := runCLI(append([]string{"drain", "--json"}, args...)...)
			require.Equal(t, 0, code, errs)
			var d drainSummary
			require.NoError(t, json.Unmarshal([]byte(stdout), &d), stdout)
			if step == "claim" {
				require.Contains(t, errs, "was committed by a drain that stopped before renaming it")
			}
			require.Positive(t, d.Duplicates, "the killed drain's committed messages come again and are dropped")
			files, err := filepath.Glob(filepath.Join(dir, "d*.parquet"))
			require.NoError(t, err)
			partials, err := filepath.Glob(filepath.Join(dir, "*"+partialSuffix))
			require.NoError(t, err)
			require.Empty(t, partials)
			require.EqualValues(t, steps, readRowsOnce(t, files), "every row once across %v", files)
			t.Logf("%s: %d files, second drain %d messages, %d duplicates dropped", step, len(files), d.Messages, d.Duplicates)
		})
	}
}
