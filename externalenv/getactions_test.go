package externalenv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
)

// answerEach polls until n observations have come and answers each with its first
// observation value + 1, so that each answer says which observation it is for. It returns
// the number of Polls it took.
func answerEach(tb testing.TB, e *externalenv.ExternalEnv, n int) (polls int) {
	tb.Helper()
	for n > 0 {
		b := poll(tb, e)
		polls++
		acts := make([]env.Action, len(b.Agents))
		for i, a := range b.Agents {
			acts[i] = env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{a.Obs[0] + 1}}
		}
		require.NoError(tb, e.SendActions(acts))
		n -= len(b.Agents)
	}
	require.Zero(tb, n, "more observations than expected")
	return polls
}

type actionsResult struct {
	acts []float32
	err  error
}

func getActions(ctx context.Context, e *externalenv.ExternalEnv, ids []string, obs []float32) <-chan actionsResult {
	ch := make(chan actionsResult, 1)
	go func() {
		a, err := e.GetActions(ctx, ids, obs, nil)
		ch <- actionsResult{a, err}
	}()
	return ch
}

// TestGetActions: the observations of one call are reported together, in one Poll, and each
// action goes back to its own episode's row.
func TestGetActions(t *testing.T) {
	for _, n := range []int{1, 3, 200} { // 200: beyond the stack buffers
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			// Poll waits until the whole call is in: a call's rows are reported before it waits.
			e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: n, MaxWait: time.Minute})
			ids := make([]string, n)
			var obs []float32
			for i := range ids {
				id, err := e.StartEpisode("", true)
				require.NoError(t, err)
				ids[i] = id
				obs = append(obs, obsOf(float32(i)/1000)...)
			}
			res := getActions(context.Background(), e, ids, obs)
			assert.Equal(t, 1, answerEach(t, e, n), "one Poll")
			r := <-res
			require.NoError(t, r.err)
			require.Len(t, r.acts, n)
			for i, a := range r.acts {
				assert.Equal(t, float32(i)/1000+1, a, "episode %d", i)
			}
			// The episodes go on: a second call reuses their buffers.
			res = getActions(context.Background(), e, ids, obs)
			answerEach(t, e, n)
			r = <-res
			require.NoError(t, r.err)
			assert.Len(t, r.acts, n)
		})
	}
}

// TestGetActionsErrors: bad observations refuse the whole call before anything is reported; a
// bad id stops the call there, and the episodes before it are answered.
func TestGetActionsErrors(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 4})
	ctx := context.Background()
	a, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	bID, err := e.StartEpisode("b", true)
	require.NoError(t, err)

	_, err = e.GetActions(ctx, []string{a, bID}, obsOf(0), nil)
	assert.ErrorIs(t, err, externalenv.ErrBadObservation, "one row for two episodes")
	_, err = e.GetActions(ctx, []string{a, bID}, append(obsOf(0), obsOf(100)...), nil)
	assert.ErrorIs(t, err, externalenv.ErrBadObservation, "x outside the space")

	res := getActions(ctx, e, []string{a, "nope", bID}, append(append(obsOf(0.01), obsOf(0.02)...), obsOf(0.03)...))
	answerEach(t, e, 1) // only the episode before the unknown id is reported
	r := <-res
	assert.ErrorIs(t, r.err, externalenv.ErrEpisodeNotFound)
	assert.ErrorContains(t, r.err, "episode 1 of 3")
	assert.Equal(t, []float32{1.01}, r.acts)

	// An id given twice is busy the second time.
	res = getActions(ctx, e, []string{bID, bID}, append(obsOf(0.02), obsOf(0.02)...))
	answerEach(t, e, 1)
	r = <-res
	assert.ErrorIs(t, r.err, externalenv.ErrEpisodeBusy)
	assert.Equal(t, []float32{1.02}, r.acts)

	// Nothing is left waiting: both episodes take a GetAction again.
	res2 := getActions(ctx, e, []string{a, bID}, append(obsOf(0.03), obsOf(0.04)...))
	answerEach(t, e, 2)
	r = <-res2
	require.NoError(t, r.err)
	assert.Equal(t, []float32{1.03, 1.04}, r.acts)
}

// TestGetActionsGiveUp: when the wait for one episode gives up, the later ones give up too and
// can be asked again.
func TestGetActionsGiveUp(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 3, Timeout: 200 * time.Millisecond})
	// The first call times out: nothing polls.
	ids := make([]string, 3)
	for i := range ids {
		var err error
		ids[i], err = e.StartEpisode("", true)
		require.NoError(t, err)
	}
	obs := append(append(obsOf(0.01), obsOf(0.02)...), obsOf(0.03)...)
	_, err := e.GetActions(context.Background(), ids, obs, nil)
	assert.ErrorIs(t, err, externalenv.ErrTimeout)

	// The withdrawn observations are not reported; each episode takes a new request.
	res := getActions(context.Background(), e, ids, obs)
	answerEach(t, e, 3)
	r := <-res
	require.NoError(t, r.err)
	assert.Equal(t, []float32{1.01, 1.02, 1.03}, r.acts)
}

// TestGetActionsManyCallers: several vectorized simulators at once, each waiting for its
// episodes one after the other, ending some and starting others in their place, while the
// sampler answers in an order of its own. Woken through GetAction's tree (built in the
// answers' order), one of a caller's episodes could be the parent of one it waits for first,
// and the call then hung until the watchdog's timeout.
func TestGetActionsManyCallers(t *testing.T) {
	const callers, per, rounds = 4, 32, 300
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: callers * per, Timeout: 10 * time.Second,
		MaxWait: 200 * time.Microsecond})
	ids := make([][]string, callers)
	for c := range ids {
		for range per {
			id, err := e.StartEpisode("", true)
			require.NoError(t, err)
			ids[c] = append(ids[c], id)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the sampler
		for ctx.Err() == nil {
			b := &env.Batch{}
			if e.Poll(b) != nil {
				return
			}
			var acts []env.Action
			for _, a := range b.Agents {
				if !a.Terminated { // an end wants no action
					acts = append(acts, env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{a.Obs[0] + 1}})
				}
			}
			// A runner answers in its own order (by sub-environment), not in the order of the
			// calls: here, the reverse of the Poll's.
			slices.Reverse(acts)
			if err := e.SendActions(acts); err != nil {
				panic(err)
			}
		}
	}()
	errs := make(chan error, callers)
	for c := range callers {
		go func() {
			obs := make([]float32, 0, 4*per)
			for i := range per {
				obs = append(obs, obsOf(float32(c*per+i)/1000)...)
			}
			var acts []float32
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for r := range rounds {
				for i, id := range ids[c] {
					if rng.IntN(20) > 0 {
						continue
					}
					if err := e.EndEpisode(id, obs[4*i:4*i+4]); err != nil {
						errs <- err
						return
					}
					var err error
					if ids[c][i], err = e.StartEpisode("", true); err != nil {
						errs <- err
						return
					}
				}
				start := time.Now()
				var err error
				if acts, err = e.GetActions(context.Background(), ids[c], obs, acts[:0]); err != nil {
					errs <- fmt.Errorf("caller %d round %d: %w", c, r, err)
					return
				}
				if d := time.Since(start); d > 5*time.Second {
					errs <- fmt.Errorf("caller %d round %d took %v", c, r, d)
					return
				}
				for i, a := range acts {
					if want := float32(c*per+i)/1000 + 1; a != want {
						errs <- fmt.Errorf("caller %d round %d episode %d: action %v, want %v", c, r, i, a, want)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range callers {
		require.NoError(t, <-errs)
	}
}
