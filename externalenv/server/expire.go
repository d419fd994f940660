package server

import (
	"time"
)

// DefaultIdleTimeout is how long an episode may go without a request before the server ends
// it (Options.IdleTimeout 0), as Triton's sequence batcher ends idle sequences.
const DefaultIdleTimeout = 60 * time.Second

// An abandoned episode holds a slot of the ExternalEnv (MaxConcurrentEpisodes) and its
// memory until it ends: a client that starts episodes and goes away would leave the server
// answering 429 forever. The reaper ends every episode that has had no call for the idle
// timeout and none in progress, as the server's Close does: truncated, with its last
// observation as the final one, so that its steps are recorded and its slot freed. The env
// keeps what that takes (externalenv's TruncateIdle): a request counts from its call of the
// env, after its body is read.

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

// expireIdle ends the episodes without a request since now - s.idle (the env tells: see
// externalenv's TruncateIdle) and returns how many.
func (s *Server) expireIdle(now time.Time) int {
	if s.closed.Load() {
		return 0
	}
	n := s.eps.TruncateIdle(s.idle, now)
	if n > 0 {
		s.metrics.truncated.Add(int64(n))
		s.metrics.expired.Add(int64(n))
		s.metrics.active.Store(int64(s.eps.Running()))
		s.log.Info("ended idle episodes", "episodes", n, "idle", s.idle)
	}
	return n
}
