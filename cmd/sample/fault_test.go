package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/scaleout"
)

// child runs the test binary as `sample args...`, its output in a file of dir.
func child(t *testing.T, dir, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1")
	out, err := os.Create(filepath.Join(dir, name+".out"))
	require.NoError(t, err)
	t.Cleanup(func() { out.Close() })
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitFor polls cond every 50 ms for up to limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		require.Less(t, time.Since(start), limit, "waiting for %s", what)
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// TestScaleoutFaults: a broker process, 3 worker processes and a drain; the stream is small, so
// the workers are held back until the drain starts, and still while the drain, slowed by
// --max-rate, consumes; one worker is SIGKILLed; a new policy version reaches the live
// workers; the broker is SIGKILLed and restarted on the same store. At the end every message
// the stream acknowledged to any worker (their --ack-log, the killed one's included) is in
// the drain's files, no row twice, and at most the killed worker's last publishes (the
// publisher's window of messages) are there without an acknowledgement.
func TestScaleoutFaults(t *testing.T) {
	needRuntime(t)
	dir, store := t.TempDir(), t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range []string{"broker1", "broker2", "w0", "w1", "w2", "drain"} {
				b, _ := os.ReadFile(filepath.Join(dir, n+".out"))
				t.Logf("%s:\n%s", n, lastBytes(string(b), 1500))
			}
		}
	})
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	listen := strings.TrimPrefix(url, "nats://")
	startBroker := func(name string) *exec.Cmd {
		cmd := child(t, dir, name, "broker", "--listen", listen, "--store", store)
		waitFor(t, 10*time.Second, "the broker", func() bool {
			nc, err := nats.Connect(url)
			if err == nil {
				nc.Close()
			}
			return err == nil
		})
		return cmd
	}
	broker := startBroker("broker1")
	js := connectJS(t, url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, scaleout.EnsureRun(ctx, js, "f", scaleout.RunConfig{MaxBytes: 256 << 10}))
	code, _, errs := runCLI("publish-policy", "--server", url, "--run", "f", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)

	var workers []*exec.Cmd
	for k := range 3 {
		workers = append(workers, child(t, dir, fmt.Sprintf("w%d", k), "worker", "--server", url, "--run", "f",
			"--sampler", fmt.Sprintf("w%d", k), "--num-envs", "2", "--fragment-length", "100", "--seed", fmt.Sprint(10*k), "--poll", "500ms",
			"--ack-log", filepath.Join(dir, fmt.Sprintf("w%d.acks", k))))
	}
	status := func() *scaleout.Status { return runStatusOrEmpty(ctx, js, "f") }
	sampler := samplerState
	// Back-pressure: nobody consumes, the 256 KiB stream fills, every worker is refused.
	waitFor(t, 20*time.Second, "every worker refused by the full stream", func() bool {
		st := status()
		return sampler(st, "w0").Stats.Full > 0 && sampler(st, "w1").Stats.Full > 0 && sampler(st, "w2").Stats.Full > 0
	})
	require.NoError(t, workers[2].Process.Kill())
	workers[2].Wait()
	out := filepath.Join(dir, "d.parquet")
	// --segment-time 1s: the drain's AckWait is 2 x segment time + 1 min. An acknowledgement
	// lost in the broker's SIGKILL leaves its message in the stream until the server delivers
	// it again after AckWait, and the drain drops it as a duplicate.
	// --max-rate: a drain slower than the workers, so the stream stays full while it consumes.
	full0, full1 := sampler(status(), "w0").Stats.Full, sampler(status(), "w1").Stats.Full
	drain := child(t, dir, "drain", "drain", "--server", url, "--run", "f", "--out", out, "--segment-rows", "2000",
		"--segment-time", "1s", "--max-rate", "4000", "--json")
	waitFor(t, 30*time.Second, "the workers refused again while the slow drain consumes", func() bool {
		st := status()
		consuming := false
		for _, c := range st.Consumers {
			consuming = consuming || c.AckPending > 0 || c.Pending < uint64(st.Messages)
		}
		return consuming && sampler(st, "w0").Stats.Full > full0+3 && sampler(st, "w1").Stats.Full > full1+3
	})

	code, _, errs = runCLI("publish-policy", "--server", url, "--run", "f", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)
	rollout := waitFor(t, 10*time.Second, "version 2 on the live workers", func() bool {
		st := status()
		return sampler(st, "w0").PolicyVersion == 2 && sampler(st, "w1").PolicyVersion == 2
	})
	t.Logf("version 2 on both live workers after %v", rollout)

	before := sampler(status(), "w0").Stats.Batches
	require.NoError(t, broker.Process.Kill())
	broker.Wait()
	startBroker("broker2")
	waitFor(t, 30*time.Second, "the workers publishing again after the broker restart", func() bool {
		return sampler(status(), "w0").Stats.Batches > before+5
	})
	for _, w := range workers[:2] {
		require.NoError(t, w.Process.Signal(syscall.SIGTERM))
		require.NoError(t, w.Wait())
	}
	drained := waitFor(t, 90*time.Second, "the drain to take every message (redelivery after AckWait, 62 s, included)", func() bool {
		st := status()
		return st.Stream != "" && st.Messages == 0
	})
	t.Logf("stream empty %v after the live workers stopped", drained)
	require.NoError(t, drain.Process.Signal(syscall.SIGTERM))
	require.NoError(t, drain.Wait())

	// What the stream acknowledged to each worker, the SIGKILLed one included (its log ends
	// at its last acknowledgement).
	ackedMsgs, ackedRows := readAckLogs(t, dir, 3)
	db, err := os.ReadFile(filepath.Join(dir, "drain.out"))
	require.NoError(t, err)
	sum := lastDrainSummary(t, string(db))
	require.NotEmpty(t, sum.Out, "%s", db)
	rows := readRowsOnce(t, sum.Out) // fails on a row written twice
	lost := max(0, ackedRows-rows)
	// Rows in the stream that no worker heard acknowledged: the killed worker's messages on
	// their way (its publisher's window; a message is one batch of 2 x 100 rows at most).
	unacked := rows - ackedRows
	t.Logf("acknowledged %d messages (%d rows) to the three workers; drain received %d messages (%d rows, each once), dropped %d duplicates; lost %d rows; %d rows in the stream without an acknowledgement",
		ackedMsgs, ackedRows, sum.Messages, rows, sum.Duplicates, lost, unacked)
	require.Zero(t, lost, "acknowledged rows missing from the drained files")
	require.EqualValues(t, rows, sum.Rows, "the drain's count against the rows in its files")
	require.LessOrEqual(t, unacked, int64(scaleout.DefaultWindow*200), "more rows than the killed worker's window of messages came without an acknowledgement")
}

// runStatusOrEmpty is the run's status, empty when the server does not answer within 5 s
// (restarting).
func runStatusOrEmpty(ctx context.Context, js jetstream.JetStream, run string) *scaleout.Status {
	sctx, c := context.WithTimeout(ctx, 5*time.Second)
	defer c()
	st, err := scaleout.RunStatus(sctx, js, run)
	if err != nil {
		return &scaleout.Status{}
	}
	return st
}

// samplerState is the state name reports in st (zero if none).
func samplerState(st *scaleout.Status, name string) scaleout.SamplerState {
	for _, s := range st.Samplers {
		if s.Sampler == name {
			return s
		}
	}
	return scaleout.SamplerState{}
}

// readAckLogs reads the --ack-log files wK.acks of n workers: the messages the stream
// acknowledged and their rows, each message once (a retried publish is acknowledged again
// as a duplicate).
func readAckLogs(t *testing.T, dir string, n int) (msgs, rows int64) {
	t.Helper()
	ids := map[string]bool{}
	for k := range n {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("w%d.acks", k)))
		require.NoError(t, err)
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" {
				continue // the end, or a worker that never heard an acknowledgement
			}
			id, r, ok := strings.Cut(line, " ")
			require.True(t, ok, "ack log line %q", line)
			nr, err := strconv.ParseInt(r, 10, 64)
			require.NoError(t, err)
			if !ids[id] {
				ids[id] = true
				rows += nr
				msgs++
			}
		}
	}
	return msgs, rows
}

// lastDrainSummary is the last JSON summary line of a drain's output.
func lastDrainSummary(t *testing.T, out string) drainSummary {
	t.Helper()
	var sum drainSummary
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "{") {
			require.NoError(t, jsonUnmarshal(line, &sum))
		}
	}
	return sum
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
