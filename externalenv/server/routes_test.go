package server_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// TestRoutes: every endpoint by method and path, as the router answers it: the API's paths
// with another method get 405 with Allow, any other path (and one the mux would clean) 404,
// both as JSON errors, each counted under its endpoint.
func TestRoutes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.start("a")
	cases := []struct {
		method, path string
		code         int
		allow        string // the Allow header of a 405
		endpoint     string // in the metrics
	}{
		{"GET", "/v1/spaces", 200, "", "spaces"},
		{"HEAD", "/v1/spaces", 200, "", "spaces"},
		{"GET", "/healthz", 200, "", "healthz"},
		{"HEAD", "/metrics", 200, "", "metrics"},
		{"POST", "/v1/spaces", 405, "GET, HEAD", "spaces"},
		{"DELETE", "/healthz", 405, "GET, HEAD", "healthz"},
		{"PUT", "/metrics", 405, "GET, HEAD", "metrics"},
		{"GET", "/v1/episodes", 405, "POST", "start_episode"},
		{"GET", "/v1/act", 405, "POST", "act"},
		{"GET", "/v1/episodes/a/action", 405, "POST", "action"},
		{"PUT", "/v1/episodes/a/log_action", 405, "POST", "log_action"},
		{"GET", "/v1/episodes/a/returns", 405, "POST", "returns"},
		{"PATCH", "/v1/episodes/a/end", 405, "POST", "end_episode"},
		{"POST", "/v1/episodes/a/jump", 404, "", "other"},
		{"GET", "/v1/episodes/a/jump", 404, "", "other"},
		{"POST", "/v1/act/", 404, "", "other"},
		{"POST", "/", 404, "", "other"},
		{"GET", "/v1", 404, "", "other"},
		{"POST", "/v1//act", 404, "", "other"},
		{"POST", "/v1/episodes/./action", 404, "", "other"},
		{"POST", "/v1/x/../act", 404, "", "other"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			m := h.srv.Metrics()
			before := m.Requests(c.endpoint, c.code)
			req, err := http.NewRequest(c.method, h.url+c.path, strings.NewReader(""))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			r := readResponse(t, res)
			require.Equal(t, c.code, r.code, r.raw)
			assert.Equal(t, c.allow, r.hdr.Get("Allow"))
			assert.Equal(t, before+1, m.Requests(c.endpoint, c.code))
			switch c.code {
			case 405:
				assert.Equal(t, wire.CodeMethod, r.body["code"], r.raw)
				assert.Equal(t, "method not allowed; use "+c.allow, r.body["error"])
			case 404:
				assert.Equal(t, wire.CodeNotFound, r.body["code"], r.raw)
				assert.Contains(t, r.body["error"], "no such endpoint: "+c.method+" ")
			}
		})
	}
}

// TestEpisodeIDsInPaths: any episode id is one path segment once escaped ('/' and '%'
// included); ".", ".." and "/" cannot be one and are refused when an episode starts.
func TestEpisodeIDsInPaths(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, id := range []string{"a/b", "//", "a/", "a//b", "x%2Fy", "é ?#", "...", ".a"} {
		got := h.start(id)
		require.Equal(t, id, got)
		r := h.post("/v1/episodes/"+url.PathEscape(id)+"/action", map[string]any{"observation": obs(0)})
		require.Equal(t, http.StatusOK, r.code, "%q: %s", id, r.raw)
		r = h.post("/v1/episodes/"+url.PathEscape(id)+"/end", map[string]any{"observation": obs(0)})
		require.Equal(t, http.StatusNoContent, r.code, "%q: %s", id, r.raw)
	}
	for _, id := range []string{".", "..", "/"} {
		r := h.post("/v1/episodes", map[string]any{"episode_id": id})
		require.Equal(t, http.StatusBadRequest, r.code, r.raw)
		assert.Equal(t, wire.CodeBadRequest, r.body["code"])
		assert.Contains(t, r.body["error"], "cannot be a path segment")
	}
}
