package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// FuzzRequests sends arbitrary bodies to every endpoint of a single-agent and a multi-agent
// server, each with a running sampler: every answer is a success or a 4xx with a JSON error
// body (never a 500, a panic or a hang), and the server keeps serving good requests.
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		`{"observation":[0.1,0.2,-0.3,0.4]}`,
		`{"observation":[0.1,0.2,-0.3,0.4],"action":1}`,
		`{"reward":1.5,"info":{"a":[1,{"b":null}]}}`,
		`{"episode_id":"x\u00e9","training_enabled":false}`,
		`{"observations":[[0,0,0,0],[1,1,0.1,-2]],"explore":true}`,
		`{"observation":[NaN,0,0,0]}`, `{"observation":[1e39,0,0,0]}`, `{"observation":{"a":1}}`,
		`[`, `{`, `{"observation":[[[[`, `null`, ``, `{"reward":-Infinity}`, `{"episode_id":null}`,
		`{"observation":{"a":[0,0,0,0],"b":[1,0,0,0]}}`, `{"observation":{"a":[0,0,0,0]},"action":{"a":1}}`,
		`{"reward":{"a":1,"b":-2},"done":{"b":true},"info":{"a":{"x":1}}}`, `{"observation":{"":[0,0,0,0]}}`,
		`{"observation":[0,0,0,0],"truncated":true}`,
		`{"episode_id":"a/b"}`, `{"episode_id":".."}`, `{"episode_id":"%2F ?#"}`,
	} {
		f.Add([]byte(seed))
	}
	single := &fuzzTarget{h: newHarness(f, harnessOptions{env: externalenv.Options{MaxConcurrentEpisodes: 4}}),
		good: []byte(`{"observation":[0,0,0,0]}`)}
	multi := &fuzzTarget{h: newHarness(f, harnessOptions{env: externalenv.Options{MaxConcurrentEpisodes: 4}, multi: true}),
		good: []byte(`{"observation":{"a":[0,0,0,0]}}`)}
	f.Fuzz(func(t *testing.T, body []byte) {
		single.run(t, body)
		multi.run(t, body)
	})
}

type fuzzTarget struct {
	h    *harness
	good []byte // a valid observation body
	n    int
}

// serve sends a request to path, whose episode id is escaped (episodePath) as the clients
// escape it: any id but "." and "..", '/' included, is one path segment.
func (ft *fuzzTarget) serve(method, path string, body []byte) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	ft.h.srv.ServeHTTP(rec, req)
	return rec
}

// check accepts successes and client errors with a well-formed error body.
func check(t *testing.T, path string, rec *httptest.ResponseRecorder, body []byte) {
	t.Helper()
	switch rec.Code {
	case 200, 201, 204:
		return
	case 400, 404, 409, 413, 429:
	default:
		t.Fatalf("%s %q: status %d: %s", path, body, rec.Code, rec.Body)
	}
	var e struct{ Error, Code string }
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || e.Code == "" {
		t.Fatalf("%s %q: error body %q", path, body, rec.Body)
	}
	for _, internal := range []string{"wire:", "server:", "externalenv:", "spaces:", "Go value", "Go struct"} {
		if strings.Contains(e.Error, internal) {
			t.Fatalf("%s %q: the error names Go internals: %q", path, body, e.Error)
		}
	}
	if rec.Code == 404 && e.Code != wire.CodeEpisodeNotFound {
		t.Fatalf("%s %q: 404 %q", path, body, rec.Body)
	}
}

func (ft *fuzzTarget) run(t *testing.T, body []byte) {
	ft.n++
	id := fmt.Sprintf("fuzz-%d", ft.n)
	if rec := ft.serve("POST", "/v1/episodes", []byte(`{"episode_id":"`+id+`"}`)); rec.Code != 201 {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	for _, op := range []string{"action", "log_action", "returns"} {
		path := episodePath(id, op)
		check(t, path, ft.serve("POST", path, body), body)
	}
	check(t, "/v1/act", ft.serve("POST", "/v1/act", body), body)
	// A body that starts an episode: end it, so that the episodes do not run out.
	if rec := ft.serve("POST", "/v1/episodes", body); rec.Code == 201 {
		var r struct {
			EpisodeID string `json:"episode_id"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("start %q: %s", body, rec.Body)
		}
		if end := ft.serve("POST", episodePath(r.EpisodeID, "end"), ft.good); end.Code != 204 {
			t.Fatalf("end of %q: %d %s", r.EpisodeID, end.Code, end.Body)
		}
	} else {
		check(t, "/v1/episodes", rec, body)
	}
	path := episodePath(id, "end")
	rec := ft.serve("POST", path, body)
	check(t, path, rec, body)
	if rec.Code != 204 {
		if rec := ft.serve("POST", path, ft.good); rec.Code != 204 {
			t.Fatalf("good end after %q: %d %s", body, rec.Code, rec.Body)
		}
	}
	if rec := ft.serve("GET", "/healthz", nil); rec.Code != http.StatusOK {
		t.Fatalf("healthz: %d", rec.Code)
	}
}

// episodePath is an episode endpoint's path, its id escaped as externalenv/client does.
func episodePath(id, op string) string { return "/v1/episodes/" + url.PathEscape(id) + "/" + op }
