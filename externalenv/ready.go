// The ready queue: episodes with a report to make, pushed by the simulator's calls and
// collected by Poll.

package externalenv

import (
	"slices"
	"sync/atomic"
)

// readyQueue holds the episodes with a report to make: many producers (the simulator's calls)
// push, one consumer (Poll) collects them, oldest first. A ring that the consumer reads in
// order (no pointer to chase from one episode to the next), and a stack for what does not fit.
// The consumer can sleep until a number of pushes has been reached (sleepUntil).
//
// An episode is in the queue at most once (episode.queued, under its lock, says so): push
// links it through episode.nextReady when it goes onto the stack.
type readyQueue struct {
	_        [64]byte
	tail     atomic.Uint64 // ring slots claimed so far
	_        [56]byte
	head     atomic.Uint64 // ring slots collected so far
	overflow atomic.Int64  // pushes onto stack so far
	stack    atomic.Pointer[episode]
	_        [40]byte
	ring     []atomic.Pointer[episode] // a power of two
	sleeping atomic.Bool               // the consumer waits on wake
	wakeAt   atomic.Int64              // ... until pushed reaches wakeAt
	_        [48]byte

	wake  chan struct{} // capacity 1
	taken int64         // the consumer's: pushes collected so far
}

// init makes the ring room for at least n episodes (and 64).
func (q *readyQueue) init(n int) {
	r := 64
	for r < n {
		r *= 2
	}
	q.ring = make([]atomic.Pointer[episode], r)
	q.wake = make(chan struct{}, 1)
}

// signal wakes the consumer whatever it waits for.
func (q *readyQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// push puts ep into the ring (or onto the stack when the ring is full) and wakes the
// consumer when it waits for this push.
func (q *readyQueue) push(ep *episode) {
	var p int64
	for {
		t := q.tail.Load()
		if t-q.head.Load() >= uint64(len(q.ring)) {
			for {
				old := q.stack.Load()
				ep.nextReady = old
				if q.stack.CompareAndSwap(old, ep) {
					break
				}
			}
			p = int64(q.tail.Load()) + q.overflow.Add(1)
			break
		}
		if q.tail.CompareAndSwap(t, t+1) {
			q.ring[t&uint64(len(q.ring)-1)].Store(ep)
			p = int64(t+1) + q.overflow.Load()
			break
		}
	}
	if q.sleeping.Load() && p >= q.wakeAt.Load() && q.sleeping.CompareAndSwap(true, false) {
		q.signal()
	}
}

// pushed returns the number of pushes so far (some may not be stored yet).
func (q *readyQueue) pushed() int64 { return int64(q.tail.Load()) + q.overflow.Load() }

// collect appends the ring and the stack to dst, oldest first, and returns it. A ring slot
// claimed but not stored yet, and those after it, wait: collect reports it (blocked), and
// the consumer should yield before it collects again.
func (q *readyQueue) collect(dst []*episode) (_ []*episode, blocked bool) {
	h, t := q.head.Load(), q.tail.Load()
	mask := uint64(len(q.ring) - 1)
	from := h
	for ; h < t; h++ {
		slot := &q.ring[h&mask]
		ep := slot.Load()
		if ep == nil {
			blocked = true
			break
		}
		slot.Store(nil)
		dst = append(dst, ep)
	}
	q.head.Store(h)
	q.taken += int64(h - from)
	if top := q.stack.Swap(nil); top != nil {
		from := len(dst)
		for ep := top; ep != nil; ep = ep.nextReady {
			dst = append(dst, ep)
			q.taken++
		}
		slices.Reverse(dst[from:])
	}
	return dst, blocked
}

// sleepUntil prepares the consumer's sleep until want more pushes than it has taken: it
// reports false, and does not sleep, when they are there already. After true the consumer
// checks whatever else signals wake (and calls awake instead of sleeping when one is set),
// waits on q.wake, then calls awake.
func (q *readyQueue) sleepUntil(want int64) bool {
	// A push that finds the consumer sleeping and the pushes at wakeAt wakes it; one before
	// it set sleeping is seen here.
	q.wakeAt.Store(q.taken + want)
	q.sleeping.Store(true)
	if q.pushed() >= q.taken+want {
		q.sleeping.Store(false)
		return false
	}
	return true
}

// awake ends the consumer's sleep.
func (q *readyQueue) awake() { q.sleeping.Store(false) }
