package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/externalenv/client"
)

// The load-and-fault suite (`make soak`): long, so it runs only with SAMPLE_SOAK=1, for
// SAMPLE_SOAK_DURATION (default 60s) of load per scenario. All traffic goes to 127.0.0.1.

func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	if os.Getenv("SAMPLE_SOAK") != "1" {
		t.Skip("the load-and-fault suite runs with SAMPLE_SOAK=1 (make soak)")
	}
	d := 60 * time.Second
	if v := os.Getenv("SAMPLE_SOAK_DURATION"); v != "" {
		var err error
		d, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	return d
}

// peakRSS returns the peak resident set size of process pid (VmHWM), in MiB.
func peakRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return -1
}

// soakLoad is the traffic of the suite: clients running CartPole episodes (a fifth of them
// abandoning theirs), and hostile requests beside them.
type soakLoad struct {
	url      string
	mu       sync.Mutex
	lat      []time.Duration // every client request's latency
	s        served
	tried    atomic.Int64 // requests sent
	correct  atomic.Int64 // answered as expected
	wrong    atomic.Int64
	badNotes []string
}

func (l *soakLoad) note(format string, args ...any) {
	l.wrong.Add(1)
	l.mu.Lock()
	if len(l.badNotes) < 10 {
		l.badNotes = append(l.badNotes, fmt.Sprintf(format, args...))
	}
	l.mu.Unlock()
}

// clients runs n client goroutines until ctx ends.
func (l *soakLoad) clients(ctx context.Context, n int) *sync.WaitGroup {
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConns: n + 16, MaxIdleConnsPerHost: n + 16, IdleConnTimeout: 90 * time.Second}
	c, _ := client.New(l.url, client.Options{HTTPClient: &http.Client{Transport: &timing{base: tr, l: l}}})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				id := fmt.Sprintf("c%d-e%d", i, k)
				abandon := (i+k)%5 == 0 // 20% of the episodes are abandoned
				var local served
				err := cartPoleEpisode(ctx, c, id, uint64(i*100000+k), abandon, &local)
				// Each step is one /action or /log_action and one /returns; plus start and end.
				reqs := int64(2*local.steps + 2)
				l.tried.Add(reqs)
				l.mu.Lock()
				l.s.steps += local.steps
				l.s.open += local.open
				l.mu.Unlock()
				if err != nil && ctx.Err() == nil {
					var ce *client.Error
					if errors.As(err, &ce) && ce.StatusCode == http.StatusTooManyRequests {
						l.correct.Add(reqs) // a full server says so: a correct answer
						time.Sleep(10 * time.Millisecond)
						continue
					}
					l.note("episode %s: %v", id, err)
					continue
				}
				l.correct.Add(reqs)
			}
		}()
	}
	return &wg
}

// hostile sends malformed and abusive requests until ctx ends, checking each answer's code.
func (l *soakLoad) hostile(ctx context.Context) *sync.WaitGroup {
	var wg sync.WaitGroup
	big := `{"observation":[` + strings.Repeat("0,", 3<<20) + `0]}`
	cases := []struct {
		path, ctype, body string
		want              int
	}{
		{"/v1/episodes", "text/plain", "{}", 415},
		{"/v1/episodes", "application/json", `{"episode_id": 5}`, 400},
		{"/v1/episodes/nope/action", "application/json", `{"observation":[0,0,0,0]}`, 404},
		{"/v1/episodes/x/action", "application/json", `{"observation":[0,0,`, 400},
		{"/v1/act", "application/json", `{"observations":[[1e39,0,0,0]]}`, 400},
		{"/v1/act", "application/json", `{"observations":[[0,0,0,0],[0.1,0,0,0]]}`, 200},
		{"/v1/episodes/nope/returns", "application/json", `{"reward": 1e39}`, 400},
		{"/v1/episodes/nope/action", "application/json", big, 413},
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; ctx.Err() == nil; k++ {
				c := cases[k%len(cases)]
				req, _ := http.NewRequestWithContext(ctx, "POST", l.url+c.path, strings.NewReader(c.body))
				req.Header.Set("Content-Type", c.ctype)
				l.tried.Add(1)
				res, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						l.note("%s: %v", c.path, err)
					}
					continue
				}
				res.Body.Close()
				if res.StatusCode == c.want {
					l.correct.Add(1)
				} else {
					l.note("%s %.40q: %d, want %d", c.path, c.body, res.StatusCode, c.want)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return &wg
}

// timing records the latency of every request of the clients.
type timing struct {
	base http.RoundTripper
	l    *soakLoad
}

func (t *timing) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.base.RoundTrip(r)
	d := time.Since(start)
	t.l.mu.Lock()
	t.l.lat = append(t.l.lat, d)
	t.l.mu.Unlock()
	return res, err
}

func (l *soakLoad) report(t *testing.T, name string, rss float64, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.lat)
	p50, p99v := time.Duration(0), time.Duration(0)
	if len(l.lat) > 0 {
		p50, p99v = l.lat[len(l.lat)/2], l.lat[(len(l.lat)*99)/100]
	}
	t.Logf("%s: %d requests tried, %d answered correctly, %d not (%v); %d steps served (%.0f/s); "+
		"client request latency p50 %v p99 %v; peak RSS %.0f MiB; notes %q",
		name, l.tried.Load(), l.correct.Load(), l.wrong.Load(), d, l.s.steps, float64(l.s.steps)/d.Seconds(),
		p50, p99v, rss, l.badNotes)
}

// TestSoakSIGTERM: 1,024 clients (20% abandoning episodes), hostile requests and 2,000 slow
// sockets for the duration, then SIGTERM: no row may be lost.
func TestSoakSIGTERM(t *testing.T) {
	d := soakDuration(t)
	out := filepath.Join(t.TempDir(), "soak.jsonl")
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--out", out, "--max-episodes", "1100", "--episode-idle-timeout", "10s", "--flush-interval", "1s",
		"--max-connections", "8192", "--max-connections-per-ip", "8192")
	l := &soakLoad{url: p.url}
	slowSockets(t, strings.TrimPrefix(p.url, "http://"), 2000)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cw, hw := l.clients(ctx, 1024), l.hostile(ctx)
	ds := healthLatencies(t, p.url, 100)
	t.Logf("/healthz under load: p50 %v p99 %v", ds[len(ds)/2], p99(ds))
	cw.Wait()
	hw.Wait()
	rss := peakRSS(p.cmd.Process.Pid)
	if res, err := http.Get(p.url + "/metrics"); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "sample_serve_episodes_") || strings.HasPrefix(line, "sample_serve_panics") ||
				strings.HasPrefix(line, "sample_serve_busy") {
				t.Log(line)
			}
		}
	}
	errs := p.stop(t)
	l.report(t, "SIGTERM", rss, d)
	rows := rowsOf(readBatches(t, filesOf(t, out)))
	t.Logf("rows on disk %d, steps served %d: lost %d", rows, l.s.steps, int64(l.s.steps)-rows)
	assert.GreaterOrEqual(t, rows, int64(l.s.steps), "rows lost on SIGTERM: %s", errs)
	assert.Zero(t, l.wrong.Load(), "%q", l.badNotes)
}

// TestSoakSIGKILL: the same load, then SIGKILL: at most the flush interval's steps may be
// lost (the figure is reported).
func TestSoakSIGKILL(t *testing.T) {
	d := soakDuration(t) / 2
	out := filepath.Join(t.TempDir(), "kill.jsonl")
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--out", out, "--max-episodes", "1100", "--flush-interval", "1s")
	l := &soakLoad{url: p.url}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cw := l.clients(ctx, 1024)
	cw.Wait()
	// Steps served in the last flush interval before the kill bound the loss.
	rate := float64(l.s.steps) / d.Seconds()
	rss := peakRSS(p.cmd.Process.Pid)
	require.NoError(t, p.cmd.Process.Kill())
	<-p.done
	p.cmd.Wait()
	rows := rowsOf(readBatches(t, filesOf(t, out)))
	lost := int64(l.s.steps) - rows
	l.report(t, "SIGKILL", rss, d)
	t.Logf("SIGKILL: steps served %d (%.0f/s), rows on disk %d, lost %d (%.2f s of steps at that rate)",
		l.s.steps, rate, rows, lost, float64(lost)/rate)
	assert.LessOrEqual(t, float64(lost), 2*rate*1.0+2048, "more than the flush interval's steps lost")
}

// TestSoakFullDisk: a 1 MiB tmpfs as the output's disk (root only): the server stays up,
// unhealthy, and its clients are told.
func TestSoakFullDisk(t *testing.T) {
	soakDuration(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--out", filepath.Join(dir, "full.jsonl"), "--max-file-size", "0", "--flush-interval", "200ms")
	l := &soakLoad{url: p.url}
	ctx, cancel := context.WithCancel(context.Background())
	cw := l.clients(ctx, 64)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		res, err := http.Get(p.url + "/healthz")
		require.NoError(t, err)
		res.Body.Close()
		if res.StatusCode == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	cw.Wait()
	code, h := healthz(t, p.url)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	t.Logf("full disk: /healthz %d %v after %d steps", code, h, l.s.steps)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	<-p.done
	p.cmd.Wait()
	errs := p.stderrText()
	assert.Equal(t, 1, strings.Count(errs, "no space left"), errs)
	t.Logf("stderr: %s", errs)
}

func filesOf(t *testing.T, out string) []string {
	t.Helper()
	ext := filepath.Ext(out)
	rot, err := filepath.Glob(strings.TrimSuffix(out, ext) + "-*" + ext)
	require.NoError(t, err)
	return append([]string{out}, rot...)
}

// TestSoakSocketFlood: the 20,000 stalled sockets (as many as this process's file
// limit allows) against the default --max-connections (4,096): every /healthz probe is
// answered at once (503 "too many connections" while the limit is reached, instead of a
// timeout), and once --read-timeout has cut the stalled requests, 200 again.
func TestSoakSocketFlood(t *testing.T) {
	soakDuration(t)
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	n := min(20000, int(lim.Cur)-500)
	p := startServe(t, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace,
		"--read-timeout", "5s")
	addr := strings.TrimPrefix(p.url, "http://")
	start := time.Now()
	slowSockets(t, addr, n)
	t.Logf("%d stalled sockets opened in %v", n, time.Since(start))
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var ds []time.Duration
	codes := map[int]int{}
	for range 200 {
		t0 := time.Now()
		res, err := hc.Get(p.url + "/healthz")
		require.NoError(t, err)
		res.Body.Close()
		ds = append(ds, time.Since(t0))
		codes[res.StatusCode]++
	}
	slices.Sort(ds)
	t.Logf("/healthz with %d stalled sockets: status counts %v, p50 %v, p99 %v, max %v", n, codes, ds[len(ds)/2], p99(ds), ds[len(ds)-1])
	assert.Less(t, p99(ds), 100*time.Millisecond)
	require.Eventually(t, func() bool {
		res, err := hc.Get(p.url + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "/healthz healthy again after --read-timeout")
	t.Logf("healthy again %v after the flood began", time.Since(start))
	p.stop(t)
}
