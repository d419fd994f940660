package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/client"
)

const (
	cartPoleObsSpace = `{"type":"Box","low":[-4.8,-3.4e38,-0.42,-3.4e38],"high":[4.8,3.4e38,0.42,3.4e38],"shape":[4]}`
	cartPoleActSpace = `{"type":"Discrete","n":2}`
)

// serveProcess is `sample serve` running in a child process.
type serveProcess struct {
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{} // stderr drained
}

func (p *serveProcess) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// startServe runs the binary with `serve --addr 127.0.0.1:0 args...` and waits for the line
// that gives the address.
func startServe(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "SAMPLE_TEST_MAIN=1")
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &serveProcess{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if _, a, ok := strings.Cut(line, "listening on "); ok {
				addr <- a
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	select {
	case p.url = <-addr:
	case <-p.done:
		cmd.Wait()
		t.Fatalf("sample serve exited before listening: %s", p.stderrText())
	case <-time.After(60 * time.Second):
		t.Fatalf("sample serve is not listening after 60s: %s", p.stderrText())
	}
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *serveProcess) stop(t *testing.T) string {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	<-p.done
	err := p.cmd.Wait()
	errs := p.stderrText()
	require.NoError(t, err, errs)
	assert.NotContains(t, errs, "goroutine")
	assert.NotContains(t, errs, "panic")
	return errs
}

// served counts what the clients were answered.
type served struct {
	mu                     sync.Mutex
	steps, ended, trunc    int
	open                   int
	returnSum, rewardTotal float64
}

// cartPoleEpisode runs one CartPole episode through the client, acting itself every fifth
// step; with leaveOpen it stops after a few steps without ending the episode.
func cartPoleEpisode(ctx context.Context, c *client.Client, id string, seed uint64, leaveOpen bool, s *served) error {
	cp, err := classic.NewCartPole(env.Config{"max_episode_steps": 40})
	if err != nil {
		return err
	}
	obs, next := make([]float32, 4), make([]float32, 4)
	if _, err := cp.Reset(env.WithSeed(seed), obs); err != nil {
		return err
	}
	if _, err := c.StartEpisode(ctx, id, true); err != nil {
		return err
	}
	for t := 0; ; t++ {
		var act []float32
		if t%5 == 4 {
			act = []float32{float32(t % 2)}
			err = c.LogAction(ctx, id, obs, act)
		} else {
			act, err = c.GetAction(ctx, id, obs)
		}
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.steps++
		s.mu.Unlock()
		if leaveOpen && t == 6 {
			s.mu.Lock()
			s.open++
			s.mu.Unlock()
			return nil
		}
		res, err := cp.Step(act, next)
		if err != nil {
			return err
		}
		if err := c.LogReturns(ctx, id, res.Reward, nil); err != nil {
			return err
		}
		obs, next = next, obs
		switch {
		case res.Terminated:
			s.mu.Lock()
			s.ended++
			s.mu.Unlock()
			return c.EndEpisode(ctx, id, obs)
		case res.Truncated:
			s.mu.Lock()
			s.trunc++
			s.mu.Unlock()
			return c.EndEpisodeTruncated(ctx, id, obs)
		}
	}
}

// TestServeEpisodes starts the binary, runs CartPole episodes from concurrent clients (some
// left open), sends SIGTERM, and checks that the sample file holds every step served, the
// open episodes ended truncated (in JSON lines and in Parquet).
func TestServeEpisodes(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		args      []string
		runtime   bool
	}{
		{"bundled policy", "served.jsonl", nil, true},
		{"bundled policy on the native provider", "served.jsonl", []string{"--device", "native"}, true},
		{"random", "served.parquet", []string{"--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.runtime {
				needRuntime(t)
			}
			if len(tc.args) == 2 && tc.args[1] == "native" {
				needNative(t)
			}
			out := filepath.Join(t.TempDir(), tc.out)
			p := startServe(t, append([]string{"--out", out, "--max-episodes", "16", "--fragment-length", "10"}, tc.args...)...)
			c, err := client.New(p.url, client.Options{})
			require.NoError(t, err)
			ctx := context.Background()
			require.NoError(t, c.Health(ctx))
			s := &served{}
			var wg sync.WaitGroup
			errs := make([]error, 6)
			for g := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for e := range 4 {
						id := fmt.Sprintf("g%d-e%d", g, e)
						if err := cartPoleEpisode(ctx, c, id, uint64(10*g+e), g < 2 && e == 3, s); err != nil {
							errs[g] = fmt.Errorf("%s: %w", id, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))
			// A bad request on the way changes nothing.
			_, err = c.GetAction(ctx, "g0-e0", []float32{0, 0, 0, 0})
			require.ErrorIs(t, err, externalenv.ErrEpisodeDone)

			errText := p.stop(t)
			assert.Contains(t, errText, fmt.Sprintf("wrote %d rows", s.steps))
			bs := readAll(t, completeFiles(out)) // a flush (every 5 s) closes a file
			require.Equal(t, int64(s.steps), rowsOf(bs), "every served step is a row")
			term, trunc := 0, 0
			for _, b := range bs {
				sb := b.PolicyBatches[envrunner.DefaultPolicyID]
				require.NoError(t, sb.Validate())
				for i := range sb.Count {
					if sb.Terminateds[i] {
						term++
					}
					if sb.Truncateds[i] {
						trunc++
					}
				}
			}
			assert.Equal(t, s.ended, term)
			assert.Equal(t, s.trunc+s.open, trunc, "time limits and the episodes left open")
			assert.Equal(t, 2, s.open)
		})
	}
}

// TestServeMultiAgent: --multi-agent with objects keyed by agent id; an episode left open is
// ended at SIGTERM with every agent's steps kept.
func TestServeMultiAgent(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ma.jsonl")
	p := startServe(t, "--multi-agent", "--out", out, "--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace)
	c, err := client.New(p.url, client.Options{})
	require.NoError(t, err)
	ma := c.MultiAgent()
	ctx := context.Background()
	steps := 0
	for k, id := range []string{"closed", "open"} {
		_, err := ma.StartEpisode(ctx, id, true)
		require.NoError(t, err)
		for i := range 4 {
			o := []float32{float32(i) / 10, 0, 0, 0}
			acts, err := ma.GetAction(ctx, id, map[string][]float32{"a": o, "b": o})
			require.NoError(t, err)
			require.Len(t, acts, 2)
			steps += 2
			require.NoError(t, ma.LogReturns(ctx, id, map[string]float64{"a": 1, "b": 2}, nil, nil))
		}
		if k == 0 {
			require.NoError(t, ma.EndEpisode(ctx, id, map[string][]float32{"a": {0, 0, 0, 0}, "b": {0, 0, 0, 0}}))
		}
	}
	p.stop(t)
	bs := readBatches(t, completeFiles(out))
	assert.Equal(t, int64(steps), rowsOf(bs))
}

// TestServeBadInput: bad flags and inputs fail before serving, with a non-zero status, one
// line on stderr, no stack trace and no sample file.
func TestServeBadInput(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	random := []string{"--model", "random", "--obs-space", cartPoleObsSpace, "--action-space", cartPoleActSpace}
	cases := []struct {
		name    string
		args    []string
		code    int
		want    string
		runtime bool
	}{
		{"unknown flag", []string{"--frobnicate"}, 2, "unknown flag --frobnicate", false},
		{"bad int", []string{"--max-episodes", "many"}, 2, "invalid value", false},
		{"no episodes", []string{"--max-episodes", "0"}, 2, "--max-episodes 0", false},
		{"bad addr", []string{"--addr", "nowhere"}, 2, "--addr", false},
		{"bad device", []string{"--device", "abacus"}, 2, "--device", false},
		{"zero timeout", []string{"--timeout", "0s"}, 2, "--timeout", false},
		{"bad body limit", []string{"--max-body", "lots"}, 2, "--max-body", false},
		{"bad file size", []string{"--max-file-size", "big"}, 2, "--max-file-size", false},
		{"random without spaces", []string{"--model", "random"}, 2, "--obs-space and --action-space", false},
		{"bad space", []string{"--model", "random", "--obs-space", `{"type":"Box","low":1,"high":0,"shape":[2]}`, "--action-space", cartPoleActSpace}, 2, "--obs-space", false},
		{"positional", []string{"extra"}, 2, "unexpected argument", false},
		{"address in use", append([]string{"--addr", busy.Addr().String()}, random...), 1, "address already in use", false},
		{"missing model", []string{"--model", filepath.Join(dir, "nope.onnx")}, 1, "no such file", true},
		{"model vs spaces", []string{"--obs-space", `{"type":"Box","low":-1,"high":1,"shape":[3]}`}, 1, "the model wants", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.runtime {
				needRuntime(t)
			}
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".jsonl")
			code, _, errs := runCLI(append([]string{"serve", "--out", out}, c.args...)...)
			assert.Equal(t, c.code, code, errs)
			assert.Contains(t, errs, c.want)
			assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
			assert.NotContains(t, errs, "goroutine")
			assert.NotContains(t, errs, "panic")
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "a sample file was created")
		})
	}
	// -h prints the usage to stdout and succeeds; its text names no internals.
	code, out, errs := runCLI("serve", "-h")
	assert.Equal(t, 0, code)
	assert.Empty(t, errs)
	assert.Contains(t, out, "-multi-agent")
	assert.NotContains(t, out, "goroutine")
	assert.NotContains(t, out, "panic")
}

// TestServeInterruptExitStatus: SIGINT stops the server as cleanly as SIGTERM (the file
// written, the summary printed) and exits 130, as a shell reports an interrupted command;
// SIGTERM, the way services are stopped, exits 0 (see (*serveProcess).stop).
func TestServeInterruptExitStatus(t *testing.T) {
	out := filepath.Join(t.TempDir(), "int.jsonl")
	p := startServe(t, "--out", out)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	<-p.done
	err := p.cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, p.stderrText())
	assert.Equal(t, 130, ee.ExitCode(), p.stderrText())
	assert.Contains(t, p.stderrText(), "stopped after")
	assert.NotContains(t, p.stderrText(), "panic")
}
