package main

import (
	"bytes"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// startServer serves pc (the bundled policy, or a random one) in-process, as `sample serve`
// does, and returns its URL and a function that shuts it down and returns the rows recorded.
func startServer(t *testing.T, pc envrunner.PolicyConfig) (string, func() int) {
	t.Helper()
	cp, err := classic.NewCartPole(nil)
	require.NoError(t, err)
	pc.ObservationSpace, pc.ActionSpace = cp.ObservationSpace(), cp.ActionSpace()
	e, err := externalenv.New(externalenv.Options{ObservationSpace: pc.ObservationSpace, ActionSpace: pc.ActionSpace,
		MaxConcurrentEpisodes: 8})
	require.NoError(t, err)
	srv, err := server.New(server.Options{Env: e})
	require.NoError(t, err)
	r, err := envrunner.New(envrunner.Config{Env: e, NumEnvs: e.NumEnvs(), Seed: 1,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: pc}})
	require.NoError(t, err)
	rows := 0
	sampler := server.StartSampler(r, func(b *envrunner.MultiAgentBatch) error {
		rows += b.Rows() // on the sampler's goroutine; read after Wait
		return nil
	})
	hs := httptest.NewServer(srv)
	stopped := false
	stop := func() int {
		if !stopped {
			stopped = true
			hs.Close()
			require.NoError(t, srv.Close())
			require.NoError(t, sampler.Wait())
			r.Close()
		}
		return rows
	}
	t.Cleanup(func() { stop() })
	return hs.URL, stop
}

func meanOf(t *testing.T, out string) float64 {
	t.Helper()
	_, after, ok := strings.Cut(out, "mean return ")
	require.True(t, ok, out)
	v, err := strconv.ParseFloat(strings.TrimSpace(after), 64)
	require.NoError(t, err, out)
	return v
}

func TestRandomPolicy(t *testing.T) {
	url, stop := startServer(t, envrunner.PolicyConfig{Random: true})
	var out bytes.Buffer
	require.NoError(t, run([]string{"--server", url, "--episodes", "12", "--clients", "3"}, &out))
	assert.Contains(t, out.String(), "12 episodes")
	mean := meanOf(t, out.String())
	assert.Greater(t, mean, 5.0)
	assert.Less(t, mean, 100.0, "a random policy does not balance the pole")
	assert.Positive(t, stop())
}

// TestTrainedPolicy: the bundled policy, greedy, balances the pole through the server.
func TestTrainedPolicy(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	p, err := models.Bundled("cartpole_mlp")
	require.NoError(t, err)
	url, stop := startServer(t, envrunner.PolicyConfig{Policy: p, Action: connectors.ActionConfig{Explore: false},
		Session: inference.Options{IntraOpThreads: 1}})
	var out bytes.Buffer
	require.NoError(t, run([]string{"--server", url, "--episodes", "4", "--clients", "4", "--seed", "7"}, &out))
	assert.GreaterOrEqual(t, meanOf(t, out.String()), 400.0, out.String())
	steps, err := strconv.Atoi(strings.Fields(strings.SplitN(out.String(), ", ", 2)[1])[0])
	require.NoError(t, err)
	assert.Equal(t, steps, stop(), "every step recorded")
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	assert.Error(t, run([]string{"--episodes", "0"}, &out))
	assert.Error(t, run([]string{"--server", "nowhere"}, &out))
}
