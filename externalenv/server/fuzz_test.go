package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server/wire"
)

// FuzzRequests sends arbitrary bodies to every endpoint of a server with a running sampler:
// each answer is a success or a 4xx with a JSON error body (never a 500, a panic or a hang),
// and the server keeps serving a good request afterwards.
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{
		`{"observation":[0.1,0.2,-0.3,0.4]}`,
		`{"observation":[0.1,0.2,-0.3,0.4],"action":1}`,
		`{"reward":1.5,"info":{"a":[1,{"b":null}]}}`,
		`{"episode_id":"x\u00e9","training_enabled":false}`,
		`{"observations":[[0,0,0,0],[1,1,0.1,-2]],"explore":true}`,
		`{"observation":[NaN,0,0,0]}`, `{"observation":[1e39,0,0,0]}`, `{"observation":{"a":1}}`,
		`[`, `{`, `{"observation":[[[[`, `null`, ``, `{"reward":-Infinity}`, `{"episode_id":null}`,
	} {
		f.Add([]byte(seed))
	}
	h := newHarness(f, harnessOptions{env: externalenv.Options{MaxConcurrentEpisodes: 4}})
	n := 0
	good := []byte(`{"observation":[0,0,0,0]}`)
	serve := func(t *testing.T, path string, body []byte) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		return rec
	}
	check := func(t *testing.T, path string, rec *httptest.ResponseRecorder, body []byte) {
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
		if rec.Code == 404 && e.Code != wire.CodeEpisodeNotFound {
			t.Fatalf("%s %q: 404 %q", path, body, rec.Body)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n++
		id := fmt.Sprintf("fuzz-%d", n)
		if rec := serve(t, "/v1/episodes", []byte(`{"episode_id":"`+id+`"}`)); rec.Code != 201 {
			t.Fatalf("start: %d %s", rec.Code, rec.Body)
		}
		for _, op := range []string{"action", "log_action", "returns"} {
			path := "/v1/episodes/" + id + "/" + op
			check(t, path, serve(t, path, body), body)
		}
		check(t, "/v1/act", serve(t, "/v1/act", body), body)
		if rec := serve(t, "/v1/episodes", body); rec.Code == 201 {
			var r struct {
				EpisodeID string `json:"episode_id"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
				t.Fatalf("start %q: %s", body, rec.Body)
			}
			end := httptest.NewRecorder()
			req := httptest.NewRequest("POST", "/", bytes.NewReader(good))
			req.URL.Path = "/v1/episodes/" + r.EpisodeID + "/end" // any id, '/' included
			h.srv.ServeHTTP(end, req)
			if end.Code != 204 {
				t.Fatalf("end of %q: %d %s", r.EpisodeID, end.Code, end.Body)
			}
		} else {
			check(t, "/v1/episodes", rec, body)
		}
		path := "/v1/episodes/" + id + "/end"
		rec := serve(t, path, body)
		check(t, path, rec, body)
		if rec.Code != 204 {
			if rec := serve(t, path, good); rec.Code != 204 {
				t.Fatalf("good end after %q: %d %s", body, rec.Code, rec.Body)
			}
		}
		rec = httptest.NewRecorder()
		h.srv.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("healthz: %d", rec.Code)
		}
	})
}
