package externalenv

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// A Ticket is one caller's wait for the actions of several episodes (Submit, and GetActions
// over it). The sampler writes each episode's action straight into the caller's buffer, and
// the ticket ends exactly once, by whichever comes first: its last answer (the sampler), a
// timeout (the watchdog), Stop, or the caller giving up (Cancel). The one that ends it calls
// the Waker; from then on ExternalEnv does not touch the ticket, and the caller may read
// Result and Submit it again.
//
// The zero Ticket is ready to use. A ticket is reused rather than made per call, so the
// state carries a generation: an end meant for an earlier use of the ticket finds another
// generation and does nothing.
type Ticket struct {
	c     *core
	w     Waker
	dst   []float32
	mu    sync.Mutex // Submit's queueing and end's withdrawing
	count int        // the episodes queued: eps[:count]
	eps   []*episode // sized before the first is queued: the sampler reads got meanwhile
	seqs  []uint64
	got   []bool // got[k]: eps[k]'s action is in dst; guarded by eps[k].mu
	// state is the generation (the high 32 bits), the episodes not answered plus one while
	// Submit still queues (in units of stateOne), and the ended bit: one word, so that an
	// answer meant for an earlier generation cannot count against this one.
	state atomic.Uint64

	failed error // why Submit stopped before the end of the ids
	endErr error // why the ticket ended before every answer came
	n      int   // the leading episodes whose actions are in dst
}

// A Waker is told that a Submit's ticket ended. Wake runs once per Submit, on the goroutine
// that ended the ticket (the sampler's, the watchdog's, Stop's, Cancel's caller, or
// Submit's own when nothing was queued), and must not block.
type Waker interface{ Wake() }

const (
	ended    = 1 // the state bit of an ended ticket
	stateOne = 2 // one episode not answered
)

// genOf returns the generation of state s.
func genOf(s uint64) uint32 { return uint32(s >> 32) }

// Submit reports obs for episodes ids, as GetActions does, and returns without waiting: the
// sampler writes episode i's action into dst[i*actSize:(i+1)*actSize], and w.Wake is called
// once the ticket has ended (possibly before Submit returns). Then Result tells how many
// actions came and why not all. t must not be in use by another Submit that has not ended.
func (e *ExternalEnv) Submit(t *Ticket, ids []string, obs, dst []float32, w Waker) {
	e.c.submit(t, ids, obs, dst, w)
}

// Result returns the number of leading episodes whose actions are in dst, and the error of
// the call: the episode at which Submit stopped (the earlier ones were waited for), or why
// the wait ended before the n-th answer (a timeout, Stop, Cancel). Call it after Wake.
func (t *Ticket) Result() (int, error) {
	if t.n < t.count {
		return t.n, errors.Join(t.failed, t.endErr)
	}
	return t.n, t.failed
}

// Cancel gives up the wait of the ticket's current Submit with err, unless it has ended.
// The episodes not answered yet are withdrawn as when GetAction gives up.
func (t *Ticket) Cancel(err error) { t.end(genOf(t.state.Load()), err) }

func (c *core) submit(t *Ticket, ids []string, obs, dst []float32, w Waker) {
	g := genOf(t.state.Load()) + 1
	t.mu.Lock()
	t.c, t.w, t.dst = c, w, dst
	t.count, t.failed, t.endErr, t.n = 0, nil, nil, 0
	if cap(t.eps) < len(ids) {
		t.eps, t.seqs, t.got = make([]*episode, len(ids)), make([]uint64, len(ids)), make([]bool, len(ids))
	}
	t.eps, t.seqs, t.got = t.eps[:len(ids)], t.seqs[:len(ids)], t.got[:len(ids)]
	clear(t.got)
	t.state.Store(uint64(g)<<32 | stateOne)
	switch {
	case len(obs) != len(ids)*c.obsSize:
		t.failed = fmt.Errorf("%w: %d observation values for %d episodes of %d", ErrBadObservation, len(obs), len(ids), c.obsSize)
	case len(dst) < len(ids)*c.actSize:
		t.failed = fmt.Errorf("externalenv: room for %d action values, %d episodes need %d", len(dst), len(ids), len(ids)*c.actSize)
	default:
		for i, id := range ids {
			if err := c.checkObs(id, "", obs[i*c.obsSize:(i+1)*c.obsSize]); err != nil {
				t.failed = err
				break
			}
		}
	}
	if t.failed == nil {
		if c.timeout > 0 {
			c.watchOnce.Do(func() { go c.watchdog() })
		}
		for i, id := range ids {
			if err := c.submitOne(t, g, id, obs[i*c.obsSize:(i+1)*c.obsSize]); err != nil {
				t.failed = fmt.Errorf("episode %d of %d: %w", i, len(ids), err)
				break
			}
		}
	}
	clear(t.eps[t.count:])
	t.mu.Unlock()
	if c.stopped.Load() { // Stop may have looked at the episodes before they were queued
		t.end(g, ErrStopped)
	}
	t.done(g) // Submit's own count

}

// submitOne queues obs of episode id for ticket t.
func (c *core) submitOne(t *Ticket, gen uint32, id string, obs []float32) error {
	ep, err := c.lock(id)
	if err != nil {
		return err
	}
	if !ep.waiting.CompareAndSwap(false, true) {
		ep.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrEpisodeBusy, id)
	}
	ev := ep.newEvent()
	c.add(ep, ev, 0, obs, nil, notDone)
	k := t.count
	ev.waiter, ev.ticket, ev.tk, ev.tgen = true, t, int32(k), gen
	ep.ticket, ep.ticketGen = t, gen
	ep.waitSeq.Store(ev.seq)
	t.eps[k], t.seqs[k] = ep, ev.seq
	t.count++
	t.state.Add(stateOne)
	push := c.queue(ep, ev)
	ep.mu.Unlock()
	if push {
		c.ready.push(ep)
	}
	return nil
}

// answered records that the action of ticket event ev of ep is in the caller's buffer; ep.mu
// is held. The caller calls t.done once ep.mu is released.
func (t *Ticket) answered(ep *episode, ev *event) {
	t.got[ev.tk] = true
	ep.ticket = nil // ep.waiting stays set until the ticket ends: an id given twice is busy
}

// done counts one answer of generation gen (or Submit's own count); the last ends the ticket.
func (t *Ticket) done(gen uint32) {
	for {
		st := t.state.Load()
		if genOf(st) != gen || st&ended != 0 {
			return
		}
		next := st - stateOne
		last := uint32(next)>>1 == 0
		if last {
			next |= ended
		}
		if t.state.CompareAndSwap(st, next) {
			if last {
				t.finish(nil)
			}
			return
		}
	}
}

// end ends generation gen of the ticket with err (nil: every answer is in), unless it has
// ended already.
func (t *Ticket) end(gen uint32, err error) {
	for {
		st := t.state.Load()
		if genOf(st) != gen || st&ended != 0 {
			return
		}
		if t.state.CompareAndSwap(st, st|ended) {
			t.finish(err)
			return
		}
	}
}

// finish is the end of a ticket: the episodes not answered are withdrawn (err != nil), and
// the waker is called.
func (t *Ticket) finish(err error) {
	if err == nil { // the last answer: Submit has queued everything
		for _, ep := range t.eps[:t.count] {
			ep.waiting.Store(false)
		}
		t.n, t.endErr = t.count, nil
		t.w.Wake()
		return
	}
	t.mu.Lock() // after Submit's queueing
	n := -1
	for k, ep := range t.eps[:t.count] {
		ep.mu.Lock()
		if !t.got[k] {
			if n < 0 {
				n = k
			}
			if ep.ticket == t {
				ep.ticket = nil
			}
			if ev := ep.inFlight; ev != nil && ev.seq == t.seqs[k] {
				ev.ignored = true
			} else {
				ep.takeBack(t.seqs[k])
			}
		}
		ep.mu.Unlock()
		ep.waiting.Store(false)
	}
	if n < 0 { // every answer came in meanwhile
		n, err = t.count, nil
	}
	t.n, t.endErr = n, err
	t.mu.Unlock()
	t.w.Wake()
}

// endWait ends the wait on ep, whose caller waits with a ticket, with err, and reports
// whether it did; false: ep's caller waits in GetAction (or nobody waits).
func (c *core) endWait(ep *episode, err func() error) bool {
	ep.mu.Lock()
	t, gen := ep.ticket, ep.ticketGen
	ep.mu.Unlock()
	if t == nil {
		return false
	}
	t.end(gen, err())
	return true
}

// chanWaker wakes a GetActions caller.
type chanWaker chan struct{}

func (w chanWaker) Wake() { w <- struct{}{} } // one Wake per Submit: the buffer has room
