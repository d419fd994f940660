package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/client"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/spaces"
)

// testServer is a policy server with a random policy (no ONNX Runtime needed) behind an
// httptest server.
type testServer struct {
	url     string
	srv     *server.Server
	sampler *server.Sampler
	runner  *envrunner.Runner
	hs      *httptest.Server
	mu      sync.Mutex
	rows    int
	once    sync.Once
}

func startServer(tb testing.TB, eo externalenv.Options, so server.Options) *testServer {
	return startServerMode(tb, eo, so, false)
}

func startServerMode(tb testing.TB, eo externalenv.Options, so server.Options, multi bool) *testServer {
	tb.Helper()
	if eo.ObservationSpace == nil {
		cp, err := classic.NewCartPole(nil)
		require.NoError(tb, err)
		eo.ObservationSpace, eo.ActionSpace = cp.ObservationSpace(), cp.ActionSpace()
	}
	var e env.BaseEnv
	var numEnvs int
	if multi {
		ma, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: eo.ObservationSpace,
			ActionSpace: eo.ActionSpace, MaxConcurrentEpisodes: eo.MaxConcurrentEpisodes})
		require.NoError(tb, err)
		so.MultiAgentEnv, e, numEnvs = ma, ma, ma.NumEnvs()
	} else {
		se, err := externalenv.New(eo)
		require.NoError(tb, err)
		so.Env, e, numEnvs = se, se, se.NumEnvs()
	}
	var err error
	if so.Actor == nil {
		so.Actor = server.NewRandomActor(eo.ActionSpace, 1)
	}
	ts := &testServer{}
	ts.srv, err = server.New(so)
	require.NoError(tb, err)
	ts.runner, err = envrunner.New(envrunner.Config{Env: e, NumEnvs: numEnvs, Seed: 2, FragmentLength: 5,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {
			Random: true, ObservationSpace: eo.ObservationSpace, ActionSpace: eo.ActionSpace}}})
	require.NoError(tb, err)
	ts.sampler = server.StartSampler(ts.runner, func(b *envrunner.MultiAgentBatch) error {
		ts.mu.Lock()
		ts.rows += b.Rows()
		ts.mu.Unlock()
		return nil
	})
	ts.hs = httptest.NewServer(ts.srv)
	ts.url = ts.hs.URL
	tb.Cleanup(func() { ts.stop(tb) })
	return ts
}

func (ts *testServer) stop(tb testing.TB) int {
	ts.once.Do(func() {
		ts.hs.Close()
		require.NoError(tb, ts.srv.Close())
		require.NoError(tb, ts.sampler.Wait())
		ts.runner.Close()
	})
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.rows
}

func newClient(tb testing.TB, url string) *client.Client {
	c, err := client.New(url, client.Options{})
	require.NoError(tb, err)
	tb.Cleanup(c.CloseIdleConnections)
	return c
}

func TestEpisodes(t *testing.T) {
	ts := startServer(t, externalenv.Options{}, server.Options{})
	c := newClient(t, ts.url)
	ctx := context.Background()
	steps := 0
	for k := range 3 {
		id, err := c.StartEpisode(ctx, "", k != 2)
		require.NoError(t, err)
		require.Len(t, id, 36)
		obs := []float32{0, 0, 0, 0}
		for i := range 5 {
			obs[0] = float32(i) / 10
			if i == 3 {
				require.NoError(t, c.LogAction(ctx, id, obs, []float32{1}))
			} else {
				act, err := c.GetAction(ctx, id, obs)
				require.NoError(t, err)
				require.Len(t, act, 1)
				assert.True(t, act[0] == 0 || act[0] == 1)
			}
			require.NoError(t, c.LogReturns(ctx, id, 1, map[string]any{"step": i}))
			if k != 2 {
				steps++
			}
		}
		require.NoError(t, c.EndEpisode(ctx, id, obs))
	}
	id, err := c.StartEpisode(ctx, "mine/with a slash", true)
	require.NoError(t, err)
	assert.Equal(t, "mine/with a slash", id)
	_, err = c.GetAction(ctx, id, []float32{0, 0, 0, 0})
	require.NoError(t, err)
	steps++
	require.NoError(t, c.Health(ctx))
	assert.Equal(t, steps, ts.stop(t), "rows: every step of the training episodes")
}

// TestErrorsMapToSentinels: every error answer matches externalenv's sentinel errors (or
// this package's) with errors.Is, and carries the status and code.
func TestErrorsMapToSentinels(t *testing.T) {
	ts := startServer(t, externalenv.Options{MaxConcurrentEpisodes: 2}, server.Options{MaxBodyBytes: 512})
	c := newClient(t, ts.url)
	ctx := context.Background()
	_, err := c.StartEpisode(ctx, "a", true)
	require.NoError(t, err)
	_, err = c.StartEpisode(ctx, "d", true)
	require.NoError(t, err)
	require.NoError(t, c.EndEpisode(ctx, "d", []float32{0, 0, 0, 0}))

	_, err = c.GetAction(ctx, "nope", []float32{0, 0, 0, 0})
	assert.ErrorIs(t, err, externalenv.ErrEpisodeNotFound)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 404, ce.StatusCode)
	assert.Equal(t, "episode_not_found", ce.Code)

	_, err = c.StartEpisode(ctx, "a", true)
	assert.ErrorIs(t, err, externalenv.ErrEpisodeExists)
	_, err = c.StartEpisode(ctx, "d", true)
	assert.ErrorIs(t, err, externalenv.ErrEpisodeDone)
	assert.ErrorIs(t, c.LogReturns(ctx, "d", 1, nil), externalenv.ErrEpisodeDone)
	_, err = c.GetAction(ctx, "a", []float32{0, 0, 0})
	assert.ErrorIs(t, err, externalenv.ErrBadObservation)
	_, err = c.GetAction(ctx, "a", []float32{float32(math.NaN()), 0, 0, 0})
	assert.ErrorIs(t, err, externalenv.ErrBadObservation)
	assert.ErrorIs(t, c.LogAction(ctx, "a", []float32{0, 0, 0, 0}, []float32{3}), externalenv.ErrBadAction)
	assert.ErrorIs(t, c.LogReturns(ctx, "a", math.Inf(1), nil), client.ErrBadRequest)
	_, err = c.GetAction(ctx, "a", make([]float32, 400))
	assert.ErrorIs(t, err, client.ErrTooLarge)
	_, err = c.StartEpisode(ctx, "b", true)
	require.NoError(t, err)
	_, err = c.StartEpisode(ctx, "c", true)
	assert.ErrorIs(t, err, externalenv.ErrTooManyEpisodes)
	_, err = c.Act(ctx, [][]float32{{0, 0, 0, 0}, {0, 0, 0, float32(math.NaN())}}, nil)
	assert.ErrorIs(t, err, externalenv.ErrBadObservation)
	assert.ErrorContains(t, err, "observation 1: value 3 is NaN")
	_, err = c.Act(ctx, [][]float32{{0, 0, 0}}, nil) // refused by the client: 3 values
	assert.ErrorContains(t, err, "3 observation values for 1 observations of 4")

	ts.stop(t) // the server shuts down: 503 before the listener is gone would be ErrStopped
	_, err = c.StartEpisode(ctx, "", true)
	assert.Error(t, err)
}

func TestStoppedAndNotImplemented(t *testing.T) {
	e, err := externalenv.New(externalenv.Options{ObservationSpace: spaces.NewBox(-1, 1, 2), ActionSpace: spaces.NewBox(-1, 1, 2, 2)})
	require.NoError(t, err)
	srv, err := server.New(server.Options{Env: e})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	c := newClient(t, hs.URL)
	ctx := context.Background()
	_, err = c.Act(ctx, [][]float32{{0, 0}}, nil)
	assert.ErrorIs(t, err, client.ErrNotImplemented)
	sp, err := c.Spaces(ctx)
	require.NoError(t, err)
	assert.False(t, sp.Act)
	assert.Equal(t, []int{2, 2}, sp.Action.(*spaces.Box).Shape)
	require.NoError(t, srv.Close())
	_, err = c.StartEpisode(ctx, "", true)
	assert.ErrorIs(t, err, externalenv.ErrStopped)
	err = c.Health(ctx)
	assert.ErrorIs(t, err, externalenv.ErrStopped)
	e.Stop()
}

// TestBoxActions: a Box action of shape [2,2] comes as nested arrays and reads back flat.
func TestBoxActions(t *testing.T) {
	act := spaces.NewBox(-1, 1, 2, 2)
	ts := startServer(t, externalenv.Options{ObservationSpace: spaces.NewBox(-1, 1, 3), ActionSpace: act}, server.Options{})
	c := newClient(t, ts.url)
	ctx := context.Background()
	id, err := c.StartEpisode(ctx, "", true)
	require.NoError(t, err)
	a, err := c.GetAction(ctx, id, []float32{0.5, 0, -0.5})
	require.NoError(t, err)
	require.Len(t, a, 4)
	assert.True(t, act.Contains(a), "%v", a)
	acts, err := c.Act(ctx, [][]float32{{0, 0, 0}, {1, 1, 1}, {-1, 0, 1}}, nil)
	require.NoError(t, err)
	require.Len(t, acts, 3)
	for _, a := range acts {
		assert.True(t, act.Contains(a), "%v", a)
	}
}

func TestConcurrentClients(t *testing.T) {
	ts := startServer(t, externalenv.Options{MaxConcurrentEpisodes: 32}, server.Options{})
	c := newClient(t, ts.url)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = func() error {
				for e := range 3 {
					id, err := c.StartEpisode(ctx, fmt.Sprintf("g%d-%d", g, e), true)
					if err != nil {
						return err
					}
					for range 10 {
						if _, err := c.GetAction(ctx, id, []float32{0.1, 0, 0, 0}); err != nil {
							return err
						}
						if err := c.LogReturns(ctx, id, 1, nil); err != nil {
							return err
						}
					}
					if err := c.EndEpisode(ctx, id, []float32{0, 0, 0, 0}); err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, 32*3*10, ts.stop(t))
}

func TestNewChecksURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8900", "ftp://x", "http://"} {
		_, err := client.New(u, client.Options{})
		assert.Error(t, err, u)
	}
	c, err := client.New("http://127.0.0.1:1/", client.Options{})
	require.NoError(t, err)
	err = c.Health(context.Background())
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "client: "), err.Error())
}

func TestMultiAgent(t *testing.T) {
	ts := startServerMode(t, externalenv.Options{}, server.Options{}, true)
	c := newClient(t, ts.url)
	ma := c.MultiAgent()
	ctx := context.Background()
	sp, err := c.Spaces(ctx)
	require.NoError(t, err)
	assert.True(t, sp.MultiAgent)
	id, err := ma.StartEpisode(ctx, "m", true)
	require.NoError(t, err)
	o := func(x float32) []float32 { return []float32{x, 0, 0, 0} }
	acts, err := ma.GetAction(ctx, id, map[string][]float32{"a": o(0.1), "b": o(0.2)})
	require.NoError(t, err)
	require.Len(t, acts, 2)
	assert.Len(t, acts["a"], 1)
	require.NoError(t, ma.LogReturns(ctx, id, map[string]float64{"a": 1, "b": 2}, map[string]bool{"b": true},
		map[string]map[string]any{"a": {"k": "v"}}))
	require.NoError(t, ma.LogAction(ctx, id, map[string][]float32{"a": o(0.3), "b": o(0.4)}, map[string][]float32{"a": {1}}))
	acts, err = ma.GetAction(ctx, id, map[string][]float32{"a": o(0.5)})
	require.NoError(t, err)
	assert.Len(t, acts, 1)
	_, err = ma.GetAction(ctx, id, map[string][]float32{"b": o(0.6)})
	assert.ErrorIs(t, err, externalenv.ErrBadObservation, "b is done")
	require.NoError(t, ma.EndEpisodeTruncated(ctx, id, map[string][]float32{"a": o(0.7)}))
	assert.ErrorIs(t, ma.EndEpisode(ctx, id, map[string][]float32{"a": o(0.7)}), externalenv.ErrEpisodeDone)
	// a: 0.1, 0.3, 0.5 -> 0.7; b: 0.2 -> 0.4 (done).
	assert.Equal(t, 4, ts.stop(t))
}

func TestEndEpisodeTruncated(t *testing.T) {
	ts := startServer(t, externalenv.Options{}, server.Options{})
	c := newClient(t, ts.url)
	ctx := context.Background()
	id, err := c.StartEpisode(ctx, "", true)
	require.NoError(t, err)
	_, err = c.GetAction(ctx, id, []float32{0, 0, 0, 0})
	require.NoError(t, err)
	require.NoError(t, c.EndEpisodeTruncated(ctx, id, []float32{0.1, 0, 0, 0}))
	assert.ErrorIs(t, c.EndEpisodeTruncated(ctx, id, []float32{0.1, 0, 0, 0}), externalenv.ErrEpisodeDone)
	assert.Equal(t, 1, ts.stop(t))
}
