package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// the workers are held back until the drain starts; one worker is SIGKILLed; a new policy
// version reaches the live workers; the broker is SIGKILLed and restarted on the same store.
// At the end every row the live workers report is in the drain's files, and no row twice.
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
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, scaleout.EnsureRun(ctx, js, "f", scaleout.RunConfig{MaxBytes: 256 << 10}))
	code, _, errs := runCLI("publish-policy", "--server", url, "--run", "f", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)

	var workers []*exec.Cmd
	for k := range 3 {
		workers = append(workers, child(t, dir, fmt.Sprintf("w%d", k), "worker", "--server", url, "--run", "f",
			"--sampler", fmt.Sprintf("w%d", k), "--num-envs", "2", "--fragment-length", "100", "--seed", fmt.Sprint(10*k), "--poll", "500ms"))
	}
	status := func() *scaleout.Status {
		sctx, c := context.WithTimeout(ctx, 5*time.Second)
		defer c()
		st, err := scaleout.RunStatus(sctx, js, "f")
		if err != nil {
			return &scaleout.Status{}
		}
		return st
	}
	sampler := func(st *scaleout.Status, name string) scaleout.SamplerState {
		for _, s := range st.Samplers {
			if s.Sampler == name {
				return s
			}
		}
		return scaleout.SamplerState{}
	}
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
	drain := child(t, dir, "drain", "drain", "--server", url, "--run", "f", "--out", out, "--segment-rows", "2000",
		"--segment-time", "1s", "--json")

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

	var live int64
	re := regexp.MustCompile(`(\d+) rows,`)
	for k := range 2 {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("w%d.out", k)))
		require.NoError(t, err)
		m := re.FindStringSubmatch(string(b))
		require.NotNil(t, m, "%s", b)
		n, _ := strconv.ParseInt(m[1], 10, 64)
		live += n
	}
	db, err := os.ReadFile(filepath.Join(dir, "drain.out"))
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(string(db)))
	var files []string
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "{") {
			var s drainSummary
			require.NoError(t, jsonUnmarshal(line, &s))
			files = s.Out
			t.Logf("drain: %d messages, %d rows, %d duplicates dropped", s.Messages, s.Rows, s.Duplicates)
		}
	}
	require.NotEmpty(t, files, "%s", db)
	rows := readRowsOnce(t, files) // fails on a row written twice
	killed := rows - live
	t.Logf("live workers acknowledged %d rows; the drain wrote %d (%d from the killed worker)", live, rows, killed)
	require.GreaterOrEqual(t, killed, int64(0), "rows of the live workers lost")
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
