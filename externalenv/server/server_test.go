package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// TestEpisode runs one episode through every endpoint and checks what the sampler recorded:
// the observations, the actions the server answered (or the logged one), the summed rewards,
// the final observation.
func TestEpisode(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := h.start("ep-1")
	assert.Equal(t, "ep-1", id)

	var actions []float32
	for i := range 3 {
		r := h.post("/v1/episodes/ep-1/action", map[string]any{"observation": obs(float32(i) / 10)})
		require.Equal(t, http.StatusOK, r.code, r.raw)
		a, ok := r.body["action"].(float64) // a Discrete action is a JSON integer
		require.True(t, ok, r.raw)
		assert.NotContains(t, r.raw, ".")
		actions = append(actions, float32(a))
		r = h.post("/v1/episodes/ep-1/returns", `{"reward": 0.5, "info": {"k": "v"}}`)
		require.Equal(t, http.StatusNoContent, r.code, r.raw)
		r = h.post("/v1/episodes/ep-1/returns", `{"reward": 0.25}`)
		require.Equal(t, http.StatusNoContent, r.code, r.raw)
	}
	r := h.post("/v1/episodes/ep-1/log_action", map[string]any{"observation": obs(0.3), "action": 1})
	require.Equal(t, http.StatusNoContent, r.code, r.raw)
	actions = append(actions, 1)
	r = h.post("/v1/episodes/ep-1/returns", `{"reward": 2}`)
	require.Equal(t, http.StatusNoContent, r.code, r.raw)
	r = h.post("/v1/episodes/ep-1/end", map[string]any{"observation": obs(0.4)})
	require.Equal(t, http.StatusNoContent, r.code, r.raw)

	require.NoError(t, h.stop())
	b := h.rows()
	require.Equal(t, 4, b.Count)
	assert.Equal(t, actions, b.Actions)
	assert.Equal(t, []float32{0.75, 0.75, 0.75, 2}, b.Rewards)
	assert.Equal(t, []bool{false, false, false, true}, b.Terminateds)
	for i := range 4 {
		assert.Equal(t, obs(float32(i)/10), envrunner.Row(b.Obs, 4, i))
		assert.Equal(t, obs(float32(i+1)/10), envrunner.Row(b.NewObs, 4, i))
	}
	m := h.srv.Metrics()
	assert.Equal(t, int64(3), m.Requests("action", 200))
	assert.Equal(t, int64(7), m.Requests("returns", 204))
	assert.Zero(t, m.ActiveEpisodes())
}

// TestErrors checks every error status with its code, and that the server keeps serving
// after each bad request.
func TestErrors(t *testing.T) {
	h := newHarness(t, harnessOptions{env: externalenv.Options{MaxConcurrentEpisodes: 3},
		server: server.Options{MaxBodyBytes: 2048}})
	h.start("a")
	h.start("done")
	require.Equal(t, http.StatusNoContent, h.post("/v1/episodes/done/end", map[string]any{"observation": obs(0)}).code)
	big := `{"observation": [` + strings.Repeat("0.0001,", 600) + `0]}`
	cases := []struct {
		name, method, path, body string
		code                     int
		errCode, msg             string
	}{
		{"malformed start", "POST", "/v1/episodes", `{"episode_id": `, 400, wire.CodeBadRequest, "unexpected end"},
		{"start not an object", "POST", "/v1/episodes", `[]`, 400, wire.CodeBadRequest, "want an object"},
		{"start bad id type", "POST", "/v1/episodes", `{"episode_id": 7}`, 400, wire.CodeBadRequest, "want a string"},
		{"start bad flag", "POST", "/v1/episodes", `{"training_enabled": "yes"}`, 400, wire.CodeBadRequest, "want true or false"},
		{"start long id", "POST", "/v1/episodes", `{"episode_id": "` + strings.Repeat("x", 1025) + `"}`, 400, wire.CodeBadRequest, "at most 1024"},
		{"malformed action", "POST", "/v1/episodes/a/action", `{"observation": [1, 2,`, 400, wire.CodeBadRequest, "unexpected end"},
		{"trailing garbage", "POST", "/v1/episodes/a/action", `{"observation": [0,0,0,0]} x`, 400, wire.CodeBadRequest, "want the end of the body"},
		{"missing observation", "POST", "/v1/episodes/a/action", `{"obs": [0,0,0,0]}`, 400, wire.CodeBadRequest, `missing member "observation"`},
		{"empty body", "POST", "/v1/episodes/a/action", ``, 400, wire.CodeBadRequest, "unexpected end"},
		{"short observation", "POST", "/v1/episodes/a/action", `{"observation": [0, 0, 0]}`, 400, wire.CodeBadObservation, "3 values, want 4"},
		{"long observation", "POST", "/v1/episodes/a/action", `{"observation": [0, 0, 0, 0, 0]}`, 400, wire.CodeBadObservation, "5 values, want 4"},
		{"NaN observation", "POST", "/v1/episodes/a/action", `{"observation": [0, NaN, 0, 0]}`, 400, wire.CodeBadObservation, "value 1 is NaN"},
		{"out of bounds", "POST", "/v1/episodes/a/action", `{"observation": [5, 0, 0, 0]}`, 400, wire.CodeBadObservation, "value 0 = 5 is outside [-4.8, 4.8]"},
		{"float32 overflow", "POST", "/v1/episodes/a/action", `{"observation": [0, 1e40, 0, 0]}`, 400, wire.CodeBadRequest, "out of the float32 range"},
		{"bad end observation", "POST", "/v1/episodes/a/end", `{"observation": [0, 0]}`, 400, wire.CodeBadObservation, "2 values, want 4"},
		{"bad logged action", "POST", "/v1/episodes/a/log_action", `{"observation": [0,0,0,0], "action": 2}`, 400, wire.CodeBadAction, "[2] is not in Discrete(2)"},
		{"fractional action", "POST", "/v1/episodes/a/log_action", `{"observation": [0,0,0,0], "action": 0.5}`, 400, wire.CodeBadAction, "not in Discrete(2)"},
		{"missing action", "POST", "/v1/episodes/a/log_action", `{"observation": [0,0,0,0]}`, 400, wire.CodeBadRequest, `missing member "action"`},
		{"missing reward", "POST", "/v1/episodes/a/returns", `{}`, 400, wire.CodeBadRequest, `missing member "reward"`},
		{"NaN reward", "POST", "/v1/episodes/a/returns", `{"reward": NaN}`, 400, wire.CodeBadRequest, "not finite"},
		{"float32 overflow reward", "POST", "/v1/episodes/a/returns", `{"reward": 1e39}`, 400, wire.CodeBadRequest, "does not fit"},
		{"bad info", "POST", "/v1/episodes/a/returns", `{"reward": 1, "info": [1]}`, 400, wire.CodeBadRequest, "info"},
		{"unknown episode action", "POST", "/v1/episodes/nope/action", `{"observation": [0,0,0,0]}`, 404, wire.CodeEpisodeNotFound, `"nope"`},
		{"unknown episode returns", "POST", "/v1/episodes/nope/returns", `{"reward": 1}`, 404, wire.CodeEpisodeNotFound, "not found"},
		{"unknown episode end", "POST", "/v1/episodes/nope/end", `{"observation": [0,0,0,0]}`, 404, wire.CodeEpisodeNotFound, "not found"},
		{"unknown episode log", "POST", "/v1/episodes/nope/log_action", `{"observation": [0,0,0,0], "action": 0}`, 404, wire.CodeEpisodeNotFound, "not found"},
		{"already started", "POST", "/v1/episodes", `{"episode_id": "a"}`, 409, wire.CodeEpisodeExists, "already started"},
		{"restart ended", "POST", "/v1/episodes", `{"episode_id": "done"}`, 409, wire.CodeEpisodeDone, "already completed"},
		{"action after end", "POST", "/v1/episodes/done/action", `{"observation": [0,0,0,0]}`, 409, wire.CodeEpisodeDone, "already completed"},
		{"end twice", "POST", "/v1/episodes/done/end", `{"observation": [0,0,0,0]}`, 409, wire.CodeEpisodeDone, "already completed"},
		{"returns after end", "POST", "/v1/episodes/done/returns", `{"reward": 1}`, 409, wire.CodeEpisodeDone, "already completed"},
		{"body too large", "POST", "/v1/episodes/a/action", big, 413, wire.CodeTooLarge, "larger than 2048 bytes"},
		{"act body too large", "POST", "/v1/act", `{"observations": [` + strings.Repeat("[0,0,0,0],", 300) + `[0,0,0,0]]}`, 413, wire.CodeTooLarge, "larger than 2048"},
		{"act bad observation", "POST", "/v1/act", `{"observations": [[0,0,0,0], [0,0,0]]}`, 400, wire.CodeBadObservation, "observation 1 has 3 values"},
		{"act NaN", "POST", "/v1/act", `{"observations": [[0,0,0,NaN]]}`, 400, wire.CodeBadObservation, "observation 0: value 3 is NaN"},
		{"act malformed", "POST", "/v1/act", `{"observations": [[0,0,0,0]`, 400, wire.CodeBadRequest, "unexpected end"},
		{"act missing", "POST", "/v1/act", `{"explore": true}`, 400, wire.CodeBadRequest, `missing member "observations"`},
		{"act bad explore", "POST", "/v1/act", `{"observations": [], "explore": 1}`, 400, wire.CodeBadRequest, "want true or false"},
		{"no endpoint", "POST", "/v1/nothing", ``, 404, wire.CodeNotFound, "no such endpoint"},
		{"no episode op", "POST", "/v1/episodes/a/jump", ``, 404, wire.CodeNotFound, "no such endpoint"},
		{"wrong method", "GET", "/v1/episodes/a/action", ``, 405, wire.CodeMethod, "use POST"},
		{"wrong method spaces", "POST", "/v1/spaces", ``, 405, wire.CodeMethod, "use GET"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, h.url+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			r := readResponse(t, res)
			require.Equal(t, c.code, r.code, r.raw)
			assert.Equal(t, c.errCode, r.body["code"], r.raw)
			assert.Contains(t, r.body["error"], c.msg)
			// The server goes on: episode "a" still answers.
			ok := h.post("/v1/episodes/a/action", map[string]any{"observation": obs(0)})
			require.Equal(t, http.StatusOK, ok.code, ok.raw)
		})
	}

	// 413 without a Content-Length (chunked): the limit applies while reading.
	t.Run("chunked too large", func(t *testing.T) {
		req, err := http.NewRequest("POST", h.url+"/v1/episodes/a/action", io.MultiReader(strings.NewReader(big)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.ContentLength = -1
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		r := readResponse(t, res)
		assert.Equal(t, http.StatusRequestEntityTooLarge, r.code, r.raw)
	})

	// 429: the third of at most three episodes ("a", and "done" has ended) fits, the fourth not.
	h.start("b")
	h.start("c")
	r := h.post("/v1/episodes", `{}`)
	assert.Equal(t, http.StatusTooManyRequests, r.code, r.raw)
	assert.Equal(t, wire.CodeTooManyEpisodes, r.body["code"])
	assert.Equal(t, "1", r.hdr.Get("Retry-After"))
	require.Equal(t, http.StatusNoContent, h.post("/v1/episodes/c/end", map[string]any{"observation": obs(0)}).code)
	h.start("") // room again

	// 409 busy: a second /action while the first waits needs a sampler that does not answer;
	// see TestBusy.
	m := h.srv.Metrics()
	assert.Positive(t, m.Requests("action", 400))
	assert.Positive(t, m.Requests("start_episode", 409))
	assert.Positive(t, m.Requests("other", 404))
}

// TestBusy: /action on an episode that already waits for one is 409; a request whose
// action does not come in time is 504; /v1/act without an Actor is 501; a stopped env 503.
func TestBusy(t *testing.T) {
	obsSpace, actSpace := cartPoleSpaces(t)
	e, err := externalenv.New(externalenv.Options{ObservationSpace: obsSpace, ActionSpace: actSpace})
	require.NoError(t, err)
	t.Cleanup(func() { e.Stop() })
	srv, err := server.New(server.Options{Env: e})
	require.NoError(t, err)
	h := &harness{t: t, srv: srv, url: newHTTP(t, srv)}
	h.start("a")
	first := make(chan response, 1)
	go func() { first <- h.post("/v1/episodes/a/action", `{"observation":[0,0,0,0]}`) }()
	// The test is the sampler: once it has polled the first observation, that request waits
	// for its action and a second one is refused.
	var b env.Batch
	require.NoError(t, e.Poll(&b))
	require.Len(t, b.Agents, 1)
	r := h.post("/v1/episodes/a/action", `{"observation":[0,0,0,0]}`)
	assert.Equal(t, http.StatusConflict, r.code, r.raw)
	assert.Equal(t, wire.CodeEpisodeBusy, r.body["code"])
	require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: env.DefaultAgentID, Action: []float32{1}}}))
	r = <-first
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Equal(t, `{"action":1}`, r.raw)

	// 504: an env with a short timeout and no sampler.
	e2, err := externalenv.New(externalenv.Options{ObservationSpace: obsSpace, ActionSpace: actSpace, Timeout: 1})
	require.NoError(t, err)
	t.Cleanup(func() { e2.Stop() })
	srv2, err := server.New(server.Options{Env: e2})
	require.NoError(t, err)
	h2 := &harness{t: t, srv: srv2, url: newHTTP(t, srv2)}
	h2.start("b")
	r = h2.post("/v1/episodes/b/action", `{"observation":[0,0,0,0]}`)
	assert.Equal(t, http.StatusGatewayTimeout, r.code, r.raw)
	assert.Equal(t, wire.CodeTimeout, r.body["code"])
	// No actor: /v1/act is 501.
	r = h2.post("/v1/act", `{"observations":[[0,0,0,0]]}`)
	assert.Equal(t, http.StatusNotImplemented, r.code, r.raw)
	assert.Equal(t, wire.CodeNotImplemented, r.body["code"])
	// Stopped env: 503.
	e2.Stop()
	r = h2.post("/v1/episodes/b/returns", `{"reward": 1}`)
	assert.Equal(t, http.StatusServiceUnavailable, r.code, r.raw)
	assert.Equal(t, wire.CodeUnavailable, r.body["code"])
}

// TestCloseKeepsEveryStep: episodes left open at Close end truncated with their last
// observation, so that every action the server answered is a row, and requests after Close
// get 503.
func TestCloseKeepsEveryStep(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	served := 0
	for k := range 5 {
		id := h.start(fmt.Sprintf("e%d", k))
		for i := range k + 1 {
			r := h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": obs(float32(i) / 10)})
			require.Equal(t, http.StatusOK, r.code, r.raw)
			served++
			require.Equal(t, http.StatusNoContent, h.post("/v1/episodes/"+id+"/returns", `{"reward": 1}`).code)
		}
	}
	h.start("never-observed") // leaves nothing
	h.http.Close()
	require.NoError(t, h.srv.Close())
	require.NoError(t, h.sampler.Wait())
	h.stopped = true
	h.runner.Close()
	b := h.rows()
	assert.Equal(t, served, b.Count)
	ends := 0
	for i := range b.Count {
		assert.Equal(t, float32(1), b.Rewards[i])
		assert.False(t, b.Terminateds[i])
		if b.Truncateds[i] {
			ends++
			// The last observation is the final one: new_obs repeats obs.
			assert.Equal(t, envrunner.Row(b.Obs, 4, i), envrunner.Row(b.NewObs, 4, i))
		}
	}
	assert.Equal(t, 5, ends, "one truncated end per episode")
	assert.Zero(t, h.srv.Metrics().ActiveEpisodes())
	var text strings.Builder
	_, err := h.srv.Metrics().WriteTo(&text)
	require.NoError(t, err)
	assert.Contains(t, text.String(), "sample_serve_episodes_truncated_total 5\n")
	assert.Contains(t, text.String(), "sample_serve_episodes_started_total 6\n")
}

// TestAct: stateless batched actions, in the action space, explore on and off; an empty
// batch is fine.
func TestAct(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	var sb strings.Builder
	sb.WriteString(`{"observations": [`)
	for i := range 300 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, "[%g, 0.5, -0.1, 2]", float32(i)/100)
	}
	sb.WriteString(`], "explore": false}`)
	r := h.post("/v1/act", sb.String())
	require.Equal(t, http.StatusOK, r.code, r.raw)
	acts := r.body["actions"].([]any)
	require.Len(t, acts, 300)
	for _, a := range acts {
		v := a.(float64)
		assert.True(t, v == 0 || v == 1, "%v", v)
	}
	r = h.post("/v1/act", `{"observations": []}`)
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Equal(t, `{"actions":[]}`, r.raw)
	assert.Equal(t, int64(2), h.srv.Metrics().Requests("act", 200))
}

func TestSpacesHealthMetrics(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	r := h.get("/v1/spaces")
	require.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, "Discrete", r.body["action_space"].(map[string]any)["type"])
	assert.Equal(t, "Box", r.body["observation_space"].(map[string]any)["type"])
	assert.Equal(t, false, r.body["multi_agent"])
	assert.Equal(t, true, r.body["act"])

	h.start("x")
	require.Equal(t, http.StatusOK, h.post("/v1/episodes/x/action", map[string]any{"observation": obs(0)}).code)
	require.Equal(t, http.StatusOK, h.post("/v1/act", `{"observations": [[0,0,0,0],[0,0,0,0]]}`).code)
	r = h.get("/healthz")
	require.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, "ok", r.body["status"])
	assert.Equal(t, float64(1), r.body["active_episodes"])

	r = h.get("/metrics")
	require.Equal(t, http.StatusOK, r.code)
	for _, want := range []string{
		`sample_serve_requests_total{endpoint="action",code="200"} 1`,
		`sample_serve_requests_total{endpoint="start_episode",code="201"} 1`,
		`sample_serve_request_duration_seconds_bucket{endpoint="action",le="+Inf"} 1`,
		`sample_serve_request_duration_seconds_count{endpoint="action"} 1`,
		`sample_serve_act_batch_size_bucket{le="2"} 1`,
		`sample_serve_act_batch_size_sum 2`,
		`sample_serve_poll_batch_size_count`,
		`sample_serve_active_episodes 1`,
		"# TYPE sample_serve_request_duration_seconds histogram",
	} {
		assert.Contains(t, r.raw, want)
	}

	h.http.Close()
	require.NoError(t, h.srv.Close())
	rec := newRecorder()
	h.srv.ServeHTTP(rec, mustRequest(t, "GET", "/healthz", ""))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	rec = newRecorder()
	h.srv.ServeHTTP(rec, mustRequest(t, "POST", "/v1/episodes", "{}"))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), wire.CodeUnavailable)
}

// TestConcurrentEpisodes: many clients at once (run it with -race), every step recorded.
func TestConcurrentEpisodes(t *testing.T) {
	h := newHarness(t, harnessOptions{env: externalenv.Options{MaxConcurrentEpisodes: 16}})
	const clients, episodes, steps = 16, 3, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for e := range episodes {
				id := fmt.Sprintf("c%d-e%d", c, e)
				if err := runEpisode(h.url, id, steps); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	require.NoError(t, h.stop())
	assert.Equal(t, clients*episodes*steps, h.rows().Count)
}

// runEpisode runs one episode of steps actions with plain HTTP requests.
func runEpisode(url, id string, steps int) error {
	do := func(path, body string, want int) error {
		res, err := http.Post(url+path, "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != want {
			return fmt.Errorf("%s: %d %s", path, res.StatusCode, raw)
		}
		return nil
	}
	if err := do("/v1/episodes", `{"episode_id":"`+id+`"}`, 201); err != nil {
		return err
	}
	for i := range steps {
		o := fmt.Sprintf(`{"observation":[%g,0,0,0]}`, float32(i)/100)
		if err := do("/v1/episodes/"+id+"/action", o, 200); err != nil {
			return err
		}
		if err := do("/v1/episodes/"+id+"/returns", `{"reward":1}`, 204); err != nil {
			return err
		}
	}
	return do("/v1/episodes/"+id+"/end", `{"observation":[0,0,0,0]}`, 204)
}

// TestRequestAllocs: an /action round trip through the handler allocates a bounded, small
// number of times (net/http's request and the ExternalEnv's reply are the rest).
func TestRequestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	h := newHarness(t, harnessOptions{})
	h.start("a")
	body := []byte(`{"observation":[0.012,-0.5,0.03,0.25]}`)
	req := mustRequest(t, "POST", "/v1/episodes/a/action", "")
	rec := newRecorder()
	run := func() {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		rec.Body.Reset()
		h.srv.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatal(rec.Body.String())
		}
	}
	run()
	allocs := testing.AllocsPerRun(200, run)
	t.Logf("allocs per /action: %v", allocs)
	assert.LessOrEqual(t, allocs, 8.0)

	act := []byte(`{"observations":[[0.012,-0.5,0.03,0.25],[0.1,0.2,0.3,0.4]],"explore":true}`)
	req = mustRequest(t, "POST", "/v1/act", "")
	allocs = testing.AllocsPerRun(200, func() {
		req.Body = io.NopCloser(bytes.NewReader(act))
		req.ContentLength = int64(len(act))
		rec.Body.Reset()
		h.srv.ServeHTTP(rec, req)
	})
	t.Logf("allocs per /v1/act: %v", allocs)
	assert.LessOrEqual(t, allocs, 4.0)
}
