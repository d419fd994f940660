// LogAction's back-pressure: a bound on the logged observations of an episode that wait for
// the sampler.

package externalenv

import (
	"fmt"
	"time"
)

// logWait is the back-pressure state of an episode's LogAction calls; guarded by episode.mu
// (answer signals room while it holds episode.mu).
type logWait struct {
	open    int32         // LogAction events queued or in flight, not answered yet
	waiters int32         // LogAction calls waiting for room
	room    chan struct{} // capacity 1: a logged observation was answered
	timer   *time.Timer   // reused across waits, so that a blocked LogAction allocates nothing
}

// waitLogRoom blocks until fewer than c.maxPendingLogs logged observations of ep wait for
// the sampler, so that LogAction can queue another. It is called and returns with ep.mu
// held. It gives up with ErrTimeout after c.timeout (when positive) and with ErrStopped
// after Stop; the caller then records nothing.
func (c *core) waitLogRoom(ep *episode) error {
	lw := &ep.logs
	if lw.open < c.maxPendingLogs {
		return nil
	}
	if lw.room == nil {
		lw.room = make(chan struct{}, 1)
	}
	var expire <-chan time.Time
	if c.timeout > 0 {
		t := lw.timer
		switch {
		case lw.waiters > 0: // another call waits on the episode's timer (a rare case)
			t = time.NewTimer(c.timeout)
		case t == nil:
			t = time.NewTimer(c.timeout)
			lw.timer = t
		default:
			t.Reset(c.timeout) // Go 1.23 timers: no stale tick survives Reset
		}
		expire = t.C
		defer t.Stop()
	}
	for lw.open >= c.maxPendingLogs {
		select { // a signal from before this count: no room, it is stale
		case <-lw.room:
		default:
		}
		lw.waiters++
		ep.mu.Unlock()
		var err error
		select {
		case <-lw.room:
		case <-c.stopCh:
			err = ErrStopped
		case <-expire:
			err = fmt.Errorf("%w after %v: episode %q: %d logged observations, the most that may wait, wait for the sampler; this one was not recorded",
				ErrTimeout, c.timeout, ep.id, c.maxPendingLogs)
		}
		ep.mu.Lock()
		lw.waiters--
		if err != nil {
			return err
		}
		if ep.ended.Load() {
			return fmt.Errorf("%w: %q", ErrEpisodeDone, ep.id)
		}
	}
	if lw.waiters > 0 && lw.open+1 < c.maxPendingLogs { // room for another after this one
		select {
		case lw.room <- struct{}{}:
		default:
		}
	}
	return nil
}

// logAnswered counts a LogAction event of ep answered and wakes a LogAction waiting for
// room; ep.mu is held.
func (ep *episode) logAnswered() {
	lw := &ep.logs
	lw.open--
	if lw.waiters > 0 {
		select {
		case lw.room <- struct{}{}:
		default:
		}
	}
}
