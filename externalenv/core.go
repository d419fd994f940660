package externalenv

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

var errStopped = env.ErrStopped

// completedMemory is how many completed episode ids are remembered for ErrEpisodeDone.
const completedMemory = 10000

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
	logAct  bool      // a LogAction's, counted in episode.logs until answered
	one     [1]entry  // ents of a single-agent event
	inline  [16]float32
	logged  []float32
	ticket  *Ticket // a Submit's: the answer goes to the ticket's buffer
	tgen    uint32  // ... of that generation of the ticket
	tk      int32   // ... at the episode's index in it
}

// agentState is one agent of an episode. All fields are guarded by episode.mu.
type agentState struct {
	id     env.AgentID
	reward float64 // logged since its last queued observation
	info   env.Info
	done   bool // marked done (LogReturns): its next report is its last
	gone   bool // its last observation is queued: it takes no further part
	seen   bool
	last   []float32 // its last queued observation (multi-agent: the final one of a done agent)
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
	mu       sync.Mutex
	queued   bool // in the ready ring or stack, or on the runner's pending list
	training bool
	started  bool        // the runner's: its first observation was reported
	ended    atomic.Bool // EndEpisode was called (set under mu)
	slot     int32       // the runner's: sub-environment, -1 until its first observation is reported
	head     *event      // queued events, not reported yet
	tail     *event
	inFlight *event // reported, waiting for SendActions
	last     *event // reported by an earlier Poll: recycled when the next one is reported
	free     *event

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
	wdSeq     uint64  // the waited-for event the watchdog saw last
	wdSince   int64   // the watchdog's tick when it saw it first
	logs      logWait // LogAction's back-pressure
	calls     uint64  // simulator calls that found the episode (lock)
	idleCalls uint64  // calls when TruncateIdle last saw a change
	idleSince int64   // ... and when (UnixNano)
}

type obsRef struct {
	id  env.AgentID
	obs []float32
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
	idlePoll           time.Duration
	maxPendingLogs     int32
	maxAgents          int
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

	ready readyQueue // episodes with a report to make

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
	slotIDs   []string   // by sub-environment: the id of the episode that runs or ran last there
	free      []int      // free slots (stack)
	freeLater []int      // slots whose end was reported in the last Poll
	expect    int        // answers SendActions owes
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
	idlePoll           time.Duration
	maxPendingLogs     int
	maxAgents          int
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
	if o.maxEpisodes < 0 || o.maxBatch < 0 || o.maxWait < 0 || o.idlePoll < 0 || o.maxPendingLogs < 0 {
		return nil, fmt.Errorf("externalenv: MaxConcurrentEpisodes %d, MaxBatch %d, MaxWait %v, IdlePoll %v and MaxPendingLogs %d must not be negative",
			o.maxEpisodes, o.maxBatch, o.maxWait, o.idlePoll, o.maxPendingLogs)
	}
	if o.maxAgents < 0 {
		return nil, fmt.Errorf("externalenv: MaxAgents %d must not be negative", o.maxAgents)
	}
	if o.maxAgents == 0 {
		o.maxAgents = math.MaxInt
	}
	if o.maxPendingLogs == 0 {
		o.maxPendingLogs = 1
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
		maxBatch: o.maxBatch, maxWait: o.maxWait, idlePoll: o.idlePoll, multi: o.multi,
		maxPendingLogs: int32(min(o.maxPendingLogs, 1<<30)), maxAgents: o.maxAgents,
		seed:    maphash.MakeSeed(),
		done:    map[string]struct{}{},
		stopCh:  make(chan struct{}),
		slots:   make([]*episode, o.maxEpisodes),
		slotIDs: make([]string, o.maxEpisodes),
		free:    make([]int, 0, o.maxEpisodes),
	}
	n := 1
	for n*episodesPerShard < o.maxEpisodes {
		n *= 2
	}
	c.shards = make([]shard, n)
	c.hints = make([]atomic.Pointer[episode], min(4*n*episodesPerShard, 1<<16))
	c.ready.init(2 * o.maxEpisodes)
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
			c.ready.signal()
		}()
		rerr.Err = run(ctx)
	}()
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
