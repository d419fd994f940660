package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/externalenv/server/wire"
)

func send(t *testing.T, method, url, contentType, body string, hdr map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return readResponse(t, res)
}

// The reproduction: a text/plain POST with a foreign Host and Origin (what a web page
// can make a browser send, no preflight asked) started an episode.
func TestCrossSiteRefused(t *testing.T) {
	h := newHarness(t, harnessOptions{server: server.Options{Access: server.Access{LoopbackHost: true,
		AllowOrigins: []string{"https://app.example"}}}})
	r := send(t, "POST", h.url+"/v1/episodes", "text/plain", "{}", nil)
	assert.Equal(t, http.StatusUnsupportedMediaType, r.code, r.raw)
	assert.Equal(t, wire.CodeMediaType, r.body["code"])
	r = send(t, "POST", h.url+"/v1/episodes", "", "{}", nil)
	assert.Equal(t, http.StatusUnsupportedMediaType, r.code, r.raw)
	r = send(t, "POST", h.url+"/v1/episodes", "application/json", "{}", map[string]string{"Host": "attacker.example:8900"})
	assert.Equal(t, http.StatusForbidden, r.code, r.raw)
	assert.Equal(t, wire.CodeForbidden, r.body["code"])
	r = send(t, "POST", h.url+"/v1/episodes", "application/json", "{}", map[string]string{"Origin": "https://attacker.example"})
	assert.Equal(t, http.StatusForbidden, r.code, r.raw)
	r = send(t, "GET", h.url+"/v1/spaces", "", "", map[string]string{"Origin": "https://attacker.example"})
	assert.Equal(t, http.StatusForbidden, r.code, r.raw)
	assert.Zero(t, h.srv.Metrics().EpisodesStarted())

	// What is allowed: loopback names, a listed origin, a JSON type with parameters.
	for _, hdr := range []map[string]string{{"Host": "localhost:8900"}, {"Host": "[::1]:1"}, {"Origin": "https://app.example"}} {
		r = send(t, "POST", h.url+"/v1/episodes", "application/json; charset=utf-8", "{}", hdr)
		assert.Equal(t, http.StatusCreated, r.code, "%v: %s", hdr, r.raw)
	}
}

func TestBearerToken(t *testing.T) {
	h := newHarness(t, harnessOptions{server: server.Options{Access: server.Access{Token: "s3cret"}}})
	r := send(t, "POST", h.url+"/v1/episodes", "application/json", "{}", nil)
	assert.Equal(t, http.StatusUnauthorized, r.code, r.raw)
	assert.Equal(t, wire.CodeUnauthorized, r.body["code"])
	assert.Contains(t, r.hdr.Get("WWW-Authenticate"), "Bearer")
	r = send(t, "GET", h.url+"/metrics", "", "", map[string]string{"Authorization": "Bearer wrong"})
	assert.Equal(t, http.StatusUnauthorized, r.code, r.raw)
	r = send(t, "POST", h.url+"/v1/episodes", "application/json", "{}", map[string]string{"Authorization": "Bearer s3cret"})
	assert.Equal(t, http.StatusCreated, r.code, r.raw)
	// Probes need no token.
	assert.Equal(t, http.StatusOK, h.get("/healthz").code)
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8900": true, "localhost:80": true, "[::1]:0": true,
		"127.3.2.1:1": true, ":8900": false, "0.0.0.0:8900": false, "192.168.1.2:80": false, "[::]:80": false,
		"example.com:80": false} {
		assert.Equal(t, want, server.IsLoopback(addr), addr)
	}
}

// slowBody sends the first byte of a body of n bytes at once and the rest when released.
type slowBody struct {
	first   bool
	release chan struct{}
	left    int
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.first {
		<-b.release
	}
	b.first = true
	n := min(len(p), b.left)
	for i := range n {
		p[i] = ' '
	}
	b.left -= n
	return n, nil
}

// Bodies in flight are bounded: while one slow upload holds most of the budget, a second
// large one is refused with 503 at once (not read into memory); small ones pass, and after
// the slow one ends its bytes are free again.
func TestBodiesInFlight(t *testing.T) {
	h := newHarness(t, harnessOptions{server: server.Options{MaxBodiesInFlight: 100 << 10, MaxBodyBytes: 80 << 10}})
	id := h.start("")
	body := &slowBody{release: make(chan struct{}), left: 70 << 10}
	done := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest("POST", h.url+"/v1/episodes/"+id+"/returns", body)
		req.ContentLength = 70 << 10
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- response{code: -1, raw: err.Error()}
			return
		}
		done <- readResponse(t, res)
	}()
	require.Eventually(t, func() bool { return h.srv.BodiesInFlight() > 0 }, 5*time.Second, time.Millisecond)
	big := `{"reward": 1` + strings.Repeat(" ", 40<<10) + `}`
	r := h.post("/v1/episodes/"+id+"/returns", big)
	assert.Equal(t, http.StatusServiceUnavailable, r.code, r.raw)
	assert.Equal(t, "1", r.hdr.Get("Retry-After"))
	r = h.post("/v1/episodes/"+id+"/returns", `{"reward": 1}`)
	assert.Equal(t, http.StatusNoContent, r.code, r.raw)
	close(body.release)
	slow := <-done
	assert.Equal(t, http.StatusBadRequest, slow.code, slow.raw) // spaces only: not JSON
	require.Eventually(t, func() bool { return h.srv.BodiesInFlight() == 0 }, 5*time.Second, time.Millisecond)
	r = h.post("/v1/episodes/"+id+"/returns", big)
	assert.Equal(t, http.StatusNoContent, r.code, r.raw)
}
