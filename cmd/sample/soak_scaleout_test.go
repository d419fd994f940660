package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/scaleout"
)

// TestSoakTwoDrainsKilled: issue 35's scale-out repro, repeated for the soak's duration: two
// drains of one --durable share a run's stream (4 messages a fetch each), drain A is SIGKILLed
// at a step of its commit (in turn: prepare, claim, rename), B takes the rest and what the
// server delivers again, A is restarted into its own --out. Every round, every row must be in
// the two sets of files exactly once (make soak).
func TestSoakTwoDrainsKilled(t *testing.T) {
	d := soakDuration(t)
	steps := []string{"prepare", "claim", "rename"}
	var rounds, rows, dropped int64
	for start := time.Now(); time.Since(start) < d || rounds < int64(len(steps)); rounds++ {
		step := steps[rounds%int64(len(steps))]
		b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
		require.NoError(t, err)
		const n = 4000
		runJSON(t, "--model", "random", "--num-envs", "4", "--steps", fmt.Sprint(n), "--seed", fmt.Sprint(rounds),
			"--fragment-length", "50", "--publish", b.URL(), "--run", "s", "--sampler", "w")
		dirA, dirB := t.TempDir(), t.TempDir()
		outA, outB := filepath.Join(dirA, "a.parquet"), filepath.Join(dirB, "b.parquet")
		common := []string{"drain", "--json", "--server", b.URL(), "--run", "s", "--segment-rows", "600",
			"--segment-time", "200ms", "--ack-wait", "1s", "--fetch", "4"}
		a := exec.Command(os.Args[0], append(common, "--out", outA, "--idle-exit", "3s")...)
		a.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1", "SAMPLE_DRAIN_CRASH="+step)
		var aOut bytes.Buffer
		a.Stdout, a.Stderr = &aOut, &aOut
		require.NoError(t, a.Start())
		var dB drainSummary
		bDone := make(chan struct{})
		go func() {
			defer close(bDone)
			code, out, errs := runCLI(append(common[:len(common):len(common)], "--out", outB, "--idle-exit", "2s")...)
			if code != 0 || jsonUnmarshal(out, &dB) != nil {
				t.Errorf("drain B: %d %s %s", code, out, errs)
			}
		}()
		err = a.Wait()
		<-bDone
		if err == nil {
			// B may have taken every message before A committed anything: a round
			// without a kill, checked all the same.
			t.Logf("round %d (%s): drain A was not killed (B took its messages first)", rounds, step)
		}
		code, out, errs := runCLI(append(common[:len(common):len(common)], "--out", outA, "--idle-exit", "300ms")...)
		require.Equal(t, 0, code, errs)
		var dA drainSummary
		require.NoError(t, jsonUnmarshal(out, &dA), out)
		files := globFiles(t, filepath.Join(dirA, "a*.parquet"), filepath.Join(dirB, "b*.parquet"))
		require.Empty(t, globFiles(t, filepath.Join(dirA, "*"+partialSuffix), filepath.Join(dirB, "*"+partialSuffix)))
		require.EqualValues(t, n, readRowsOnce(t, files), "round %d (%s): every row once across %v", rounds, step, files)
		rows += n
		dropped += dB.Duplicates + dA.Duplicates
		b.Close()
	}
	t.Logf("%d rounds, %d rows each in the files exactly once, %d messages delivered again and dropped as committed by the killed drain", rounds, rows, dropped)
}

// TestSoakWorkerSIGTERMFullStream: issue 35's worker repro, repeated: a worker whose stream is
// full and never empties (no consumer) ends within 5 s of SIGTERM with the default --stop-wait
// (make soak).
func TestSoakWorkerSIGTERMFullStream(t *testing.T) {
	needRuntime(t)
	d := soakDuration(t)
	var worst time.Duration
	rounds := 0
	for start := time.Now(); time.Since(start) < d || rounds < 3; rounds++ {
		b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
		require.NoError(t, err)
		js := connectJS(t, b.URL())
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		require.NoError(t, scaleout.EnsureRun(ctx, js, "full", scaleout.RunConfig{MaxBytes: 128 << 10}))
		code, _, errs := runCLI("publish-policy", "--server", b.URL(), "--run", "full", "../../models/cartpole_mlp.onnx")
		require.Equal(t, 0, code, errs)
		cmd := exec.Command(os.Args[0], "worker", "--server", b.URL(), "--run", "full", "--sampler", "wf",
			"--num-envs", "4", "--fragment-length", "100", "--poll", "500ms")
		cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
		var out bytes.Buffer
		sw := &syncWriter{w: &out}
		cmd.Stdout, cmd.Stderr = sw, sw
		require.NoError(t, cmd.Start())
		for deadline := time.Now().Add(30 * time.Second); ; {
			st, err := scaleout.RunStatus(ctx, js, "full")
			require.NoError(t, err)
			if len(st.Samplers) == 1 && st.Samplers[0].Stats.Full > 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the worker was never refused by the full stream")
			time.Sleep(50 * time.Millisecond)
		}
		sent := time.Now()
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			require.NoError(t, err, sw.String())
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("round %d: no exit 15 s after SIGTERM:\n%s", rounds, sw.String())
		}
		took := time.Since(sent)
		worst = max(worst, took)
		require.Less(t, took, 5*time.Second, "round %d", rounds)
		cancel()
		b.Close()
	}
	t.Logf("%d rounds: SIGTERM to exit at most %v", rounds, worst)
}
