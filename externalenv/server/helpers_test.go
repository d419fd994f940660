package server_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/spaces"
)

// harness is a server over an ExternalEnv with CartPole's spaces, driven by a runner with a
// random policy (no ONNX Runtime needed), behind an httptest server.
type harness struct {
	t       testing.TB
	env     *externalenv.ExternalEnv
	srv     *server.Server
	runner  *envrunner.Runner
	sampler *server.Sampler
	http    *httptest.Server
	url     string

	mu      sync.Mutex
	batches []*envrunner.MultiAgentBatch
	stopped bool
}

type harnessOptions struct {
	env     externalenv.Options
	server  server.Options
	noActor bool
	multi   bool // an ExternalMultiAgentEnv with env's options
	// wrap, when set, wraps the env the runner drives (to inject faults).
	wrap func(env.BaseEnv) env.BaseEnv
}

func cartPoleSpaces(tb testing.TB) (spaces.Space, spaces.Space) {
	cp, err := classic.NewCartPole(nil)
	require.NoError(tb, err)
	return cp.ObservationSpace(), cp.ActionSpace()
}

func newHarness(tb testing.TB, o harnessOptions) *harness {
	tb.Helper()
	if o.env.ObservationSpace == nil {
		o.env.ObservationSpace, o.env.ActionSpace = cartPoleSpaces(tb)
	}
	if o.env.MaxConcurrentEpisodes == 0 {
		o.env.MaxConcurrentEpisodes = 8
	}
	h := &harness{t: tb}
	var be env.BaseEnv
	var numEnvs int
	if o.multi {
		e, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: o.env.ObservationSpace,
			ActionSpace: o.env.ActionSpace, MaxConcurrentEpisodes: o.env.MaxConcurrentEpisodes, Timeout: o.env.Timeout,
			MaxBatch: o.env.MaxBatch, MaxAgents: cmp.Or(o.server.MaxAgents, server.DefaultMaxAgents)})
		require.NoError(tb, err)
		o.server.MultiAgentEnv = e
		be, numEnvs = e, e.NumEnvs()
	} else {
		e, err := externalenv.New(o.env)
		require.NoError(tb, err)
		h.env = e
		o.server.Env = e
		be, numEnvs = e, e.NumEnvs()
	}
	var err error
	if o.server.Actor == nil && !o.noActor {
		o.server.Actor = server.NewRandomActor(o.env.ActionSpace, 1)
	}
	if o.wrap != nil {
		be = o.wrap(be)
	}
	h.srv, err = server.New(o.server)
	require.NoError(tb, err)
	h.runner, err = envrunner.New(envrunner.Config{
		Env: h.srv.Metrics().ObservePolls(be), NumEnvs: numEnvs, Seed: 1, FragmentLength: 10,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {
			Random: true, ObservationSpace: o.env.ObservationSpace, ActionSpace: o.env.ActionSpace}},
	})
	require.NoError(tb, err)
	h.sampler = server.StartSampler(h.runner, func(b *envrunner.MultiAgentBatch) error {
		h.mu.Lock()
		h.batches = append(h.batches, b)
		h.mu.Unlock()
		return nil
	})
	h.http = httptest.NewServer(h.srv)
	h.url = h.http.URL
	tb.Cleanup(func() { h.stop() })
	return h
}

// stop shuts down as `sample serve` does: HTTP first, then the server, then the sampler.
func (h *harness) stop() error {
	if h.stopped {
		return nil
	}
	h.stopped = true
	h.http.Close()
	err := h.srv.Close()
	if serr := h.sampler.Wait(); err == nil {
		err = serr
	}
	h.runner.Close()
	return err
}

// rows returns every row the sampler wrote, with the columns of the default policy.
func (h *harness) rows() *envrunner.SampleBatch {
	h.mu.Lock()
	defer h.mu.Unlock()
	all := &envrunner.SampleBatch{}
	for _, mb := range h.batches {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		if b == nil {
			continue
		}
		all.Obs = append(all.Obs, b.Obs...)
		all.NewObs = append(all.NewObs, b.NewObs...)
		all.Actions = append(all.Actions, b.Actions...)
		all.Rewards = append(all.Rewards, b.Rewards...)
		all.Terminateds = append(all.Terminateds, b.Terminateds...)
		all.Truncateds = append(all.Truncateds, b.Truncateds...)
		all.EpsID = append(all.EpsID, b.EpsID...)
		all.AgentIndex = append(all.AgentIndex, b.AgentIndex...)
		all.Count += b.Count
	}
	return all
}

type response struct {
	code int
	body map[string]any
	raw  string
	hdr  http.Header
}

// post sends body (a string, or any value to marshal) and decodes the JSON answer.
func (h *harness) post(path string, body any) response {
	h.t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	case []byte:
		data = b
	case nil:
	default:
		var err error
		data, err = json.Marshal(b)
		require.NoError(h.t, err)
	}
	res, err := http.Post(h.url+path, "application/json", bytes.NewReader(data))
	require.NoError(h.t, err)
	return readResponse(h.t, res)
}

func (h *harness) get(path string) response {
	h.t.Helper()
	res, err := http.Get(h.url + path)
	require.NoError(h.t, err)
	return readResponse(h.t, res)
}

func readResponse(tb testing.TB, res *http.Response) response {
	tb.Helper()
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(tb, err)
	r := response{code: res.StatusCode, raw: string(raw), hdr: res.Header}
	if len(raw) > 0 && res.Header.Get("Content-Type") == "application/json" {
		require.NoError(tb, json.Unmarshal(raw, &r.body), "%s", raw)
	}
	return r
}

// start starts an episode and returns its id.
func (h *harness) start(id string) string {
	h.t.Helper()
	r := h.post("/v1/episodes", map[string]any{"episode_id": id})
	require.Equal(h.t, http.StatusCreated, r.code, r.raw)
	return r.body["episode_id"].(string)
}

func obs(x float32) []float32 { return []float32{x, 0.1, -0.02, 0.3} }

// newHTTP serves srv on a test server and returns its URL.
func newHTTP(tb testing.TB, srv *server.Server) string {
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	return hs.URL
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(tb testing.TB, method, path, body string) *http.Request {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}
