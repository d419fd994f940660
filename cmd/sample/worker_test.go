package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/scaleout"
)

// TestWorkerPolicyRollout: two worker processes sample with version 1 of the run's policy; a
// new version reaches both within 10 s; after SIGTERM every row they report is in the stream
// exactly once, each sampler's versions never going back, and episodes running at the swap
// go on under the new version (their rows continue at the next t): no episode ends at a swap
// without a done flag.
func TestWorkerPolicyRollout(t *testing.T) {
	needRuntime(t)
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	code, _, errs := runCLI("publish-policy", "--server", b.URL(), "--run", "w", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)

	dir := t.TempDir()
	var cmds []*exec.Cmd
	for k := range 2 {
		args := []string{"worker", "--server", b.URL(), "--run", "w", "--sampler", fmt.Sprintf("w%d", k),
			"--num-envs", "2", "--fragment-length", "97", "--seed", fmt.Sprint(k), "--poll", "500ms"}
		if k == 0 {
			args = append(args, "--metrics", "127.0.0.1:0")
		}
		cmds = append(cmds, child(t, dir, fmt.Sprintf("w%d", k), args...)) // output in w0.out, w1.out
	}
	js := connectJS(t, b.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitVersion := func(v uint64) time.Duration { return waitWorkersOnVersion(t, ctx, js, "w", v, 2) }
	waitVersion(1)
	code, _, errs = runCLI("publish-policy", "--server", b.URL(), "--run", "w", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)
	rollout := waitVersion(2)
	t.Logf("policy version 2 on both workers after %v (including up to 1 s of reporting delay)", rollout)
	checkRolloutMetrics(t, fetchWorkerMetrics(t, filepath.Join(dir, "w0.out")))
	for _, cmd := range cmds {
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, cmd.Wait())
	}

	// Every row reported is in the stream once; versions per sampler never go back.
	c, err := scaleout.NewConsumer(ctx, js, scaleout.ConsumerOptions{Run: "w"})
	require.NoError(t, err)
	rows := map[string]int64{}
	last := map[string]uint64{}
	seen := map[string]bool{}
	type episodeAt struct {
		t int32
		v uint64
	}
	// Episodes last up to 500 steps; a fragment of 97 steps puts a batch boundary (where
	// the swap happens) on an episode's end only once in 48,500 steps.
	running := map[string]episodeAt{} // sampler/eps_id -> its last row
	across := map[string]int{}        // sampler -> episodes that went on across the swap
	for {
		msgs, err := c.Fetch(64, 500*time.Millisecond)
		require.NoError(t, err)
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			h := m.Headers()
			id := h.Get(scaleout.HeaderMsgID)
			require.False(t, seen[id], "message %s twice", id)
			seen[id] = true
			s := h.Get(scaleout.HeaderSampler)
			v, err := strconv.ParseUint(h.Get(scaleout.HeaderPolicyVersion), 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, v, last[s], "sampler %s went back from version %d to %d", s, last[s], v)
			last[s] = v
			mb, _, err := scaleout.Decode(&nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: h})
			require.NoError(t, err)
			rows[s] += int64(mb.Rows())
			pb := mb.PolicyBatches[envrunner.DefaultPolicyID]
			for i := range pb.Count {
				key := fmt.Sprintf("%s/%d", s, pb.EpsID[i])
				if e, ok := running[key]; ok {
					require.Equal(t, e.t+1, pb.T[i], "episode %s: its rows go on at the next t", key)
					if e.v != v {
						across[s]++
					}
				}
				running[key] = episodeAt{pb.T[i], v}
				if pb.Terminateds[i] || pb.Truncateds[i] {
					delete(running, key)
				}
			}
		}
		require.NoError(t, scaleout.AckAll(ctx, msgs))
	}
	for k := range 2 {
		s := fmt.Sprintf("w%d", k)
		out, err := os.ReadFile(filepath.Join(dir, s+".out"))
		require.NoError(t, err)
		require.Contains(t, string(out), fmt.Sprintf("worker %s: ", s))
		require.Contains(t, string(out), fmt.Sprintf(" %d rows,", rows[s]), "rows in the stream: %d", rows[s])
		require.EqualValues(t, 2, last[s])
		require.Positive(t, across[s], "sampler %s: no episode went on across the swap (the swap must not end them)", s)
		// Without a done flag at the end of the stream: only the episodes SIGTERM cut, one
		// per sub-environment. The worker before Runner.SwapPolicy left the episodes running
		// at each swap there too (a new runner reset the environments): 4 here.
		abandoned := 0
		for key := range running {
			if strings.HasPrefix(key, s+"/") {
				abandoned++
			}
		}
		require.LessOrEqual(t, abandoned, 2, "sampler %s: episodes that stop without terminated or truncated", s)
	}
}

// fetchWorkerMetrics fetches the Prometheus text of the worker whose log is at path (it prints
// the address of its --metrics endpoint).
func fetchWorkerMetrics(t *testing.T, path string) string {
	t.Helper()
	out, err := os.ReadFile(path)
	require.NoError(t, err)
	m := regexp.MustCompile(`metrics at (http://\S+/metrics)`).FindSubmatch(out)
	require.NotNil(t, m, "no metrics address in the log:\n%s", out)
	resp, err := http.Get(string(m[1]))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// TestWorkerStopsOnSignalWhileStreamFull: a worker whose stream is full (no consumer) keeps
// retrying its queued batches; SIGTERM must still end it within 5 s with the default
// --stop-wait (3 s; it was 10 s), exit 0, and say how many batches never reached the stream.
func TestWorkerStopsOnSignalWhileStreamFull(t *testing.T) {
	needRuntime(t)
	b, err := scaleout.StartBroker(scaleout.BrokerOptions{StoreDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	js := connectJS(t, b.URL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, scaleout.EnsureRun(ctx, js, "full", scaleout.RunConfig{MaxBytes: 128 << 10}))
	code, _, errs := runCLI("publish-policy", "--server", b.URL(), "--run", "full", "../../models/cartpole_mlp.onnx")
	require.Equal(t, 0, code, errs)

	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "worker", "--server", b.URL(), "--run", "full", "--sampler", "wf",
		"--num-envs", "4", "--fragment-length", "100", "--poll", "500ms")
	// GORACE: a -race binary otherwise sleeps 1 s at exit (the race runtime's atexit_sleep_ms).
	cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	sw := &syncWriter{w: &out}
	cmd.Stdout, cmd.Stderr = sw, sw
	require.NoError(t, cmd.Start())
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := scaleout.RunStatus(ctx, js, "full")
		require.NoError(t, err)
		if len(st.Samplers) == 1 && st.Samplers[0].Stats.Full > 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the worker was never refused by the full stream: %+v", st)
		time.Sleep(50 * time.Millisecond)
	}
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		require.NoError(t, err, "worker output:\n%s", sw.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("the worker did not stop 15 s after SIGTERM:\n%s", sw.String())
	}
	took := time.Since(start)
	t.Logf("stopped %v after SIGTERM", took)
	require.Less(t, took, 5*time.Second, "SIGTERM must end a worker within 5 s")
	require.Regexp(t, `stopped after --stop-wait 3s with [1-9][0-9]* sampled batches \([0-9]+ rows\) never acknowledged`, sw.String())
}

// syncWriter serializes writes of two streams into one buffer.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestWorkerEpisodeWindow: the means are over the last 100 episodes that were not faulty.
func TestWorkerEpisodeWindow(t *testing.T) {
	var m workerMetrics
	var ms []envrunner.RolloutMetrics
	for i := range 250 {
		ms = append(ms, envrunner.RolloutMetrics{EpisodeReturn: float64(i), EpisodeLength: 2 * i})
		if i%50 == 0 {
			ms = append(ms, envrunner.RolloutMetrics{Faulty: true, EpisodeReturn: 1e9})
		}
		if i%7 == 0 {
			m.ended(ms)
			ms = ms[:0]
		}
	}
	m.ended(ms)
	var b strings.Builder
	m.write(&b, scaleout.PublisherStats{})
	for _, want := range []string{"sample_worker_num_episodes_lifetime 250\n", "sample_worker_num_env_step_failures 5\n",
		"sample_worker_episode_return_mean 199.5\n", "sample_worker_episode_len_mean 399\n"} {
		require.Contains(t, b.String(), want)
	}
}

// waitWorkersOnVersion waits (10 s at most) until n samplers of run report batches with
// policy version v, and returns how long that took.
func waitWorkersOnVersion(t *testing.T, ctx context.Context, js jetstream.JetStream, run string, v uint64, n int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		st, err := scaleout.RunStatus(ctx, js, run)
		require.NoError(t, err)
		on := 0
		for _, s := range st.Samplers {
			if s.PolicyVersion == v && s.Stats.Batches > 0 {
				on++
			}
		}
		if on == n {
			return time.Since(start)
		}
		require.Less(t, time.Since(start), 10*time.Second, "samplers %+v", st.Samplers)
		time.Sleep(50 * time.Millisecond)
	}
}

// checkRolloutMetrics checks a worker's metrics after it swapped to version 2: the version
// gauges, the swap count and time, and CartPole's mean return equal to its mean length (a
// reward of 1 a step).
func checkRolloutMetrics(t *testing.T, metrics string) {
	t.Helper()
	for _, want := range []string{"sample_worker_policy_version 2\n", "sample_worker_policy_latest_version 2\n",
		"sample_worker_policy_version_lag 0\n", "sample_worker_policy_swaps_total 2\n", "# TYPE sample_worker_policy_swap_seconds gauge\n"} {
		require.Contains(t, metrics, want)
	}
	ret := regexp.MustCompile(`(?m)^sample_worker_episode_return_mean (\S+)$`).FindStringSubmatch(metrics)
	length := regexp.MustCompile(`(?m)^sample_worker_episode_len_mean (\S+)$`).FindStringSubmatch(metrics)
	require.NotNil(t, ret, metrics)
	require.NotNil(t, length, metrics)
	require.Equal(t, ret[1], length[1], metrics)
	require.Regexp(t, `(?m)^sample_worker_num_episodes_lifetime [0-9]+$`, metrics)
	swap := regexp.MustCompile(`(?m)^sample_worker_policy_swap_seconds (\S+)$`).FindStringSubmatch(metrics)
	require.NotNil(t, swap, metrics)
	secs, err := strconv.ParseFloat(swap[1], 64)
	require.NoError(t, err)
	require.True(t, secs > 0 && secs < 10, "swap took %v s", secs)
	t.Logf("worker w0: version 2 taken %.3f s after it was seen (download, check, session, next batch boundary)", secs)
}

// connectJS connects to the NATS server at url (options added to the defaults) for the rest
// of the test.
func connectJS(t *testing.T, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}
