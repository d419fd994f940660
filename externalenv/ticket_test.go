package externalenv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
)

// countWaker counts its wake-ups and signals each on a channel.
type countWaker struct {
	n  atomic.Int32
	ch chan struct{}
}

func newCountWaker() *countWaker { return &countWaker{ch: make(chan struct{}, 16)} }

func (w *countWaker) Wake() {
	w.n.Add(1)
	w.ch <- struct{}{}
}

// TestSubmit: the actions go into the caller's buffer, one Wake per Submit, also when
// nothing could be queued, and the ticket is reused.
func TestSubmit(t *testing.T) {
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: 4})
	a, err := e.StartEpisode("a", true)
	require.NoError(t, err)
	b, err := e.StartEpisode("b", true)
	require.NoError(t, err)
	var tk externalenv.Ticket
	w := newCountWaker()
	dst := make([]float32, 2)

	e.Submit(&tk, []string{a, b}, append(obsOf(0.1), obsOf(0.2)...), dst, w)
	assert.Zero(t, w.n.Load(), "woken before any answer")
	answerEach(t, e, 2)
	<-w.ch
	n, err := tk.Result()
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []float32{1.1, 1.2}, dst)

	// Nothing queued: woken within Submit.
	e.Submit(&tk, []string{"nope"}, obsOf(0.3), dst, w)
	<-w.ch
	n, err = tk.Result()
	assert.ErrorIs(t, err, externalenv.ErrEpisodeNotFound)
	assert.ErrorContains(t, err, "episode 0 of 1")
	assert.Zero(t, n)

	e.Submit(&tk, []string{a}, obsOf(0.3), dst[:0], w)
	<-w.ch
	_, err = tk.Result()
	assert.ErrorContains(t, err, "room for 0 action values")

	// Cancel withdraws the observations: the episodes take new ones.
	e.Submit(&tk, []string{b, a}, append(obsOf(0.4), obsOf(0.5)...), dst, w)
	tk.Cancel(context.Canceled)
	<-w.ch
	n, err = tk.Result()
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, n)
	e.Submit(&tk, []string{a, b}, append(obsOf(0.6), obsOf(0.7)...), dst, w)
	answerEach(t, e, 2)
	<-w.ch
	_, err = tk.Result()
	require.NoError(t, err)
	assert.Equal(t, []float32{1.6, 1.7}, dst)
	tk.Cancel(context.Canceled) // ended: nothing happens
	assert.Equal(t, int32(5), w.n.Load())
}

// TestTicketRaces: callers reuse one ticket each while a slow sampler's answers race with
// their timeouts and cancels. An end or an answer meant for an earlier use of a ticket must
// never count against the next: every call ends exactly once, and the actions it reports are
// its own.
func TestTicketRaces(t *testing.T) {
	const callers, per, rounds = 4, 8, 150
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: callers * per, Timeout: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a sampler that sometimes answers late
		rng := rand.New(rand.NewPCG(7, 7))
		for ctx.Err() == nil {
			b := &env.Batch{}
			if e.Poll(b) != nil {
				return
			}
			if rng.IntN(4) == 0 {
				time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
			}
			acts := make([]env.Action, 0, len(b.Agents))
			for _, a := range b.Agents {
				if !a.Terminated {
					acts = append(acts, env.Action{Env: a.Env, Agent: a.Agent, Action: []float32{a.Obs[0] + 1}})
				}
			}
			if err := e.SendActions(acts); err != nil {
				if errors.Is(err, externalenv.ErrStopped) { // the test is over
					return
				}
				panic(err)
			}
		}
	}()
	errs := make(chan error, callers)
	for c := range callers {
		go func() {
			errs <- func() error {
				ids := make([]string, per)
				for i := range ids {
					var err error
					if ids[i], err = e.StartEpisode("", true); err != nil {
						return err
					}
				}
				var tk externalenv.Ticket
				w := newCountWaker()
				rng := rand.New(rand.NewPCG(uint64(c), 3))
				dst := make([]float32, per)
				answered := 0
				for r := range rounds {
					obs := make([]float32, 0, 4*per)
					for i := range per {
						obs = append(obs, obsOf(float32(r*per+i)/10000)...)
					}
					clear(dst)
					e.Submit(&tk, ids, obs, dst, w)
					if rng.IntN(3) == 0 {
						time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
						tk.Cancel(context.Canceled)
					}
					select {
					case <-w.ch:
					case <-time.After(5 * time.Second):
						return fmt.Errorf("caller %d round %d: never woken", c, r)
					}
					n, err := tk.Result()
					if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, externalenv.ErrTimeout) {
						return fmt.Errorf("caller %d round %d: %w", c, r, err)
					}
					if (err == nil) != (n == per) {
						return fmt.Errorf("caller %d round %d: %d actions with error %v", c, r, n, err)
					}
					for i := range n {
						if want := float32(r*per+i)/10000 + 1; dst[i] != want {
							return fmt.Errorf("caller %d round %d episode %d: action %v, want %v", c, r, i, dst[i], want)
						}
					}
					if n == per {
						answered++
					}
					if got := w.n.Load(); got != int32(r+1) {
						return fmt.Errorf("caller %d round %d: %d wake-ups", c, r, got)
					}
				}
				if answered == 0 {
					return fmt.Errorf("caller %d: no call was answered in %d rounds", c, rounds)
				}
				return nil
			}()
		}()
	}
	for range callers {
		require.NoError(t, <-errs)
	}
}
