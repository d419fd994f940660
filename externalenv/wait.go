// Waiting for answers: GetAction's wait, giving up, the wake-up tree and the timeout watchdog.

package externalenv

import (
	"context"
	"fmt"
	"time"
)

// wakeFanOut is how many answered waiters each answered waiter wakes. SendActions wakes the
// first one only: the wake-ups (a few hundred nanoseconds each) spread over the
// simulator's goroutines, on every core, instead of lining up on the sampler's.
const wakeFanOut = 2

// wait blocks until the answers to event seq of ep are in, or gives up (see GetAction). The
// caller set ep.waiting; wait clears it when it gives up, the caller once it has taken the
// answers.
//
// The wait selects on the episode's own channel only (and on ctx's Done channel when it is
// not the run loop's context's): answers, Stop, the run loop's context and the timeout
// watchdog all wake it there, and it finds out why from the atomics. A wake-up left over from
// an earlier wait is ignored.
func (c *core) wait(ctx context.Context, ep *episode, seq uint64) error {
	done := ctx.Done()
	if h := c.runDone.Load(); done != nil && h != nil && h.done == done {
		done = nil
	}
	ep.waitSeq.Store(seq)
	if c.timeout > 0 {
		c.watchOnce.Do(func() { go c.watchdog() })
	}
	for {
		// Look before blocking too: Stop, a done context or the watchdog may have looked at
		// ep before this wait set ep.waiting, and then they do not wake it.
		if ep.answered.Load() == seq {
			ep.passOn()
			return nil // the caller takes the answers, then clears ep.waiting
		}
		var err error
		switch {
		case c.stopped.Load():
			err = ErrStopped
		case ctx.Err() != nil:
			err = ctx.Err()
			if c.stopped.Load() { // Stop cancels the run loop's context after it set stopped
				err = ErrStopped
			}
		case ep.expired.Load() == seq:
			err = fmt.Errorf("%w after %v: episode %q", ErrTimeout, c.timeout, ep.id)
		}
		if err == nil {
			if done == nil {
				<-ep.reply
			} else {
				select {
				case <-ep.reply:
				case <-done:
				}
			}
			continue
		}
		if !c.giveUp(ep, seq) { // answered meanwhile: take the answers after all
			return nil
		}
		return err
	}
}

// giveUp withdraws event seq of ep, whose caller gives up waiting for it, and clears
// ep.waiting. It reports false, leaving ep.waiting set, when the answers came in meanwhile:
// the caller then takes them as after a wait.
func (c *core) giveUp(ep *episode, seq uint64) (withdrawn bool) {
	ep.mu.Lock()
	switch {
	case ep.answered.Load() == seq:
		ep.mu.Unlock()
		ep.passOn()
		return false
	case ep.inFlight != nil && ep.inFlight.seq == seq:
		ep.inFlight.ignored = true
	default:
		ep.takeBack(seq)
	}
	ep.mu.Unlock()
	ep.waiting.Store(false)
	return true
}

// kick wakes ep's waiting GetAction, if any, to look at why.
func (ep *episode) kick() {
	select {
	case ep.reply <- struct{}{}:
	default:
	}
}

// kickAll wakes every waiting GetAction (Stop, the run loop's context done).
func (c *core) kickAll() {
	for i := range c.shards {
		c.shards[i].each(func(ep *episode) {
			if ep.waiting.Load() && !c.endWait(ep, func() error { return ErrStopped }) {
				ep.kick()
			}
		})
	}
}

// watchdog times out the GetAction calls that wait longer than c.timeout: it looks at every
// episode once per tick (a tenth of the timeout, between 1ms and 1s), so a call gives up
// between one and two ticks late. It runs until Stop.
func (c *core) watchdog() {
	tick := min(max(c.timeout/10, time.Millisecond), time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	var now int64
	for {
		select {
		case <-t.C:
		case <-c.stopCh:
			return
		}
		now++
		for i := range c.shards {
			c.shards[i].each(func(ep *episode) {
				if !ep.waiting.Load() {
					ep.wdSeq = 0
					return
				}
				if s := ep.waitSeq.Load(); s != ep.wdSeq {
					ep.wdSeq, ep.wdSince = s, now
				} else if time.Duration(now-ep.wdSince)*tick >= c.timeout {
					ep.expired.Store(s)
					if !c.endWait(ep, func() error { return fmt.Errorf("%w after %v: episode %q", ErrTimeout, c.timeout, ep.id) }) {
						ep.kick()
					}
				}
			})
		}
	}
}

// kidsTaken is the bit of episode.kidState that passOn sets.
const kidsTaken = 1 << 31

// adopt makes p wake kid (its i-th) once p is woken, or wakes kid now when p has taken its
// kids already. Only the sampler adopts.
func (p *episode) adopt(i int, kid *episode) {
	p.kids[i].Store(kid)
	for {
		st := p.kidState.Load()
		if st&kidsTaken != 0 {
			kid.kick()
			return
		}
		if p.kidState.CompareAndSwap(st, st+1) {
			return
		}
	}
}

// passOn wakes the waiters ep adopted (its answers are in and its GetAction returns); later
// ones the sampler wakes itself.
func (ep *episode) passOn() {
	n := ep.kidState.Or(kidsTaken) &^ kidsTaken
	for i := range n {
		ep.kids[i].Load().kick()
	}
}
