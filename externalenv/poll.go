// The BaseEnv side that the sampler calls: Poll, SendActions and TryReset.

package externalenv

import (
	"fmt"
	"runtime"
	"time"

	"github.com/onnxrl/sampler/env"
)

// poll is BaseEnv.Poll (see ExternalEnv.Poll).
func (c *core) poll(dst *env.Batch) error {
	c.free = append(c.free, c.freeLater...)
	c.freeLater = c.freeLater[:0]
	c.pending = append(c.pending, c.later...)
	clear(c.later)
	c.later = c.later[:0]
	n := 0
	var deadline <-chan time.Time
	timing := noWait
	defer func() {
		if timing != noWait {
			c.pollTimer.Stop()
		}
	}()
	for {
		if c.stopped.Load() {
			return ErrStopped
		}
		// Load runErr first: what the run loop pushed before it ended is in the ring then.
		rerr := c.runErr.Load()
		var blocked bool
		c.pending, blocked = c.ready.collect(c.pending)
		n = c.drain(dst, n)
		if n >= c.maxBatch || (n > 0 && (c.maxWait <= 0 || rerr != nil)) {
			return nil
		}
		if blocked { // a push is being stored: it comes first
			runtime.Gosched()
			continue
		}
		if rerr != nil { // after the observations it reported before it ended
			return rerr
		}
		want := int64(1)
		switch {
		case n > 0 && timing != batchWait: // MaxWait from the first observation on
			want = int64(c.maxBatch - n)
			deadline, timing = c.startPollTimer(c.maxWait), batchWait
		case n > 0:
			want = int64(c.maxBatch - n)
		case c.idlePoll > 0 && timing == noWait: // IdlePoll: return with nothing
			deadline, timing = c.startPollTimer(c.idlePoll), idleWait
		}
		if !c.ready.sleepUntil(want) {
			continue
		}
		if c.runErr.Load() != nil || c.stopped.Load() { // they signal wake: set before sleeping
			c.ready.awake()
			continue
		}
		select {
		case <-c.ready.wake:
		case <-c.stopCh:
		case <-deadline:
			c.ready.awake()
			c.pending, _ = c.ready.collect(c.pending)
			c.drain(dst, n)
			return nil
		}
		c.ready.awake()
	}
}

// pollWait is what Poll's timer measures.
type pollWait uint8

const (
	noWait    pollWait = iota
	idleWait           // IdlePoll, while nothing is pending
	batchWait          // MaxWait, since the first observation
)

// startPollTimer (re)starts Poll's timer for d and returns its channel.
func (c *core) startPollTimer(d time.Duration) <-chan time.Time {
	if c.pollTimer == nil {
		c.pollTimer = time.NewTimer(d)
	} else {
		c.pollTimer.Reset(d) // Go 1.23 timers: no stale tick survives Reset
	}
	return c.pollTimer.C
}

// drain reports pending events until the batch holds maxBatch observations (n are in
// already) and returns the new count.
func (c *core) drain(dst *env.Batch, n int) int {
	w, full := 0, false
	for _, ep := range c.pending {
		if !full {
			switch c.report(ep, dst, &n) {
			case reported:
				continue
			case batchFull:
				full = true
			}
		}
		c.pending[w] = ep
		w++
	}
	clear(c.pending[w:])
	c.pending = c.pending[:w]
	return n
}

type reportResult uint8

const (
	reported reportResult = iota
	noSlot
	batchFull
)

// report appends the next queued event of ep to dst, if it fits.
func (c *core) report(ep *episode, dst *env.Batch, n *int) reportResult {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ev := ep.head
	if ev == nil { // GetAction took it back
		ep.queued = false
		return reported
	}
	if *n > 0 && *n+len(ev.ents) > c.maxBatch {
		return batchFull
	}
	if ep.slot < 0 {
		if len(c.free) == 0 { // a slot frees up when an end is reported: next Poll
			return noSlot
		}
		ep.slot = int32(c.free[len(c.free)-1])
		c.free = c.free[:len(c.free)-1]
		c.slots[ep.slot] = ep
		c.slotIDs[ep.slot] = ep.id
	}
	ep.head = ev.next
	if ep.head == nil {
		ep.tail = nil
	}
	ev.next = nil
	ep.queued = false
	if ep.last != nil {
		ep.recycle(ep.last)
	}
	ep.last = ev
	first := !ep.started
	ep.started = true
	os, as := c.obsSize, c.actSize
	for i := range ev.ents {
		en := &ev.ents[i]
		o := dst.AddAgent()
		o.Env, o.Agent, o.Obs = int(ep.slot), en.id, ev.obs[i*os:(i+1)*os:(i+1)*os]
		o.Reward, o.Terminated, o.Truncated, o.Info = en.reward, en.done == terminated, en.done == truncated, en.info
		if en.logged >= 0 { // RLlib's contract: with the observation it was taken at
			o.OffPolicyAction = ev.logged[en.logged : int(en.logged)+as : int(en.logged)+as]
		}
	}
	*n += len(ev.ents)
	if first || ev.end != notDone {
		dst.Envs = append(dst.Envs, env.EnvStatus{Env: int(ep.slot), Reset: first, TrainingDisabled: first && !ep.training,
			Terminated: ev.end == terminated, Truncated: ev.end == truncated})
	}
	switch {
	case ev.end != notDone:
		c.slots[ep.slot] = nil
		c.freeLater = append(c.freeLater, int(ep.slot))
		c.drop(ep)
	case ev.open > 0:
		ep.inFlight = ev
		c.expect += ev.open
	case ep.head != nil: // nothing to answer: the next report goes to the next Poll
		ep.queued = true
		c.later = append(c.later, ep)
	}
	return reported
}

// sendActions is BaseEnv.SendActions (see ExternalEnv.SendActions).
func (c *core) sendActions(actions []env.Action) error {
	if c.stopped.Load() {
		return ErrStopped
	}
	var err error
	for i := range actions {
		if err = c.answer(&actions[i]); err != nil {
			break
		}
	}
	if len(c.woken) > 0 {
		c.woken[0].kick() // the others follow (adopt)
		clear(c.woken)
		c.woken = c.woken[:0]
	}
	if err != nil {
		return err
	}
	if c.expect != 0 {
		for slot, ep := range c.slots {
			if ep == nil {
				continue
			}
			ep.mu.Lock()
			ev := ep.inFlight
			var missing env.AgentID
			if ev != nil {
				for k := range ev.ents {
					if ev.ents[k].open {
						missing = ev.ents[k].id
						break
					}
				}
			}
			ep.mu.Unlock()
			if ev != nil {
				return fmt.Errorf("%w: no action for agent %q of sub-environment %d (%d missing)", env.ErrBadActions, missing, slot, c.expect)
			}
		}
	}
	return nil
}

func (c *core) answer(a *env.Action) error {
	var ep *episode
	if a.Env >= 0 && a.Env < len(c.slots) {
		ep = c.slots[a.Env]
	}
	if ep == nil {
		return fmt.Errorf("%w: no observation of agent %q of sub-environment %d waits for an action", env.ErrBadActions, a.Agent, a.Env)
	}
	ep.mu.Lock()
	ev := ep.inFlight
	k := -1
	if ev != nil {
		k = ev.find(a.Agent)
	}
	if k < 0 {
		ep.mu.Unlock()
		return fmt.Errorf("%w: no observation of agent %q of sub-environment %d waits for an action", env.ErrBadActions, a.Agent, a.Env)
	}
	if len(a.Action) != c.actSize {
		ep.mu.Unlock()
		return fmt.Errorf("%w: action %v for agent %q of sub-environment %d has %d values, want %d", env.ErrBadActions, a.Action, a.Agent, a.Env, len(a.Action), c.actSize)
	}
	en := &ev.ents[k]
	en.open = false
	ev.open--
	c.expect--
	if ev.waiter && !ev.ignored {
		if t := ev.ticket; t != nil {
			copy(t.dst[int(ev.tk)*c.actSize:int(ev.tk+1)*c.actSize], a.Action)
		} else {
			copy(ep.answer[int(en.reply)*c.actSize:int(en.reply+1)*c.actSize], a.Action)
		}
	}
	if ev.open > 0 {
		ep.mu.Unlock()
		return nil
	}
	ep.inFlight = nil
	if ev.logAct {
		ep.logAnswered()
	}
	wake := ev.waiter && !ev.ignored
	var t *Ticket
	var gen uint32
	if wake && ev.ticket != nil {
		t, gen, wake = ev.ticket, ev.tgen, false
		t.answered(ep, ev)
	}
	if wake {
		ep.kidState.Store(0) // before answered: passOn sees this round's kids
		ep.answered.Store(ev.seq)
	}
	if ep.head != nil && !ep.queued {
		ep.queued = true
		c.pending = append(c.pending, ep)
	}
	ep.mu.Unlock()
	if t != nil {
		t.done(gen)
	} else if wake {
		if n := len(c.woken); n > 0 {
			c.woken[(n-1)/wakeFanOut].adopt((n-1)%wakeFanOut, ep)
		}
		c.woken = append(c.woken, ep)
	}
	return nil
}

// episodeID is env.EpisodeIDer's EpisodeID (see ExternalEnv.EpisodeID).
func (c *core) episodeID(id env.EnvID) string {
	if id < 0 || id >= len(c.slotIDs) {
		return ""
	}
	return c.slotIDs[id]
}

// tryReset is BaseEnv.TryReset (see ExternalEnv.TryReset).
func (c *core) tryReset(id env.EnvID) (bool, error) {
	if id < 0 || id >= c.maxEpisodes {
		return false, fmt.Errorf("externalenv: TryReset of sub-environment %d, want 0..%d", id, c.maxEpisodes-1)
	}
	return true, nil
}
