package externalenv_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/spaces"
)

func newEnv(tb testing.TB, opts externalenv.Options) *externalenv.ExternalEnv {
	tb.Helper()
	if opts.ObservationSpace == nil {
		cp, err := classic.NewCartPole(nil)
		require.NoError(tb, err)
		opts.ObservationSpace, opts.ActionSpace = cp.ObservationSpace(), cp.ActionSpace()
	}
	e, err := externalenv.New(opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = e.Stop() })
	return e
}

type result struct {
	act []float32
	err error
}

// getAction calls GetAction on its own goroutine (a simulator thread) and returns the channel
// of its result.
func getAction(ctx context.Context, e *externalenv.ExternalEnv, id string, obs []float32) <-chan result {
	ch := make(chan result, 1)
	go func() {
		a, err := e.GetAction(ctx, id, obs)
		ch <- result{a, err}
	}()
	return ch
}

func obsOf(v float32) []float32 { return []float32{v, 0, 0, 0} }

func poll(tb testing.TB, e *externalenv.ExternalEnv) *env.Batch {
	tb.Helper()
	b := &env.Batch{}
	require.NoError(tb, e.Poll(b))
	return b
}

// TestEpisodeProtocol: first observation with Reset, rewards of several LogReturns summed
// into the next observation, a logged action reported as OffPolicyAction with the
// observation it was taken at (RLlib's contract), an info kept until replaced, the end with Terminated, TryReset async, the id completed afterwards.
func TestEpisodeProtocol(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 2})
	ctx := context.Background()
	id, err := e.StartEpisode("", true)
	require.NoError(t, err)
	require.Len(t, id, 36) // a UUID

	res := getAction(ctx, e, id, obsOf(0.01))
	b := poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.Equal(t, env.AgentObs{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.01)}, b.Agents[0])
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true}}, b.Envs)
	act := []float32{1}
	require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: env.DefaultAgentID, Action: act}}))
	act[0] = 7 // the env copied it
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, []float32{1}, r.act)

	require.NoError(t, e.LogReturns(id, 1, nil))
	require.NoError(t, e.LogReturns(id, 2.5, env.Info{"k": 1}))
	require.NoError(t, e.LogAction(id, obsOf(0.02), []float32{0}))
	b = poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.Equal(t, env.AgentObs{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.02), Reward: 3.5, Info: env.Info{"k": 1},
		OffPolicyAction: []float32{0}}, b.Agents[0])
	assert.Empty(t, b.Envs)
	require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: env.DefaultAgentID, Action: []float32{1}}}))

	require.NoError(t, e.LogReturns(id, -1, nil))
	require.NoError(t, e.EndEpisode(id, obsOf(0.03)))
	b = poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.Equal(t, env.AgentObs{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.03), Reward: -1, Terminated: true,
		Info: env.Info{"k": 1}}, b.Agents[0]) // the info stays until replaced
	assert.Equal(t, []env.EnvStatus{{Env: 0, Terminated: true}}, b.Envs)
	async, err := e.TryReset(0, env.Seed{}, b)
	require.NoError(t, err)
	assert.True(t, async)

	assert.ErrorIs(t, e.EndEpisode(id, obsOf(0)), externalenv.ErrEpisodeDone)
	assert.ErrorIs(t, e.LogReturns(id, 1, nil), externalenv.ErrEpisodeDone)
	_, err = e.StartEpisode(id, true)
	assert.ErrorIs(t, err, externalenv.ErrEpisodeDone)

	// A training-disabled episode says so with its first observation; the slot is reused.
	id2, err := e.StartEpisode("b", false)
	require.NoError(t, err)
	require.Equal(t, "b", id2)
	require.NoError(t, e.LogAction(id2, obsOf(0.04), []float32{1}))
	b = poll(t, e)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true, TrainingDisabled: true}}, b.Envs)
}

// TestErrors: the typed errors of the simulator-side API, none of which records anything.
func TestErrors(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 2})
	ctx := context.Background()
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	_, err = e.StartEpisode("a", true)
	assert.ErrorIs(t, err, externalenv.ErrEpisodeExists)
	_, err = e.StartEpisode("b", true)
	require.NoError(t, err)
	_, err = e.StartEpisode("c", true)
	assert.ErrorIs(t, err, externalenv.ErrTooManyEpisodes)

	_, err = e.GetAction(ctx, "x", obsOf(0))
	assert.ErrorIs(t, err, externalenv.ErrEpisodeNotFound)
	assert.ErrorIs(t, e.LogReturns("x", 1, nil), externalenv.ErrEpisodeNotFound)
	assert.ErrorIs(t, e.EndEpisode("x", obsOf(0)), externalenv.ErrEpisodeNotFound)

	for name, obs := range map[string][]float32{"short": {0, 0, 0}, "nan": {float32(nan()), 0, 0, 0}, "bounds": {5, 0, 0, 0}} {
		_, err = e.GetAction(ctx, "a", obs)
		assert.ErrorIs(t, err, externalenv.ErrBadObservation, name)
		assert.ErrorIs(t, e.LogAction("a", obs, []float32{0}), externalenv.ErrBadObservation, name)
		assert.ErrorIs(t, e.EndEpisode("a", obs), externalenv.ErrBadObservation, name)
	}
	for _, act := range [][]float32{{2}, {0.5}, {}, {0, 1}} {
		assert.ErrorIs(t, e.LogAction("a", obsOf(0), act), externalenv.ErrBadAction, "%v", act)
	}

	// A cancelled GetAction takes its observation back (it was not polled): the next Poll
	// reports the observation of the LogAction that follows, with the reward of both steps.
	require.NoError(t, e.LogReturns("a", 2, nil))
	cctx, cancel := context.WithCancel(ctx)
	cancel() // GetAction queues the observation, then gives up before anything polls it
	_, err = e.GetAction(cctx, "a", obsOf(0.5))
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, e.LogReturns("a", 1, nil))
	require.NoError(t, e.LogAction("a", obsOf(0.25), []float32{1}))
	b := poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.Equal(t, obsOf(0.25), b.Agents[0].Obs)
	assert.Equal(t, 3.0, b.Agents[0].Reward)

	// Timeout: nothing polls, so GetAction of "b" times out.
	e2 := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 1, Timeout: 1})
	_, err = e2.StartEpisode("b", true)
	require.NoError(t, err)
	_, err = e2.GetAction(ctx, "b", obsOf(0))
	assert.ErrorIs(t, err, externalenv.ErrTimeout)

	// Bad actions from the sampler.
	assert.ErrorIs(t, e.SendActions([]env.Action{{Env: 1, Agent: env.DefaultAgentID, Action: []float32{0}}}), env.ErrBadActions)
}

func nan() float64 { var z float64; return z / z }

// TestSlotsAndLimit: with MaxConcurrentEpisodes 1, a second episode starts only once the
// first has ended, and takes its sub-environment after the end was polled.
func TestSlotsAndLimit(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 1})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	_, err = e.StartEpisode("b", true)
	require.ErrorIs(t, err, externalenv.ErrTooManyEpisodes)
	require.NoError(t, e.EndEpisode("a", obsOf(0.1)))
	_, err = e.StartEpisode("b", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("b", obsOf(0.2), []float32{0}))
	b := poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.Equal(t, obsOf(0.1), b.Agents[0].Obs)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true, Terminated: true}}, b.Envs)
	b = poll(t, e)
	require.Len(t, b.Agents, 1)
	assert.Equal(t, obsOf(0.2), b.Agents[0].Obs)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Reset: true}}, b.Envs)
}

// TestRunLoopEnds: a run loop that returns, fails or panics surfaces from Poll.
func TestRunLoopEnds(t *testing.T) {
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		run      func(context.Context, *externalenv.ExternalEnv) error
		err      error
		panicked bool
	}{
		"nil":   {run: func(context.Context, *externalenv.ExternalEnv) error { return nil }},
		"error": {run: func(context.Context, *externalenv.ExternalEnv) error { return boom }, err: boom},
		"panic": {run: func(context.Context, *externalenv.ExternalEnv) error { panic("bang") }, panicked: true},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, externalenv.Options{})
			e.Start(context.Background(), tc.run)
			err := e.Poll(&env.Batch{})
			var rle *externalenv.RunLoopError
			require.ErrorAs(t, err, &rle)
			assert.Equal(t, tc.panicked, rle.Panicked)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
			}
			if tc.panicked {
				assert.Contains(t, err.Error(), "bang")
			}
		})
	}
}

// TestStop: Stop releases a blocked GetAction and a blocked Poll, and cancels the run loop.
func TestStop(t *testing.T) {
	e := newEnv(t, externalenv.Options{Timeout: -1})
	ctxDone := make(chan struct{})
	started := make(chan struct{})
	e.Start(context.Background(), func(ctx context.Context, e *externalenv.ExternalEnv) error {
		close(started)
		<-ctx.Done()
		close(ctxDone)
		return ctx.Err()
	})
	<-started
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	res := getAction(context.Background(), e, "a", obsOf(0))
	b := poll(t, e) // the observation is in flight: GetAction waits for SendActions
	require.Len(t, b.Agents, 1)
	pollErr := make(chan error, 1)
	go func() { pollErr <- e.Poll(&env.Batch{}) }()
	require.NoError(t, e.Stop())
	require.ErrorIs(t, (<-res).err, externalenv.ErrStopped)
	<-ctxDone
	require.ErrorIs(t, <-pollErr, externalenv.ErrStopped)
	_, err = e.StartEpisode("b", true)
	require.ErrorIs(t, err, externalenv.ErrStopped)
}

func TestNewChecks(t *testing.T) {
	_, err := externalenv.New(externalenv.Options{})
	require.Error(t, err)
	_, err = externalenv.New(externalenv.Options{ObservationSpace: spaces.NewBox(0, 1, 2), ActionSpace: &spaces.Discrete{N: 2}, MaxBatch: -1})
	require.Error(t, err)
	e, err := externalenv.New(externalenv.Options{ObservationSpace: spaces.NewBox(0, 1, 2), ActionSpace: &spaces.Discrete{N: 2}})
	require.NoError(t, err)
	assert.Equal(t, 100, e.NumEnvs())
}

// TestMaxWait: with dynamic batching, Poll waits for MaxBatch observations (MaxWait is long).
func TestMaxWait(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 3, MaxBatch: 2, MaxWait: time.Hour})
	for _, id := range []string{"a", "b", "c"} {
		_, err := e.StartEpisode(id, true)
		require.NoError(t, err)
	}
	require.NoError(t, e.LogAction("a", obsOf(0.1), []float32{0}))
	got := make(chan *env.Batch, 1)
	go func() {
		b := &env.Batch{}
		if err := e.Poll(b); err != nil {
			b = nil
		}
		got <- b
	}()
	require.NoError(t, e.LogAction("b", obsOf(0.2), []float32{0}))
	require.NoError(t, e.LogAction("c", obsOf(0.3), []float32{0}))
	b := <-got
	require.NotNil(t, b)
	assert.Len(t, b.Agents, 2) // the third waits for the next Poll
}

// TestTruncatedEnd: EndEpisodeTruncated reports the final observation Truncated, with
// EnvStatus.Truncated, and completes the episode.
func TestTruncatedEnd(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	require.NoError(t, e.LogAction("a", obsOf(0.1), []float32{1}))
	b := poll(t, e)
	assert.Equal(t, []float32{1}, b.Agents[0].OffPolicyAction)
	require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: env.DefaultAgentID, Action: []float32{0}}}))
	require.NoError(t, e.LogReturns("a", 2, nil))
	require.NoError(t, e.EndEpisodeTruncated("a", obsOf(0.2)))
	b = poll(t, e)
	assert.Equal(t, []env.AgentObs{{Env: 0, Agent: env.DefaultAgentID, Obs: obsOf(0.2), Reward: 2, Truncated: true}}, b.Agents)
	assert.Equal(t, []env.EnvStatus{{Env: 0, Truncated: true}}, b.Envs)
	assert.ErrorIs(t, e.EndEpisodeTruncated("a", obsOf(0.3)), externalenv.ErrEpisodeDone)
	assert.ErrorIs(t, e.EndEpisodeTruncated("a", obsOf(9)), externalenv.ErrBadObservation)
	assert.ErrorIs(t, e.EndEpisodeTruncated("x", obsOf(0)), externalenv.ErrEpisodeNotFound)
}

// TestBusyAndAnswerBuffer: a second GetAction while one waits is ErrEpisodeBusy; the
// returned slice is the episode's own, reused by its next GetAction.
func TestBusyAndAnswerBuffer(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	ctx := context.Background()
	_, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	var first []float32
	for k := range 2 {
		res := make(chan []float32, 1)
		go func() {
			a, err := e.GetAction(ctx, "a", obsOf(float32(k)/10))
			assert.NoError(t, err)
			res <- a
		}()
		b := poll(t, e)
		require.Len(t, b.Agents, 1)
		_, err = e.GetAction(ctx, "a", obsOf(0.5))
		assert.ErrorIs(t, err, externalenv.ErrEpisodeBusy)
		require.NoError(t, e.SendActions([]env.Action{{Env: 0, Agent: env.DefaultAgentID, Action: []float32{float32(k)}}}))
		a := <-res
		assert.Equal(t, []float32{float32(k)}, a)
		if k == 0 {
			first = a
		} else {
			assert.Same(t, &first[0], &a[0], "the episode's buffer, reused")
		}
	}
}

// responder answers every observation with action 1 until Poll fails, allocating nothing
// once its buffers have grown.
func responder(be env.BaseEnv, actSize int) {
	var b env.Batch
	var acts []env.Action
	one := make([]float32, actSize)
	one[0] = 1
	for {
		b.Clear()
		if be.Poll(&b) != nil {
			return
		}
		acts = acts[:0]
		for _, a := range b.Agents {
			if !a.Terminated && !a.Truncated {
				acts = append(acts, env.Action{Env: a.Env, Agent: a.Agent, Action: one})
			}
		}
		if be.SendActions(acts) != nil {
			return
		}
	}
}

// TestGetActionAllocs: in steady state a GetAction/LogReturns step allocates nothing
// (sampler side included), and neither does a whole episode.
func TestGetActionAllocs(t *testing.T) {
	if underRace {
		t.Skip("the race detector's instrumentation allocates")
	}
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 4})
	go responder(e, 1)
	ctx := context.Background()
	id, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	obs := obsOf(0.1)
	step := func() {
		if _, err := e.GetAction(ctx, id, obs); err != nil {
			t.Fatal(err)
		}
		if err := e.LogReturns(id, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 { // warm up: events, buffers
		step()
	}
	assert.Zero(t, testing.AllocsPerRun(1000, step))

	k := 0
	episode := func() { // the episode's own allocations only: its struct, channel, buffers, events
		k++
		id, err := e.StartEpisode(fmt.Sprintf("e%d", k), true)
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			if _, err := e.GetAction(ctx, id, obs); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.EndEpisode(id, obs); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		episode()
	}
	n := testing.AllocsPerRun(100, episode)
	t.Logf("%v allocations per episode", n)
	assert.LessOrEqual(t, n, 20.0)
}

// TestManyReportsUnpolled: more reports than the ready ring holds pile up while nothing
// polls (episodes started and ended one after the other); every one is reported.
func TestManyReportsUnpolled(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 2})
	const n = 300 // the ring holds 64 with MaxConcurrentEpisodes 2
	for k := range n {
		id, err := e.StartEpisode(fmt.Sprintf("e%d", k), true)
		require.NoError(t, err)
		require.NoError(t, e.EndEpisode(id, obsOf(float32(k)/1000)))
	}
	seen := map[float32]bool{}
	for len(seen) < n {
		b := poll(t, e)
		for _, a := range b.Agents {
			require.True(t, a.Terminated)
			require.False(t, seen[a.Obs[0]], "reported twice")
			seen[a.Obs[0]] = true
		}
		require.NoError(t, e.SendActions(nil))
	}
}

// TestIDCopies: an episode is found by a copy of its id as well as by the string
// StartEpisode returned, before and after its end.
func TestIDCopies(t *testing.T) {
	e := newEnv(t, externalenv.Options{})
	go responder(e, 1)
	ctx := context.Background()
	id, err := e.StartEpisode("", true)
	require.NoError(t, err)
	for _, s := range []string{id, strings.Clone(id), id, strings.Clone(id)} {
		_, err := e.GetAction(ctx, s, obsOf(0))
		require.NoError(t, err)
		require.NoError(t, e.LogReturns(s, 1, nil))
	}
	require.NoError(t, e.EndEpisode(strings.Clone(id), obsOf(0)))
	for _, s := range []string{id, strings.Clone(id)} {
		assert.ErrorIs(t, e.LogReturns(s, 1, nil), externalenv.ErrEpisodeDone)
		_, err := e.GetAction(ctx, s, obsOf(0))
		assert.ErrorIs(t, err, externalenv.ErrEpisodeDone)
	}
}

// TestIdlePoll: with IdlePoll, Poll returns with nothing after waiting that long without an
// observation (so the sampler can flush), and as before when one comes first.
func TestIdlePoll(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 2, IdlePoll: 20 * time.Millisecond, MaxWait: time.Millisecond})
	b := &env.Batch{}
	start := time.Now()
	require.NoError(t, e.Poll(b))
	assert.Empty(t, b.Agents)
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	id, err := e.StartEpisode("", true)
	require.NoError(t, err)
	res := getAction(context.Background(), e, id, []float32{0.01, 0, 0, 0})
	b = poll(t, e)
	require.Len(t, b.Agents, 1)
	require.NoError(t, e.SendActions([]env.Action{{Env: b.Agents[0].Env, Agent: b.Agents[0].Agent, Action: []float32{1}}}))
	require.NoError(t, (<-res).err)

	_, err = externalenv.New(externalenv.Options{ObservationSpace: e.ObservationSpace(), ActionSpace: e.ActionSpace(), IdlePoll: -1})
	assert.Error(t, err)
}
