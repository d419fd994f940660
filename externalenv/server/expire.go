package server

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/onnxrl/sampler/externalenv"
)

// DefaultIdleTimeout is how long an episode may go without a request before the server ends
// it (Options.IdleTimeout 0), as Triton's sequence batcher ends idle sequences.
const DefaultIdleTimeout = 60 * time.Second

// An abandoned episode holds a slot of the ExternalEnv (MaxConcurrentEpisodes) and its
// memory until it ends: a client that starts episodes and goes away would leave the server
// answering 429 forever. The reaper ends every episode that has had no request in flight for
// the idle timeout, as the server's Close does: truncated, with its last observation as the
// final one, so that its steps are recorded and its slot freed.

// touch marks the start (delta 1) or the end (delta -1) of a request on episode id.
func (s *Server) touch(id string, delta int) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	if ep := s.episodes[id]; ep != nil {
		ep.busy += delta
		ep.touched = now
	}
	s.mu.Unlock()
}

// reap runs until Close, ending the episodes idle for longer than s.idle.
func (s *Server) reap() {
	defer close(s.reaperDone)
	tick := max(s.idle/4, time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.runDone:
			return
		case <-t.C:
			s.expireIdle(time.Now())
		}
	}
}

// expireIdle ends the episodes without a request since now - s.idle and returns how many.
func (s *Server) expireIdle(now time.Time) int {
	limit := now.Add(-s.idle).UnixNano()
	type idle struct {
		id string
		ep *episodeState
	}
	var old []idle
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return 0
	}
	for id, ep := range s.episodes {
		if ep.busy == 0 && ep.touched < limit {
			old = append(old, idle{id, ep})
			delete(s.episodes, id)
		}
	}
	s.metrics.active.Store(int64(len(s.episodes)))
	s.mu.Unlock()
	for _, e := range old {
		if err := s.endOpen(e.id, e.ep, true); err != nil {
			s.log.Warn("ending an idle episode", "episode", e.id, "err", err)
		}
		s.metrics.expired.Add(1)
	}
	return len(old)
}

// endOpen ends a running episode that the server has taken out of its table: truncated,
// with its last observation (each open agent's last one) as the final one. An episode
// without an observation records nothing; with free set it still ends (with an observation
// of the space that nothing records), so that its slot is freed. Episodes ended meanwhile
// by their client are not an error.
func (s *Server) endOpen(id string, ep *episodeState, free bool) error {
	var err error
	switch {
	case s.ma != nil:
		// One agent that has not ended is enough: the others end with their last
		// observation repeated.
		agent, a := ep.openAgent()
		if a == nil {
			if !free {
				return nil
			}
			agent, a = "__expired__", &agentState{last: s.placeholder()}
		}
		err = s.ma.EndEpisodeTruncated(id, map[string][]float32{agent: a.last})
	case ep.seen:
		err = s.env.EndEpisodeTruncated(id, ep.last)
	case free:
		err = s.env.EndEpisodeTruncated(id, s.placeholder())
	default:
		return nil
	}
	switch {
	case err == nil:
		s.metrics.truncated.Add(1)
		return nil
	case errors.Is(err, externalenv.ErrEpisodeDone), errors.Is(err, externalenv.ErrEpisodeNotFound):
		return nil // ended meanwhile (a request raced with the reaper or Close)
	case errors.Is(err, externalenv.ErrStopped):
		return err
	}
	return fmt.Errorf("server: end episode %q: %w", id, err)
}

// placeholder returns an observation of the space, the final observation of an episode that
// never observed: such an episode has no step, so nothing of it is recorded.
func (s *Server) placeholder() []float32 {
	return s.obsSpace.Sample(rand.New(rand.NewPCG(0, 0)), make([]float32, s.obsSize))
}
