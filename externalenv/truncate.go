// Ending episodes from outside the simulator's calls: one by id, the idle ones, all of them.
// The policy server uses these for its idle timeout, a failed request and its shutdown, so
// that it keeps no copy of the episodes' state.

package externalenv

import (
	"math/rand/v2"
	"time"
)

// expiredAgent is the agent id under which a multi-agent episode whose agents have all
// ended is truncated (see TruncateEpisode).
const expiredAgent = "__expired__"

// truncate ends ep (locked, running) truncated: every agent that took part and has not ended
// reports its last observation as its final one. It reports whether ep must be pushed onto
// the ready queue. An episode that has reported nothing and queued nothing is removed
// without a report (silent), since nothing of it could be recorded. The caller unlocks ep,
// then calls forget(ep) and, when silent, drop(ep).
func (c *core) truncate(ep *episode) (push, silent bool) {
	if !ep.started && ep.head == nil && !c.observed(ep) {
		ep.ended.Store(true)
		return false, true
	}
	var ev *event
	if c.multi {
		ev, _ = c.multiEvent(ep, nil, nil, truncated) // no observations: nothing to refuse
		if len(ev.ents) == 0 {                        // every agent has ended: the episode ends with a stand-in
			c.add(ep, ev, ep.agent(expiredAgent, true), c.placeholder(), nil, truncated)
		}
	} else {
		ev = ep.newEvent()
		obs := ep.agents[0].last
		if !ep.agents[0].seen {
			obs = c.placeholder()
		}
		c.add(ep, ev, 0, obs, nil, truncated)
	}
	return c.end(ep, ev, truncated), false
}

// observed reports whether an agent of ep has an observation queued or reported; ep.mu is
// held.
func (c *core) observed(ep *episode) bool {
	for i := range ep.agents {
		if ep.agents[i].seen {
			return true
		}
	}
	return false
}

// placeholder returns an observation of the space, the final one of an episode truncated
// without an agent to end.
func (c *core) placeholder() []float32 {
	return c.obsSpace.Sample(rand.New(rand.NewPCG(0, 0)), make([]float32, c.obsSize))
}

// truncateEpisode is TruncateEpisode (see base).
func (c *core) truncateEpisode(id string) error {
	ep, err := c.lock(id)
	if err != nil {
		return err
	}
	c.finishTruncate(ep)
	return nil
}

// finishTruncate truncates ep, locked, unlocks it and reports whether it ended silently.
func (c *core) finishTruncate(ep *episode) (silent bool) {
	push, silent := c.truncate(ep)
	ep.mu.Unlock()
	c.forget(ep)
	if silent {
		c.drop(ep)
	}
	if push {
		c.ready.push(ep)
	}
	return silent
}

// truncateAll is TruncateAll (see base).
func (c *core) truncateAll() (int, error) {
	if c.stopped.Load() {
		return 0, ErrStopped
	}
	var eps []*episode
	for i := range c.shards {
		c.shards[i].each(func(ep *episode) { eps = append(eps, ep) })
	}
	n := 0
	for _, ep := range eps {
		ep.mu.Lock()
		if ep.ended.Load() {
			ep.mu.Unlock()
			continue
		}
		if !c.finishTruncate(ep) {
			n++
		}
	}
	return n, nil
}

// truncateIdle is TruncateIdle (see base).
func (c *core) truncateIdle(idle time.Duration, now time.Time) int {
	if c.stopped.Load() {
		return 0
	}
	var eps []*episode
	for i := range c.shards {
		c.shards[i].each(func(ep *episode) { eps = append(eps, ep) })
	}
	n := 0
	t := now.UnixNano()
	for _, ep := range eps {
		ep.mu.Lock()
		switch {
		case ep.ended.Load():
		case ep.calls != ep.idleCalls || ep.waiting.Load() || ep.logs.waiters > 0 || ep.head != nil || ep.inFlight != nil:
			ep.idleCalls, ep.idleSince = ep.calls, t // a call since the last look, or one in progress
		case time.Duration(t-ep.idleSince) >= idle:
			c.finishTruncate(ep)
			n++
			continue
		}
		ep.mu.Unlock()
	}
	return n
}

// runningEpisodes is Running (see base).
func (c *core) runningEpisodes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running
}
