package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

func needRuntime(tb testing.TB) {
	tb.Helper()
	if err := inference.Init(); err != nil {
		tb.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
}

func TestStatusOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, statusOK},
		{fmt.Errorf("x: %w", errNull), statusInvalidArgument},
		{externalenv.ErrBadObservation, statusInvalidArgument},
		{externalenv.ErrBadAction, statusInvalidArgument},
		{fmt.Errorf("x: %w", externalenv.ErrEpisodeNotFound), statusNotFound},
		{models.ErrModelNotFound, statusNotFound},
		{os.ErrNotExist, statusNotFound},
		{inference.ErrLibraryNotFound, statusNotFound},
		{errReleased, statusState},
		{externalenv.ErrEpisodeDone, statusState},
		{externalenv.ErrEpisodeExists, statusState},
		{externalenv.ErrEpisodeBusy, statusState},
		{externalenv.ErrStopped, statusState},
		{externalenv.ErrTooManyEpisodes, statusLimit},
		{externalenv.ErrTimeout, statusTimeout},
		{withStatus(statusIO, errors.New("disk full")), statusIO},
		{withStatus(statusModel, externalenv.ErrBadObservation), statusModel}, // its own status first
		{errors.New("something else"), statusInternal},
		{&inference.DeviceError{Device: "native:cuda:0", Err: errors.New("no driver")}, statusDevice},
		{fmt.Errorf("onnxrl: m: %w", &inference.DeviceError{Err: errors.New("no GPU")}), statusDevice},
	} {
		assert.Equal(t, c.want, statusOf(c.err), "%v", c.err)
	}
	assert.NoError(t, withStatus(statusIO, nil))
}

func TestHandles(t *testing.T) {
	var tb handles
	p := tb.add(kindPolicy, "p")
	e := tb.add(kindEnv, "e")
	assert.NotEqual(t, p, e)
	v, err := tb.get(p, kindPolicy)
	require.NoError(t, err)
	assert.Equal(t, "p", v)

	_, err = tb.get(e, kindPolicy)
	assert.ErrorIs(t, err, errNoHandle)
	assert.ErrorContains(t, err, "is an onnxrl_env, not an onnxrl_policy")
	_, err = tb.get(0, kindEnv)
	assert.ErrorIs(t, err, errNull)
	_, err = tb.get(0x1234, kindPolicy)
	assert.ErrorIs(t, err, errNoHandle)
	_, err = tb.get(p+1<<20, kindPolicy) // a number never handed out
	assert.ErrorIs(t, err, errNoHandle)

	_, err = tb.remove(p, kindEnv)
	assert.ErrorIs(t, err, errNoHandle, "the wrong kind removes nothing")
	v, err = tb.remove(p, kindPolicy)
	require.NoError(t, err)
	assert.Equal(t, "p", v)
	_, err = tb.remove(p, kindPolicy)
	assert.ErrorIs(t, err, errReleased)
	_, err = tb.get(p, kindPolicy)
	assert.ErrorIs(t, err, errReleased)
	assert.NotEqual(t, p, tb.add(kindPolicy, "q"), "numbers are never reused")
}

func TestParseOptions(t *testing.T) {
	o := defaultEnvOptions()
	require.NoError(t, parseOptions([]byte(` {"max_episodes": 8, "explore": false, "seed": 3, "out": "x.jsonl", "threads": 2} `), &o))
	assert.Equal(t, 8, o.MaxEpisodes)
	assert.False(t, o.Explore)
	assert.Equal(t, uint64(3), o.Seed)
	assert.Equal(t, 2, o.Threads)
	assert.Equal(t, "cpu", o.Device, "defaults stay")
	require.NoError(t, o.check())

	for _, in := range []string{"", "null", "  "} {
		o := defaultPolicyOptions()
		require.NoError(t, parseOptions([]byte(in), &o))
		assert.Equal(t, defaultPolicyOptions(), o)
	}
	for in, want := range map[string]string{
		`{"sed": 1}`:               `unknown field "sed"`,
		`{"Seed": 1}`:              `unknown key "Seed"`,
		`{"seed": -1}`:             "cannot unmarshal",
		`{"seed": 1} {}`:           "data after the JSON object",
		`[1]`:                      "want a JSON object",
		`{"threads": "two"}`:       "cannot unmarshal",
		`{"max_episodes": 1`:       "unexpected EOF",
		`{"explore": true}`:        `unknown field "explore"`, // an env option given to a policy
		`{"workers": 1.5}`:         "cannot unmarshal",
		`{"device": "cpu",}`:       "invalid character",
		`{"normalize_actions": 1}`: "cannot unmarshal",
	} {
		o := defaultPolicyOptions()
		err := parseOptions([]byte(in), &o)
		assert.ErrorContains(t, err, want, in)
		assert.Equal(t, statusInvalidArgument, statusOf(err), in)
	}
	for _, bad := range []envOptions{
		func() envOptions { o := defaultEnvOptions(); o.MaxEpisodes = 0; return o }(),
		func() envOptions { o := defaultEnvOptions(); o.TimeoutMS = 0; return o }(),
		func() envOptions { o := defaultEnvOptions(); o.MaxWaitUS = -1; return o }(),
		func() envOptions { o := defaultEnvOptions(); o.FragmentLength = 0; return o }(),
		func() envOptions { o := defaultEnvOptions(); o.Workers = 2; return o }(),
		func() envOptions { o := defaultEnvOptions(); o.Format = "csv"; return o }(),
		func() envOptions { o := defaultEnvOptions(); o.Compression = "lz4"; return o }(),
	} {
		assert.Error(t, bad.check(), "%+v", bad)
	}
}

// TestPolicy: greedy actions, log-probabilities and values through the Go side of
// onnxrl_policy_act, against PolicyActor itself.
func TestPolicy(t *testing.T) {
	needRuntime(t)
	p, err := openPolicy("cartpole_mlp", []byte(`{"seed": 5, "workers": 2}`))
	require.NoError(t, err)
	defer p.close()
	assert.Equal(t, 4, p.obsSize)
	assert.Equal(t, 1, p.actSize)
	obs := []float32{0.01, 0, 0.05, 0, -0.01, 0, -0.05, 0, 0, 0.5, 0, -0.5}
	acts, logp, vals := make([]float32, 3), make([]float32, 3), make([]float32, 3)
	require.NoError(t, p.act(obs, 3, false, server.ActOutputs{Actions: acts, LogP: logp, Values: vals}))
	assert.Equal(t, []float32{1, 0}, acts[:2], "the pole leans right: push right")
	for i := range 3 {
		assert.True(t, logp[i] <= 0 && logp[i] > float32(math.Log(0.5))-1e-6, "greedy: the likelier action, logp %v", logp[i])
		assert.False(t, math.IsNaN(float64(vals[i])))
	}
	// Without logp and values, the same actions.
	acts2 := make([]float32, 3)
	require.NoError(t, p.act(obs, 3, false, server.ActOutputs{Actions: acts2}))
	assert.Equal(t, acts, acts2)

	bad := append([]float32(nil), obs...)
	bad[4] = float32(math.NaN())
	err = p.act(bad, 3, false, server.ActOutputs{Actions: acts})
	assert.Equal(t, statusInvalidArgument, statusOf(err))
	assert.ErrorContains(t, err, "observation 1")

	_, err = openPolicy("lstm_policy", nil)
	assert.Equal(t, statusModel, statusOf(err))
	assert.ErrorContains(t, err, "recurrent")
	_, err = openPolicy("no_such_model", nil)
	assert.Equal(t, statusNotFound, statusOf(err))
	garbage := filepath.Join(t.TempDir(), "g.onnx")
	require.NoError(t, os.WriteFile(garbage, []byte("not a model"), 0o644))
	_, err = openPolicy(garbage, nil)
	assert.Equal(t, statusModel, statusOf(err))
	_, err = openPolicy("cartpole_mlp", []byte(`{"device": "tpu"}`))
	assert.Equal(t, statusInvalidArgument, statusOf(err))
}

// TestEnv: episodes from many goroutines, greedy actions equal to the policy's, everything
// recorded in the output file when the env closes (open episodes ended truncated), in
// JSON lines and in Parquet.
func TestEnv(t *testing.T) {
	needRuntime(t)
	for _, name := range []string{"s.jsonl", "s.parquet"} {
		t.Run(name, func(t *testing.T) { testEnv(t, filepath.Join(t.TempDir(), name)) })
	}
}

func testEnv(t *testing.T, out string) {
	e, err := openEnv("cartpole_mlp", []byte(fmt.Sprintf(`{"explore": false, "max_episodes": 16, "out": %q, "max_wait_us": 100}`, out)))
	require.NoError(t, err)
	p, err := openPolicy("cartpole_mlp", nil)
	require.NoError(t, err)
	defer p.close()

	const workers, steps = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([][]byte, 4)
			for i := range ids {
				id, err := e.start(nil, true)
				if err != nil {
					errs <- err
					return
				}
				ids[i] = []byte(id)
			}
			obs := make([]float32, 16)
			acts, want := make([]float32, 4), make([]float32, 4)
			for s := range steps {
				for i := range obs {
					obs[i] = float32((w+1)*(s+1)*(i+1)%17-8) / 100
				}
				if err := e.getActions(ids, obs, acts); err != nil {
					errs <- err
					return
				}
				if err := p.act(obs, 4, false, server.ActOutputs{Actions: want}); err != nil {
					errs <- err
					return
				}
				for i := range 4 {
					if acts[i] != want[i] {
						errs <- fmt.Errorf("worker %d step %d episode %d: action %v, the policy's %v", w, s, i, acts[i], want[i])
						return
					}
					if err := e.logReturns(ids[i], 1); err != nil {
						errs <- err
						return
					}
				}
			}
			// Two end here; two stay open for close.
			for _, id := range ids[:2] {
				if err := e.end(id, obs[:4], w%2 == 0); err != nil {
					errs <- err
					return
				}
			}
			err := e.end(ids[0], obs[:4], false)
			if statusOf(err) != statusState {
				errs <- fmt.Errorf("second end: %v, want a state error", err)
				return
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	_, err = e.start([]byte(strings.Repeat("x", maxIDLen+1)), true)
	assert.Equal(t, statusLimit, statusOf(err))
	err = e.logReturns([]byte("unknown"), 1)
	assert.Equal(t, statusNotFound, statusOf(err))

	require.NoError(t, e.close())
	assert.Equal(t, statusState, statusOf(e.logReturns([]byte("x"), 1)), "a call after close")

	// 16 episodes of 50 steps (plus the final observation), every one recorded.
	rows, terminated, truncated := 0, 0, 0
	require.NoError(t, output.ReadFile(out, output.FormatAuto, func(m *envrunner.MultiAgentBatch) error {
		for _, b := range m.PolicyBatches {
			rows += b.Count
			for i := range b.Count {
				if b.Terminateds[i] {
					terminated++
				}
				if b.Truncateds[i] {
					truncated++
				}
			}
		}
		return nil
	}))
	assert.Equal(t, workers*4*steps, rows)
	assert.Equal(t, 2*2, terminated, "the odd workers end two episodes each terminated")
	assert.Equal(t, 2*2+workers*2, truncated, "the even workers end two each truncated; close ends the two left per worker")
}

// TestLogReturnsBatch: the rewards of a batch call reach the recorded steps of their own
// episodes, and a bad reward or id logs nothing past it.
func TestLogReturnsBatch(t *testing.T) {
	needRuntime(t)
	out := filepath.Join(t.TempDir(), "batch.jsonl")
	e, err := openEnv("cartpole_mlp", []byte(fmt.Sprintf(`{"explore": false, "max_episodes": 4, "out": %q}`, out)))
	require.NoError(t, err)
	a, err := e.start([]byte("a"), true)
	require.NoError(t, err)
	b, err := e.start([]byte("b"), true)
	require.NoError(t, err)
	ids := [][]byte{[]byte(a), []byte(b)}
	obs := []float32{0.01, 0, 0, 0, -0.01, 0, 0, 0}
	acts := make([]float32, 2)
	for step := range 3 {
		require.NoError(t, e.getActions(ids, obs, acts))
		require.NoError(t, e.logReturnsBatch(ids, []float64{1 + float64(step), 10 + float64(step)}))
	}
	err = e.logReturnsBatch(ids, []float64{1, math.Inf(1)})
	assert.Equal(t, statusInvalidArgument, statusOf(err))
	err = e.logReturnsBatch([][]byte{[]byte(a), []byte("nope")}, []float64{100, 100})
	assert.Equal(t, statusNotFound, statusOf(err))
	assert.ErrorContains(t, err, "episode 1 of 2")
	require.NoError(t, e.end(ids[0], obs[:4], false))
	require.NoError(t, e.end(ids[1], obs[4:], false))
	require.NoError(t, e.close())

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	got := map[int64][]float32{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		m, err := output.Decode([]byte(line))
		require.NoError(t, err)
		for _, pb := range m.PolicyBatches {
			for i := range pb.Count {
				got[pb.EpsID[i]] = append(got[pb.EpsID[i]], pb.Rewards[i])
			}
		}
	}
	// Per episode, in step order: the three batch rewards (a also took the 100 before "nope").
	want := [][]float32{{1, 2, 3 + 100}, {10, 11, 12}}
	var seen [][]float32
	for _, r := range got {
		seen = append(seen, r)
	}
	assert.ElementsMatch(t, want, seen)
}
