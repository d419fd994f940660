package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// TestMultiAgentEpisode: observations, actions, rewards and dones keyed by agent id; agents
// marked done get no action; every agent step becomes a row.
func TestMultiAgentEpisode(t *testing.T) {
	h := newHarness(t, harnessOptions{multi: true})
	r := h.get("/v1/spaces")
	assert.Equal(t, true, r.body["multi_agent"])
	h.start("m")

	r = h.post("/v1/episodes/m/action", map[string]any{"observation": map[string]any{"b": obs(0.2), "a": obs(0.1)}})
	require.Equal(t, http.StatusOK, r.code, r.raw)
	acts := r.body["action"].(map[string]any)
	require.Len(t, acts, 2)
	assert.Contains(t, r.raw, `{"action":{"a":`) // sorted by agent id
	for _, a := range acts {
		v := a.(float64)
		assert.True(t, v == 0 || v == 1)
	}
	r = h.post("/v1/episodes/m/returns", `{"reward": {"a": 1, "b": 2}, "info": {"a": {"k": 1}}}`)
	require.Equal(t, http.StatusNoContent, r.code, r.raw)
	// RLlib's names work too; b is done.
	r = h.post("/v1/episodes/m/returns", `{"rewards": {"a": 0.5}, "dones": {"b": true}}`)
	require.Equal(t, http.StatusNoContent, r.code, r.raw)
	// a logs its own action; b observes its last (no action); c joins.
	r = h.post("/v1/episodes/m/log_action", `{"action": {"a": 1, "c": 0}, "observation": {"a": [0.3,0,0,0], "b": [0.4,0,0,0], "c": [0.5,0,0,0]}}`)
	require.Equal(t, http.StatusNoContent, r.code, r.raw)
	r = h.post("/v1/episodes/m/action", map[string]any{"observation": map[string]any{"a": obs(0.6), "c": obs(0.7)}})
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Len(t, r.body["action"], 2)
	r = h.post("/v1/episodes/m/action", map[string]any{"observation": map[string]any{"b": obs(0.8)}})
	assert.Equal(t, http.StatusBadRequest, r.code, "b is done: %s", r.raw)
	assert.Equal(t, wire.CodeBadObservation, r.body["code"])
	r = h.post("/v1/episodes/m/end", map[string]any{"observation": map[string]any{"a": obs(0.9)}})
	require.Equal(t, http.StatusNoContent, r.code, r.raw)

	require.NoError(t, h.stop())
	b := h.rows()
	// a: 3 steps (0.1, 0.3, 0.6 -> end), b: 1 (0.2 -> 0.4 terminated), c: 2 (0.5, 0.7 -> its
	// last observation repeated at the end).
	assert.Equal(t, 6, b.Count)
	assert.Equal(t, 3, countTrue(b.Terminateds), "b when it observed after done, a and c at the end")
	assert.Zero(t, countTrue(b.Truncateds))
}

func countTrue(v []bool) int {
	n := 0
	for _, x := range v {
		if x {
			n++
		}
	}
	return n
}

func TestMultiAgentErrors(t *testing.T) {
	h := newHarness(t, harnessOptions{multi: true})
	h.start("m")
	cases := []struct {
		name, path, body string
		code             int
		errCode, msg     string
	}{
		{"flat observation", "/v1/episodes/m/action", `{"observation": [0,0,0,0]}`, 400, wire.CodeBadRequest, "want an object"},
		{"no agent", "/v1/episodes/m/action", `{"observation": {}}`, 400, wire.CodeBadObservation, "no agent observes"},
		{"empty agent id", "/v1/episodes/m/action", `{"observation": {"": [0,0,0,0]}}`, 400, wire.CodeBadObservation, "empty agent id"},
		{"short observation", "/v1/episodes/m/action", `{"observation": {"a": [0,0]}}`, 400, wire.CodeBadObservation, `observation of agent "a" has 2 values`},
		{"NaN", "/v1/episodes/m/end", `{"observation": {"a": [NaN,0,0,0]}}`, 400, wire.CodeBadObservation, "NaN"},
		{"duplicate agent", "/v1/episodes/m/action", `{"observation": {"a": [0,0,0,0], "a": [0,0,0,0]}}`, 400, wire.CodeBadRequest, "twice"},
		{"bad action", "/v1/episodes/m/log_action", `{"observation": {"a": [0,0,0,0]}, "action": {"a": 7}}`, 400, wire.CodeBadAction, `action of agent "a"`},
		{"action without observation", "/v1/episodes/m/log_action", `{"observation": {"a": [0,0,0,0]}, "action": {"a": 1, "z": 0}}`, 400, wire.CodeBadAction, `"z"`},
		{"missing action", "/v1/episodes/m/log_action", `{"observation": {"a": [0,0,0,0]}}`, 400, wire.CodeBadRequest, `missing member "action"`},
		{"reward not an object", "/v1/episodes/m/returns", `{"reward": 1}`, 400, wire.CodeBadRequest, "want an object"},
		{"missing reward", "/v1/episodes/m/returns", `{"done": {"a": true}}`, 400, wire.CodeBadRequest, `missing member "reward"`},
		{"NaN reward", "/v1/episodes/m/returns", `{"reward": {"a": NaN}}`, 400, wire.CodeBadRequest, "not finite"},
		{"float32 overflow reward", "/v1/episodes/m/returns", `{"reward": {"a": -1e39}}`, 400, wire.CodeBadRequest, "does not fit"},
		{"bad info", "/v1/episodes/m/returns", `{"reward": {"a": 1}, "info": {"a": 3}}`, 400, wire.CodeBadRequest, "info of agent"},
		{"unknown episode", "/v1/episodes/x/action", `{"observation": {"a": [0,0,0,0]}}`, 404, wire.CodeEpisodeNotFound, "not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.post(c.path, c.body)
			require.Equal(t, c.code, r.code, r.raw)
			assert.Equal(t, c.errCode, r.body["code"], r.raw)
			assert.Contains(t, r.body["error"], c.msg)
			ok := h.post("/v1/episodes/m/action", `{"observation": {"a": [0,0,0,0]}}`)
			require.Equal(t, http.StatusOK, ok.code, ok.raw)
		})
	}
}

// TestMultiAgentClose: open multi-agent episodes end truncated at Close, each agent with its
// last observation: every agent step served is a row.
func TestMultiAgentClose(t *testing.T) {
	h := newHarness(t, harnessOptions{multi: true, env: externalenv.Options{MaxConcurrentEpisodes: 4}})
	steps := 0
	for _, id := range []string{"x", "y"} {
		h.start(id)
		for i := range 3 {
			o := map[string]any{"a": obs(float32(i) / 10), "b": obs(float32(i) / 20)}
			r := h.post("/v1/episodes/"+id+"/action", map[string]any{"observation": o})
			require.Equal(t, http.StatusOK, r.code, r.raw)
			steps += 2
		}
	}
	// In "y", b is done and ends with the next report.
	require.Equal(t, http.StatusNoContent, h.post("/v1/episodes/y/returns", `{"reward": {"b": 1}, "done": {"b": true}}`).code)
	require.Equal(t, http.StatusOK, h.post("/v1/episodes/y/action", `{"observation": {"a": [0,0,0,0]}}`).code)
	steps++ // a's step; b's last step ended with that report
	require.NoError(t, h.stop())
	assert.Equal(t, steps, h.rows().Count)
}
