// Events, the observations an episode queues for Poll, and the checks of what goes into them.

package externalenv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/onnxrl/sampler/env"
)

func (c *core) checkObs(id string, agent env.AgentID, obs []float32) error {
	if !c.obsSpace.Contains(obs) {
		if c.multi {
			return fmt.Errorf("%w: episode %q, agent %q: %v (want %d values in %s)", ErrBadObservation, id, agent, obs, c.obsSize, c.obsSpace.Type())
		}
		return fmt.Errorf("%w: episode %q: %v (want %d values in %s)", ErrBadObservation, id, obs, c.obsSize, c.obsSpace.Type())
	}
	return nil
}

func (c *core) checkAction(id string, agent env.AgentID, act []float32) error {
	if !c.actSpace.Contains(act) {
		if c.multi {
			return fmt.Errorf("%w: episode %q, agent %q: %v (want %d values in %s)", ErrBadAction, id, agent, act, c.actSize, c.actSpace.Type())
		}
		return fmt.Errorf("%w: episode %q: %v (want %d values in %s)", ErrBadAction, id, act, c.actSize, c.actSpace.Type())
	}
	return nil
}

// appendLines appends src to dst. When it has to grow dst, it allocates whole cache lines
// (multiples of 64 bytes, which the allocator places on line boundaries): the buffers that
// the simulator's goroutines write and the sampler reads then share no line with anything
// else (false sharing between cores cost more than the copying).
func appendLines(dst, src []float32) []float32 {
	n := len(dst) + len(src)
	if n > cap(dst) {
		c := max(n, 2*cap(dst))
		c = (c + 15) &^ 15
		dst = append(make([]float32, 0, c), dst...)
	}
	return append(dst, src...)
}

// answerBuf returns ep.answer with room for n values: its inline storage when they fit.
func (ep *episode) answerBuf(n int) []float32 {
	switch {
	case n <= len(ep.inline):
		return ep.inline[:n]
	case n <= cap(ep.answer):
		return ep.answer[:n]
	}
	return appendLines(nil, make([]float32, n))
}

// agent returns the index of agent id in ep.agents, adding it when add is set (-1 when it
// is not there and add is not set); ep.mu is held.
func (ep *episode) agent(id env.AgentID, add bool) int {
	if ep.index != nil {
		if i, ok := ep.index[id]; ok {
			return i
		}
	} else {
		for i := range ep.agents {
			if ep.agents[i].id == id {
				return i
			}
		}
	}
	if !add {
		return -1
	}
	ep.agents = append(ep.agents, agentState{id: id})
	i := len(ep.agents) - 1
	if ep.index != nil {
		ep.index[id] = i
	} else if len(ep.agents) > 8 {
		ep.index = make(map[env.AgentID]int, 16)
		for k := range ep.agents {
			ep.index[ep.agents[k].id] = k
		}
	}
	return i
}

// newEvent returns an empty event of ep; ep.mu is held.
func (ep *episode) newEvent() *event {
	ev := ep.free
	if ev != nil {
		ep.free = ev.next
		ev.next = nil
	} else {
		ev = &event{}
		ev.ents = ev.one[:0]
		ev.obs = ev.inline[:0]
	}
	ep.seq++
	ev.seq = ep.seq
	return ev
}

// recycle returns ev to ep's free events; ep.mu is held.
func (ep *episode) recycle(ev *event) {
	clear(ev.ents) // drop the infos
	obs, logged, ents := ev.obs[:0], ev.logged[:0], ev.ents[:0]
	*ev = event{}
	ev.obs, ev.logged, ev.ents, ev.next = obs, logged, ents, ep.free
	ep.free = ev
}

// add appends agent i's observation obs (nil: repeat its last one) to ev, with the reward and
// agent's current info (given to LogReturns, kept until replaced) and its own logged action (or nil); ep.mu is held.
func (c *core) add(ep *episode, ev *event, i int, obs, logged []float32, done endKind) {
	ag := &ep.agents[i]
	if obs == nil {
		obs = ag.last
	} else {
		ag.last = appendLines(ag.last[:0], obs) // the final observation of a truncation
	}
	ag.seen = true
	en := entry{id: ag.id, agent: int32(i), reward: ag.reward, info: ag.info, done: done, reply: -1, logged: -1}
	ag.reward = 0 // the info stays until replaced (RLlib's cur_info)
	if done != notDone {
		ag.gone = true
	} else {
		en.reply = int32(ev.open)
		en.open = true
		ev.open++
		if logged != nil {
			en.logged = int32(len(ev.logged))
			ev.logged = appendLines(ev.logged, logged)
		}
	}
	ev.obs = appendLines(ev.obs, obs)
	ev.ents = append(ev.ents, en)
}

// queue appends ev to ep's queued events and reports whether ep must be pushed onto the ready
// stack (after ep.mu is released); ep.mu is held.
func (c *core) queue(ep *episode, ev *event) bool {
	if ep.tail == nil {
		ep.head = ev
	} else {
		ep.tail.next = ev
	}
	ep.tail = ev
	if ep.queued || ep.inFlight != nil {
		return false
	}
	ep.queued = true
	return true
}

// takeBack removes queued event seq, which was not reported: the rewards of its observations
// go to the agents' next ones (their infos are there already: an info stays until replaced). It reports whether it found the event; ep.mu is
// held.
func (ep *episode) takeBack(seq uint64) bool {
	var prev *event
	for q := ep.head; q != nil; prev, q = q, q.next {
		if q.seq != seq {
			continue
		}
		if prev == nil {
			ep.head = q.next
		} else {
			prev.next = q.next
		}
		if ep.tail == q {
			ep.tail = prev
		}
	ents:
		for i := range q.ents {
			en := &q.ents[i]
			for l := q.next; l != nil; l = l.next {
				for k := range l.ents {
					if le := &l.ents[k]; le.agent == en.agent {
						le.reward += en.reward
						continue ents
					}
				}
			}
			ag := &ep.agents[en.agent]
			ag.reward += en.reward
			if en.done != notDone {
				ag.gone = false // it ends with the next report
			}
		}
		ep.recycle(q)
		return true
	}
	return false
}

// end marks ep ended with event ev queued; ep.mu is held. The caller calls forget(ep) once
// ep.mu is released.
func (c *core) end(ep *episode, ev *event, kind endKind) bool {
	ev.end = kind
	ep.ended.Store(true)
	return c.queue(ep, ev)
}

// find returns the index of agent id's entry that waits for an answer, or -1.
func (ev *event) find(id env.AgentID) int {
	if len(ev.ents) == 1 {
		if ev.ents[0].id == id && ev.ents[0].open {
			return 0
		}
		return -1
	}
	k, ok := slices.BinarySearchFunc(ev.ents, id, func(en entry, id env.AgentID) int { return strings.Compare(en.id, id) })
	if !ok || !ev.ents[k].open {
		return -1
	}
	return k
}
