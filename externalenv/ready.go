// The ready queue: episodes with a report to make, pushed by the simulator's calls and
// collected by Poll.

package externalenv

import "slices"

// signal wakes Poll whatever it waits for.
func (c *core) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// push puts ep into the ready ring (or onto the ready stack when the ring is full) and wakes
// Poll when it waits for this push.
func (c *core) push(ep *episode) {
	var p int64
	for {
		t := c.tail.Load()
		if t-c.head.Load() >= uint64(len(c.ring)) {
			for {
				old := c.readyHead.Load()
				ep.nextReady = old
				if c.readyHead.CompareAndSwap(old, ep) {
					break
				}
			}
			p = int64(c.tail.Load()) + c.overflow.Add(1)
			break
		}
		if c.tail.CompareAndSwap(t, t+1) {
			c.ring[t&uint64(len(c.ring)-1)].Store(ep)
			p = int64(t+1) + c.overflow.Load()
			break
		}
	}
	if c.sleeping.Load() && p >= c.wakeAt.Load() && c.sleeping.CompareAndSwap(true, false) {
		c.signal()
	}
}

// pushed returns the number of pushes so far (some may not be stored yet).
func (c *core) pushed() int64 { return int64(c.tail.Load()) + c.overflow.Load() }

// collect moves the ready ring and stack to the end of the pending list, oldest first. A
// slot claimed but not stored yet, and those after it, wait: collect reports it.
func (c *core) collect() (blocked bool) {
	h, t := c.head.Load(), c.tail.Load()
	mask := uint64(len(c.ring) - 1)
	from := h
	for ; h < t; h++ {
		slot := &c.ring[h&mask]
		ep := slot.Load()
		if ep == nil {
			blocked = true
			break
		}
		slot.Store(nil)
		c.pending = append(c.pending, ep)
	}
	c.head.Store(h)
	c.taken += int64(h - from)
	if top := c.readyHead.Swap(nil); top != nil {
		from := len(c.pending)
		for ep := top; ep != nil; ep = ep.nextReady {
			c.pending = append(c.pending, ep)
			c.taken++
		}
		slices.Reverse(c.pending[from:])
	}
	return blocked
}
