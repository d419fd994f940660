// The id -> episode index: shards of immutable maps read without a lock, and a hint table
// keyed by the address of an id string that the index handed out.

package externalenv

import (
	"fmt"
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/uuid"
	"github.com/onnxrl/sampler/env"
)

// shard is a part of the id -> episode index. Lookups read an immutable map without a lock
// (nothing is written on a lookup, so cores do not pass its cache lines around); starting
// and ending an episode replace the map with a changed copy.
type shard struct {
	mu sync.Mutex // writers
	m  atomic.Pointer[map[string]*episode]
	_  [48]byte // a cache line each
}

func (sh *shard) get(id string) *episode {
	if m := sh.m.Load(); m != nil {
		return (*m)[id]
	}
	return nil
}

// set adds (ep != nil) or removes (ep == nil) id; sh.mu is held.
func (sh *shard) set(id string, ep *episode) {
	var m map[string]*episode
	if old := sh.m.Load(); old != nil {
		m = maps.Clone(*old)
	}
	if ep != nil {
		if m == nil {
			m = map[string]*episode{}
		}
		m[id] = ep
	} else {
		delete(m, id)
	}
	sh.m.Store(&m)
}

// each calls f for every episode of the shard.
func (sh *shard) each(f func(*episode)) {
	if m := sh.m.Load(); m != nil {
		for _, ep := range *m {
			f(ep)
		}
	}
}

func (c *core) shard(id string) *shard {
	return &c.shards[maphash.String(c.seed, id)&uint64(len(c.shards)-1)]
}

// lock finds running episode id and returns it locked.
func (c *core) lock(id string) (*episode, error) {
	if c.stopped.Load() {
		return nil, ErrStopped
	}
	if ep := c.find(id); ep != nil {
		ep.mu.Lock()
		if !ep.ended.Load() && ep.id == id {
			ep.calls++
			return ep, nil
		}
		ep.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrEpisodeDone, id)
	}
	c.mu.Lock()
	_, done := c.done[id]
	c.mu.Unlock()
	if done {
		return nil, fmt.Errorf("%w: %q", ErrEpisodeDone, id)
	}
	return nil, fmt.Errorf("%w: %q", ErrEpisodeNotFound, id)
}

// find returns the episode with id from the index (running, or ended with its end not
// reported yet), or nil.
//
// Callers pass back the string StartEpisode returned (or gave it), so most look-ups hit the
// hint table, indexed by the address of the id's bytes: a hit costs no hashing and no string
// compare (same address and length: the same bytes, which the episode keeps alive). A hint
// to an ended episode is not trusted: its id may run again once forgotten.
func (c *core) find(id string) *episode {
	if len(id) == 0 {
		return nil
	}
	p := unsafe.StringData(id)
	h := c.hint(p)
	if ep := h.Load(); ep != nil && unsafe.StringData(ep.id) == p && len(ep.id) == len(id) && !ep.ended.Load() {
		return ep
	}
	ep := c.shard(id).get(id)
	if ep != nil && unsafe.StringData(ep.id) == p {
		h.Store(ep) // the episode's own string: unhint finds it when the episode is over
	}
	return ep
}

// hint returns the hint table's entry for the id whose bytes are at p.
func (c *core) hint(p *byte) *atomic.Pointer[episode] {
	return &c.hints[(uintptr(unsafe.Pointer(p))>>4)&uintptr(len(c.hints)-1)]
}

// unhint drops ep's hint, so that the table keeps no episode that is over.
func (c *core) unhint(ep *episode) {
	if len(ep.id) > 0 {
		c.hint(unsafe.StringData(ep.id)).CompareAndSwap(ep, nil)
	}
}

// startEpisode registers a new episode (see ExternalEnv.StartEpisode).
func (c *core) startEpisode(id string, training bool) (string, error) {
	if id == "" {
		id = uuid.NewString()
	}
	if c.stopped.Load() {
		return "", ErrStopped
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.done[id]; ok {
		return "", fmt.Errorf("%w: %q", ErrEpisodeDone, id)
	}
	sh := c.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if old := sh.get(id); old != nil {
		if old.ended.Load() { // its end is not reported yet
			return "", fmt.Errorf("%w: %q", ErrEpisodeDone, id)
		}
		return "", fmt.Errorf("%w: %q", ErrEpisodeExists, id)
	}
	if c.running >= c.maxEpisodes {
		return "", fmt.Errorf("%w: %d running, the most allowed at once", ErrTooManyEpisodes, c.running)
	}
	ep := &episode{}
	ep.id, ep.training, ep.slot, ep.reply = id, training, -1, make(chan struct{}, 1)
	ep.idleSince = time.Now().UnixNano()
	if !c.multi {
		ep.agents = []agentState{{id: env.DefaultAgentID}}
		ep.answer = ep.answerBuf(c.actSize)
	}
	sh.set(id, ep)
	c.running++
	return id, nil
}

// forget completes episode ep (EndEpisode's second step): its id is remembered as done.
// The episode stays in the index (found as ended) until its end is reported, so that Stop
// and the watchdog still see a GetAction that waits on it.
func (c *core) forget(ep *episode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
	if len(c.doneRing) < completedMemory {
		c.doneRing = append(c.doneRing, ep.id)
	} else {
		delete(c.done, c.doneRing[c.doneNext])
		c.doneRing[c.doneNext] = ep.id
		c.doneNext = (c.doneNext + 1) % completedMemory
	}
	c.done[ep.id] = struct{}{}
}

// drop removes an ended episode from the index (unless a new one has taken its id).
func (c *core) drop(ep *episode) {
	sh := c.shard(ep.id)
	sh.mu.Lock()
	if sh.get(ep.id) == ep {
		sh.set(ep.id, nil)
	}
	sh.mu.Unlock()
	c.unhint(ep)
}
