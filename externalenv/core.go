package externalenv

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/google/uuid"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

var errStopped = env.ErrStopped

// completedMemory is how many completed episode ids are remembered for ErrEpisodeDone.
const completedMemory = 10000

// wakeFanOut is how many answered waiters each answered waiter wakes. SendActions wakes the
// first one only: the wake-ups (a few hundred nanoseconds each) spread over the
// simulator's goroutines, on every core, instead of lining up on the sampler's.
const wakeFanOut = 2

// episodesPerShard is about how many episodes share a shard of the id -> episode index.
const episodesPerShard = 16

// endKind says how an observation ends its agent or episode.
type endKind uint8

const (
	notDone endKind = iota
	terminated
	truncated
)

// entry is one agent's observation in an event.
type entry struct {
	id     env.AgentID
	reward float64
	info   env.Info
	agent  int32 // index in episode.agents
	reply  int32 // index of its answer in the episode's answer buffer; -1 when done
	logged int32 // offset of its own logged action (LogAction) in event.logged; -1 if none
	done   endKind
	open   bool
}

// event is one report of the simulator (GetAction, LogAction, EndEpisode): the observations
// of one or more agents, in the order of their ids. Events are owned by their episode and
// reused. Like the other structures that the simulator's goroutines write and the sampler
// reads, an event fills whole cache lines (see appendLines).
type event struct {
	eventData
	_ [64 - unsafe.Sizeof(eventData{})%64]byte // never empty: an empty last field takes room
}

type eventData struct {
	// In the order Poll reads them: header, the entry of a single-agent event, its
	// observation (when it is small).
	next    *event
	seq     uint64
	ents    []entry
	obs     []float32 // entry i's observation at [i*obsSize, (i+1)*obsSize)
	open    int       // in flight: acting entries not answered yet
	end     endKind   // the episode's last report
	waiter  bool      // a GetAction caller waits for the answers
	ignored bool      // the GetAction caller gave up: the answers are dropped
	one     [1]entry  // ents of a single-agent event
	inline  [16]float32
	logged  []float32
	ticket  *Ticket // a Submit's: the answer goes to the ticket's buffer
	tgen    uint32  // ... of that generation of the ticket
	tk      int32   // ... at the episode's index in it
}

// agentState is one agent of an episode. All fields are guarded by episode.mu; the off*
// fields are the runner's (Poll).
type agentState struct {
	id     env.AgentID
	reward float64 // logged since its last queued observation
	info   env.Info
	done   bool // marked done (LogReturns): its next report is its last
	gone   bool // its last observation is queued: it takes no further part
	seen   bool
	last   []float32 // its last queued observation (multi-agent: the final one of a done agent)

	off    [2][]float32 // logged actions, alternating so that a reported one stays valid
	offCur int
	offSet bool // off[offCur] waits for the agent's next reported observation
}

// episode is one running episode. Fields are guarded by mu, except the atomics, the
// runner's (slot, started, nextReady) and the watchdog's (wd*). It fills whole cache lines.
type episode struct {
	episodeData
	_ [64 - unsafe.Sizeof(episodeData{})%64]byte // never empty: an empty last field takes room
}

type episodeData struct {
	// Grouped by cache line (the episode starts on one): what the simulator's calls and the
	// sampler touch for every observation comes first, the answer's line after it.

	// Line 0: the lock and the event queue.
	mu         sync.Mutex
	queued     bool // in the ready ring or stack, or on the runner's pending list
	training   bool
	started    bool        // the runner's: its first observation was reported
	ended      atomic.Bool // EndEpisode was called (set under mu)
	slot       int32       // the runner's: sub-environment, -1 until its first observation is reported
	offPending int32       // agents whose logged action waits for their next reported observation
	head       *event      // queued events, not reported yet
	tail       *event
	inFlight   *event // reported, waiting for SendActions
	last       *event // reported by an earlier Poll: recycled when the next one is reported
	free       *event

	// Line 1: what a call and Poll look up.
	id        string
	seq       uint64
	nextReady *episode
	agents    []agentState
	reply     chan struct{} // capacity 1: wakes the waiting GetAction (answers, Stop, timeout)

	// Line 2: the answer and the wake-up.
	answer   []float32 // the answers, actSize each
	answered atomic.Uint64
	inline   [2]float32 // answer's storage when it fits
	kidState atomic.Uint32
	waiting  atomic.Bool                         // a GetAction waits (ErrEpisodeBusy)
	kids     [wakeFanOut]atomic.Pointer[episode] // waiters it wakes once it is woken with its answers

	waitSeq   atomic.Uint64             // the event it waits for
	ticket    *Ticket                   // the Submit that waits for it (then waitSeq's event is the ticket's)
	ticketGen uint32                    // ... and the ticket's generation
	expired   atomic.Uint64             // the last waited-for event the watchdog gave up on
	index     map[env.AgentID]int       // agents by id, once there are many
	ids       []env.AgentID             // multi-agent: the agents answered, by reply index
	actions   map[env.AgentID][]float32 // multi-agent: GetAction's result, reused
	scratch   []obsRef
	wdSeq     uint64 // the waited-for event the watchdog saw last
	wdSince   int64  // the watchdog's tick when it saw it first
}

type obsRef struct {
	id  env.AgentID
	obs []float32
}

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

// core is the machinery ExternalEnv and ExternalMultiAgentEnv share: episodes, their
// queued observations, the ready stack, sub-environment slots, the run loop and Stop.
//
// Nothing is locked for all episodes on the hot path. The simulator's calls find the episode
// they name without a lock (see find) and lock that episode only; the global lock mu is
// taken to start and end episodes. Episodes with a report to make are pushed into a
// lock-free ring that Poll reads in order; Poll and SendActions lock each episode they touch
// in turn. A GetAction sleeps on its episode's own channel; SendActions wakes one answered
// waiter, which wakes the next ones (see wakeFanOut).
type core struct {
	obsSpace, actSpace spaces.Space
	obsSize, actSize   int
	maxEpisodes        int
	timeout            time.Duration
	maxBatch           int
	maxWait            time.Duration
	multi              bool

	seed   maphash.Seed
	shards []shard                   // a power of two
	hints  []atomic.Pointer[episode] // see find; a power of two

	mu       sync.Mutex // running, done, doneRing, doneNext, started, cancel
	running  int
	done     map[string]struct{}
	doneRing []string
	doneNext int
	started  bool
	cancel   context.CancelFunc

	// Episodes with a report to make: a ring that Poll reads in order (no pointer to chase
	// from one episode to the next), and a stack for what does not fit.
	_         [64]byte
	tail      atomic.Uint64 // ring slots claimed so far
	_         [56]byte
	head      atomic.Uint64 // ring slots Poll took so far
	overflow  atomic.Int64  // pushes onto readyHead so far
	readyHead atomic.Pointer[episode]
	_         [40]byte
	ring      []atomic.Pointer[episode] // a power of two
	sleeping  atomic.Bool               // Poll waits on wake
	wakeAt    atomic.Int64              // ... until pushed reaches wakeAt
	_         [48]byte

	wake      chan struct{} // capacity 1
	stopped   atomic.Bool
	stopCh    chan struct{}
	stopOnce  sync.Once
	runErr    atomic.Pointer[RunLoopError]
	runDone   atomic.Pointer[doneHolder] // the run loop's context's Done channel
	watchOnce sync.Once

	// The runner's (Poll, SendActions, TryReset).
	pending   []*episode // taken from the stack, not reported yet, oldest first
	later     []*episode // to report from the next Poll on
	slots     []*episode // by sub-environment
	free      []int      // free slots (stack)
	freeLater []int      // slots whose end was reported in the last Poll
	expect    int        // answers SendActions owes
	taken     int64      // pushes collected so far
	woken     []*episode // waiters answered by this SendActions, a tree (see wakeFanOut)
	pollTimer *time.Timer
}

type doneHolder struct{ done <-chan struct{} }

type coreOptions struct {
	obsSpace, actSpace spaces.Space
	maxEpisodes        int
	timeout            time.Duration
	maxBatch           int
	maxWait            time.Duration
	multi              bool
	defaultBatch       func(maxEpisodes int) int
}

func newCore(o coreOptions) (*core, error) {
	if o.obsSpace == nil || o.actSpace == nil {
		return nil, errors.New("externalenv: ObservationSpace and ActionSpace are required")
	}
	if err := o.obsSpace.Validate(); err != nil {
		return nil, fmt.Errorf("externalenv: observation space: %w", err)
	}
	if err := o.actSpace.Validate(); err != nil {
		return nil, fmt.Errorf("externalenv: action space: %w", err)
	}
	if o.maxEpisodes < 0 || o.maxBatch < 0 || o.maxWait < 0 {
		return nil, fmt.Errorf("externalenv: MaxConcurrentEpisodes %d, MaxBatch %d and MaxWait %v must not be negative",
			o.maxEpisodes, o.maxBatch, o.maxWait)
	}
	if o.maxEpisodes == 0 {
		o.maxEpisodes = 100
	}
	if o.maxBatch == 0 {
		o.maxBatch = o.defaultBatch(o.maxEpisodes)
	}
	if o.timeout == 0 {
		o.timeout = 60 * time.Second
	}
	c := &core{
		obsSpace: o.obsSpace, actSpace: o.actSpace,
		obsSize: o.obsSpace.Size(), actSize: o.actSpace.Size(),
		maxEpisodes: o.maxEpisodes, timeout: o.timeout,
		maxBatch: o.maxBatch, maxWait: o.maxWait, multi: o.multi,
		seed: maphash.MakeSeed(),
		done: map[string]struct{}{},
		wake: make(chan struct{}, 1), stopCh: make(chan struct{}),
		slots: make([]*episode, o.maxEpisodes),
		free:  make([]int, 0, o.maxEpisodes),
	}
	n := 1
	for n*episodesPerShard < o.maxEpisodes {
		n *= 2
	}
	c.shards = make([]shard, n)
	c.hints = make([]atomic.Pointer[episode], min(4*n*episodesPerShard, 1<<16))
	r := 64
	for r < 2*o.maxEpisodes {
		r *= 2
	}
	c.ring = make([]atomic.Pointer[episode], r)
	for i := o.maxEpisodes - 1; i >= 0; i-- {
		c.free = append(c.free, i) // slot 0 is handed out first
	}
	return c, nil
}

// start runs the run loop on its own goroutine (see ExternalEnv.Start).
func (c *core) start(ctx context.Context, run func(ctx context.Context) error) {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		panic("externalenv: Start called twice")
	}
	c.started = true
	ctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	if c.stopped.Load() {
		cancel()
	}
	c.runDone.Store(&doneHolder{ctx.Done()})
	// Waiters whose context is done with this one (it, or a context.WithValue of it) do not
	// watch its Done channel (every simulator goroutine would share its lock); they are
	// woken when it is done.
	context.AfterFunc(ctx, c.kickAll)
	c.mu.Unlock()
	go func() {
		rerr := &RunLoopError{}
		defer func() {
			if p := recover(); p != nil {
				rerr.Panicked = true
				rerr.Err = fmt.Errorf("%v\n%s", p, debug.Stack())
			}
			c.runErr.Store(rerr)
			c.signal()
		}()
		rerr.Err = run(ctx)
	}()
}

// signal wakes Poll whatever it waits for.
func (c *core) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
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
		return "", fmt.Errorf("%w: %d running (MaxConcurrentEpisodes)", ErrTooManyEpisodes, c.running)
	}
	ep := &episode{}
	ep.id, ep.training, ep.slot, ep.reply = id, training, -1, make(chan struct{}, 1)
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
// info logged since its last observation and its own logged action (or nil); ep.mu is held.
func (c *core) add(ep *episode, ev *event, i int, obs, logged []float32, done endKind) {
	ag := &ep.agents[i]
	if obs == nil {
		obs = ag.last
	} else if c.multi {
		ag.last = appendLines(ag.last[:0], obs)
	}
	ag.seen = true
	en := entry{id: ag.id, agent: int32(i), reward: ag.reward, info: ag.info, done: done, reply: -1, logged: -1}
	ag.reward, ag.info = 0, nil
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

// takeBack removes queued event seq, which was not reported: the rewards and infos of its
// observations go to the agents' next ones. It reports whether it found the event; ep.mu is
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
						if le.info == nil {
							le.info = en.info
						}
						continue ents
					}
				}
			}
			ag := &ep.agents[en.agent]
			ag.reward += en.reward
			if ag.info == nil {
				ag.info = en.info
			}
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

// poll is BaseEnv.Poll (see ExternalEnv.Poll).
func (c *core) poll(dst *env.Batch) error {
	c.free = append(c.free, c.freeLater...)
	c.freeLater = c.freeLater[:0]
	c.pending = append(c.pending, c.later...)
	clear(c.later)
	c.later = c.later[:0]
	n := 0
	var deadline <-chan time.Time
	for {
		if c.stopped.Load() {
			return ErrStopped
		}
		// Load runErr first: what the run loop pushed before it ended is in the ring then.
		rerr := c.runErr.Load()
		blocked := c.collect()
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
		if n > 0 {
			want = int64(c.maxBatch - n)
			if deadline == nil {
				if c.pollTimer == nil {
					c.pollTimer = time.NewTimer(c.maxWait)
				} else {
					c.pollTimer.Reset(c.maxWait)
				}
				defer c.pollTimer.Stop()
				deadline = c.pollTimer.C
			}
		}
		// A push that finds Poll sleeping and the pushes at wakeAt wakes it; one before it
		// set sleeping is seen here.
		c.wakeAt.Store(c.taken + want)
		c.sleeping.Store(true)
		if c.pushed() >= c.taken+want || c.runErr.Load() != nil || c.stopped.Load() {
			c.sleeping.Store(false)
			continue
		}
		select {
		case <-c.wake:
		case <-c.stopCh:
		case <-deadline:
			c.sleeping.Store(false)
			c.collect()
			c.drain(dst, n)
			return nil
		}
		c.sleeping.Store(false)
	}
}

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
		ag := &ep.agents[en.agent]
		o := dst.AddAgent()
		o.Env, o.Agent, o.Obs = int(ep.slot), en.id, ev.obs[i*os:(i+1)*os:(i+1)*os]
		o.Reward, o.Terminated, o.Truncated, o.Info = en.reward, en.done == terminated, en.done == truncated, en.info
		if ep.offPending > 0 && ag.offSet {
			o.OffPolicyAction = ag.off[ag.offCur]
			ag.offSet = false
			ep.offPending--
		}
		if en.logged >= 0 {
			ag.offCur ^= 1
			ag.off[ag.offCur] = appendLines(ag.off[ag.offCur][:0], ev.logged[en.logged:int(en.logged)+as])
			ag.offSet = true
			ep.offPending++
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
		sh := c.shard(ep.id)
		sh.mu.Lock()
		if sh.get(ep.id) == ep {
			sh.set(ep.id, nil)
		}
		sh.mu.Unlock()
		c.unhint(ep)
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

// tryReset is BaseEnv.TryReset (see ExternalEnv.TryReset).
func (c *core) tryReset(id env.EnvID) (bool, error) {
	if id < 0 || id >= c.maxEpisodes {
		return false, fmt.Errorf("externalenv: TryReset of sub-environment %d, want 0..%d", id, c.maxEpisodes-1)
	}
	return true, nil
}

// stop is Stop (see ExternalEnv.Stop).
func (c *core) stop() error {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopped.Store(true)
		cancel := c.cancel
		c.mu.Unlock()
		close(c.stopCh)
		if cancel != nil {
			cancel()
		}
		c.kickAll()
	})
	return nil
}
