package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/externalenv/server/wire"
	"github.com/onnxrl/sampler/spaces"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// panicActor panics in every Act, as a model whose output does not match its declaration
// did in connectors.checkLen.
type panicActor struct{}

func (panicActor) Act(context.Context, []float32, []float32, int, server.Explore) ([]float32, error) {
	panic("connectors: ActionPipeline.Compute: len(out) = 4, want 2")
}

// trapSpace is a Box whose Contains panics on an observation starting with 7: a fault deep
// in a request's handler.
type trapSpace struct{ *spaces.Box }

func (s trapSpace) Contains(x []float32) bool {
	if len(x) > 0 && x[0] == 7 {
		panic("trap")
	}
	return s.Box.Contains(x)
}

// A panic in a request handler used to kill the process. It is now a 500 JSON answer; the
// episode of the request ends (truncated, its steps recorded) and the server goes on.
func TestRequestPanic(t *testing.T) {
	obsSpace, actSpace := cartPoleSpaces(t)
	box := obsSpace.(*spaces.Box)
	box.Low[0], box.High[0] = -10, 10
	h := newHarness(t, harnessOptions{env: externalenv.Options{ObservationSpace: trapSpace{box}, ActionSpace: actSpace},
		server: server.Options{Actor: panicActor{}, Logger: quietLog}})

	r := h.post("/v1/act", map[string]any{"observations": [][]float32{obs(0)}})
	require.Equal(t, http.StatusInternalServerError, r.code, r.raw)
	assert.Equal(t, wire.CodeInternal, r.body["code"])

	id := h.start("")
	r = h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": obs(0)})
	require.Equal(t, http.StatusOK, r.code, r.raw)
	r = h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": obs(7)})
	require.Equal(t, http.StatusInternalServerError, r.code, r.raw)
	assert.Equal(t, wire.CodeInternal, r.body["code"])
	// The episode was ended; the server lives.
	r = h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": obs(0)})
	assert.Equal(t, http.StatusConflict, r.code, r.raw)
	assert.Equal(t, http.StatusOK, h.get("/healthz").code)
	other := h.start("")
	r = h.post("/v1/episodes/"+other+"/action", map[string]any{"observation": obs(0)})
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Contains(t, h.get("/metrics").raw, "sample_serve_panics_total 2")

	require.NoError(t, h.stop())
	rows := h.rows()
	// The panicking episode's one step is recorded, ended as truncated.
	found := false
	for i, trunc := range rows.Truncateds {
		if trunc && rows.Obs[i*4] == 0 && rows.NewObs[i*4] == 0 {
			found = true
		}
	}
	assert.True(t, found, "the truncated step of the failed episode: %v", rows.Truncateds)
}

// faultyEnv panics in SendActions once armed: a fault on the sampler's goroutine.
type faultyEnv struct {
	env.BaseEnv
	armed atomic.Bool
}

func (f *faultyEnv) SendActions(a []env.Action) error {
	if f.armed.Load() {
		panic("boom in the sampler")
	}
	return f.BaseEnv.SendActions(a)
}

// A panic on the sampler's goroutine stops the sampler with a *PanicError (not the process);
// what it collected is written; after Fail the server answers /healthz 503 with the reason,
// the request that waited gets 500, new episodes 503, and /v1/act still works.
func TestSamplerPanic(t *testing.T) {
	var fe *faultyEnv
	h := newHarness(t, harnessOptions{env: externalenv.Options{Timeout: -1}, server: server.Options{Logger: quietLog}, wrap: func(be env.BaseEnv) env.BaseEnv {
		fe = &faultyEnv{BaseEnv: be}
		return fe
	}})
	id := h.start("")
	for i := range 3 {
		r := h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": obs(float32(i) / 10)})
		require.Equal(t, http.StatusOK, r.code, r.raw)
	}
	fe.armed.Store(true)
	waiting := make(chan response, 1)
	go func() { waiting <- h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": obs(0.5)}) }()
	var err error
	select {
	case <-h.sampler.Done():
		err = h.sampler.Wait()
	case <-time.After(10 * time.Second):
		t.Fatal("the sampler did not stop")
	}
	var pe *server.PanicError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Contains(t, string(pe.Stack), "SendActions")
	// What `sample serve` does when the sampler stops.
	h.srv.Fail(err)
	h.env.Stop()
	r := <-waiting
	assert.Equal(t, http.StatusInternalServerError, r.code, r.raw)
	r = h.get("/healthz")
	assert.Equal(t, http.StatusServiceUnavailable, r.code)
	assert.Equal(t, "failing", r.body["status"])
	assert.Contains(t, r.body["error"], "boom in the sampler")
	r = h.post("/v1/episodes", map[string]any{})
	assert.Equal(t, http.StatusServiceUnavailable, r.code, r.raw)
	r = h.post("/v1/act", map[string]any{"observations": [][]float32{obs(0)}})
	assert.Equal(t, http.StatusOK, r.code, r.raw)
	h.http.Close()
	h.srv.Close()
	h.runner.Close()
	h.stopped = true
	// The steps completed before the panic were handed to write.
	assert.GreaterOrEqual(t, h.rows().Count, 2)
}

// The reproduction: with --max-episodes 10, ten episodes started and abandoned made
// every later start 429 until a restart. Idle episodes now end (truncated, recorded) after
// the idle timeout, freeing their slots, and /metrics counts them.
func TestIdleEpisodesExpire(t *testing.T) {
	h := newHarness(t, harnessOptions{env: externalenv.Options{MaxConcurrentEpisodes: 3},
		server: server.Options{IdleTimeout: 100 * time.Millisecond}})
	ids := []string{h.start(""), h.start(""), h.start("")}
	r := h.post("/v1/episodes/"+ids[0]+"/action", map[string]any{"observation": obs(0)})
	require.Equal(t, http.StatusOK, r.code, r.raw)
	r = h.post("/v1/episodes", map[string]any{})
	require.Equal(t, http.StatusTooManyRequests, r.code, r.raw)

	require.Eventually(t, func() bool { return h.srv.Metrics().EpisodesExpired() == 3 }, 10*time.Second, 10*time.Millisecond)
	for range 3 {
		h.start("")
	}
	assert.Contains(t, h.get("/metrics").raw, "sample_serve_episodes_expired_total 3")
	r = h.post("/v1/episodes/"+ids[0]+"/action", map[string]any{"observation": obs(0)})
	assert.Equal(t, http.StatusConflict, r.code, r.raw)
	assert.Equal(t, wire.CodeEpisodeDone, r.body["code"])
	require.NoError(t, h.stop())
	rows := h.rows()
	require.Equal(t, 1, rows.Count, "the observed episode's step")
	assert.True(t, rows.Truncateds[0])
}

// An episode whose request is in flight (waiting for its action) is not idle.
func TestBusyEpisodeDoesNotExpire(t *testing.T) {
	h := newHarness(t, harnessOptions{env: externalenv.Options{Timeout: -1},
		server: server.Options{IdleTimeout: 150 * time.Millisecond}})
	id := h.start("")
	// Keep the episode busy with back-to-back requests for several timeouts: each request
	// touches it, so it must survive.
	deadline := time.Now().Add(600 * time.Millisecond)
	for time.Now().Before(deadline) {
		r := h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": obs(0)})
		require.Equal(t, http.StatusOK, r.code, r.raw)
	}
	assert.Zero(t, h.srv.Metrics().EpisodesExpired())
}

// Agent limits: too many agents in one request, in an episode over several requests, and
// too long an agent id are 400s; the episode goes on.
func TestAgentLimits(t *testing.T) {
	h := newHarness(t, harnessOptions{multi: true, server: server.Options{MaxAgents: 4}})
	id := h.start("")
	r := h.post("/v1/episodes/"+id+"/action", agentsBody(5, "a"))
	require.Equal(t, http.StatusBadRequest, r.code, r.raw)
	r = h.post("/v1/episodes/"+id+"/action", agentsBody(3, "a"))
	require.Equal(t, http.StatusOK, r.code, r.raw)
	r = h.post("/v1/episodes/"+id+"/action", agentsBody(2, "b"))
	require.Equal(t, http.StatusBadRequest, r.code, r.raw)
	assert.Contains(t, r.body["error"], "would have 5 agents")
	long := `{"observation":{"` + strings.Repeat("x", server.MaxAgentIDBytes+1) + `":[0,0,0,0]}}`
	r = h.post("/v1/episodes/"+id+"/action", long)
	require.Equal(t, http.StatusBadRequest, r.code, r.raw)
	assert.Contains(t, r.body["error"], "agent id has")
	r = h.post("/v1/episodes/"+id+"/returns", `{"reward":{"`+strings.Repeat("x", server.MaxAgentIDBytes+1)+`":1}}`)
	require.Equal(t, http.StatusBadRequest, r.code, r.raw)
	r = h.post("/v1/episodes/"+id+"/action", agentsBody(3, "a"))
	require.Equal(t, http.StatusOK, r.code, r.raw)
}

// Multi-agent episodes expire too, with or without observations, freeing their slots.
func TestIdleMultiAgentEpisodesExpire(t *testing.T) {
	h := newHarness(t, harnessOptions{multi: true, env: externalenv.Options{MaxConcurrentEpisodes: 2},
		server: server.Options{IdleTimeout: 100 * time.Millisecond}})
	a, _ := h.start(""), h.start("")
	r := h.post("/v1/episodes/"+a+"/action", agentsBody(2, "p"))
	require.Equal(t, http.StatusOK, r.code, r.raw)
	r = h.post("/v1/episodes", map[string]any{})
	require.Equal(t, http.StatusTooManyRequests, r.code, r.raw)
	require.Eventually(t, func() bool { return h.srv.Metrics().EpisodesExpired() == 2 }, 10*time.Second, 10*time.Millisecond)
	h.start("")
	h.start("")
	require.NoError(t, h.stop())
	assert.Equal(t, 2, h.rows().Count, "the observed episode's two agents' steps")
}
