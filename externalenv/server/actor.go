package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// Explore chooses between sampling and the mode for one /v1/act request.
type Explore int8

// Explore values: the actor's default, or as the request says.
const (
	ExploreDefault Explore = iota
	ExploreOn
	ExploreOff
)

// Actor answers /v1/act: stateless batched inference, without episodes or RNN state. It must
// be safe for concurrent use.
type Actor interface {
	// Act appends to dst the actions (raw layout of the action space) for the n observations
	// in obs (n rows of the observation space's raw layout, each checked with Contains) and
	// returns dst. It gives up with ctx's error when ctx ends while it waits.
	Act(ctx context.Context, dst, obs []float32, n int, explore Explore) ([]float32, error)
}

// PolicyOptions configures NewPolicyActor.
type PolicyOptions struct {
	// Policy is the model with its resolved spec; it must have no RNN state.
	Policy *models.Policy
	// ObservationSpace and ActionSpace are the environment's spaces; nil means the spec's.
	ObservationSpace, ActionSpace spaces.Space
	// Action configures the action connectors; Action.Explore is the default of requests
	// that do not say.
	Action connectors.ActionConfig
	// Session configures each ONNX Runtime session; Capacity 0 means 1024 (larger requests
	// run in chunks). IntraOpThreads 0 means 1.
	Session inference.Options
	// Workers is the number of sessions, and so of requests computed at once; 0 means
	// GOMAXPROCS.
	Workers int
	// Seed seeds worker i's random source with (Seed, i).
	Seed uint64
}

// PolicyActor is an Actor over an ONNX policy: a pool of sessions (one per worker, each with
// its own connectors and random source), each request running on one of them in chunks of
// its capacity.
type PolicyActor struct {
	free    chan *actWorker
	workers []*actWorker
	obsW    int
	actW    int
	inW     int
	copyObs bool // the observation row is the raw observation (a Box): copy whole chunks
	explore bool

	closeOnce sync.Once
}

type actWorker struct {
	sess   *inference.Session
	obsT   *inference.Tensor
	valueT *inference.Tensor // nil without a value output
	// greedy leaves out the log-probabilities that greedyLogp computes.
	greedy, greedyLogp, explore *connectors.Connectors
	rng                         *rand.Rand
}

// NewPolicyActor makes opts.Workers sessions of the policy.
func NewPolicyActor(opts PolicyOptions) (_ *PolicyActor, err error) {
	p := opts.Policy
	if p == nil {
		return nil, errors.New("server: PolicyOptions.Policy is nil")
	}
	if len(p.Spec.State) > 0 {
		return nil, fmt.Errorf("server: batch inference is stateless, and the policy has %d RNN state inputs; use the episodes, which keep each one's state", len(p.Spec.State))
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	so := actorSessionOptions(opts.Session)
	a := &PolicyActor{free: make(chan *actWorker, workers), explore: opts.Action.Explore}
	defer func() {
		if err != nil { // no worker is out of the pool yet
			for _, w := range a.workers {
				w.sess.Close()
			}
		}
	}()
	for i := range workers {
		sess, err := inference.NewSession(p.Model, so)
		if err != nil {
			return nil, err // names the model and the tensor; the caller says what the sessions are for
		}
		w := &actWorker{sess: sess, rng: rand.New(rand.NewPCG(opts.Seed, uint64(i)))}
		a.workers = append(a.workers, w)
		if err := w.bind(opts); err != nil {
			return nil, err
		}
		agent := w.greedy.Agent
		a.obsW, a.inW = agent.InputSize(), agent.Width()
		a.actW = w.greedy.Action.Distribution().ActionSize()
		obs := opts.ObservationSpace
		if obs == nil {
			obs = p.Spec.ObservationSpace
		}
		_, isBox := obs.(*spaces.Box)
		a.copyObs = isBox && a.obsW == a.inW && len(agent.Connectors()) == 1
		a.free <- w
	}
	return a, nil
}

// actorSessionOptions are so with the actor's defaults: 1024 rows, one thread of each kind.
func actorSessionOptions(so inference.Options) inference.Options {
	if so.Capacity <= 0 {
		so.Capacity = 1024
	}
	if so.IntraOpThreads == 0 {
		so.IntraOpThreads = 1
	}
	if so.InterOpThreads == 0 {
		so.InterOpThreads = 1
	}
	return so
}

// bind makes the worker's three connector sets (greedy, greedy with log-probabilities,
// exploring) on its session, and finds its observation input and value output, both float32.
func (w *actWorker) bind(opts PolicyOptions) (err error) {
	p, sess := opts.Policy, w.sess
	for _, set := range []struct {
		c                 **connectors.Connectors
		explore, skipLogp bool
	}{{&w.greedy, false, true}, {&w.greedyLogp, false, false}, {&w.explore, true, false}} {
		cfg := opts.Action
		cfg.Explore, cfg.SkipLogp = set.explore, set.skipLogp
		c, err := connectors.New(connectors.Config{Policy: p, ObservationSpace: opts.ObservationSpace,
			ActionSpace: opts.ActionSpace, Action: cfg, Capacity: sess.Capacity()})
		if err != nil {
			return err
		}
		if err := c.Bind(sess); err != nil {
			return err
		}
		c.Agent.Reset(0)
		*set.c = c
	}
	if p.Spec.ValueOutput != "" {
		if w.valueT, err = sess.Output(p.Spec.ValueOutput); err != nil {
			return err
		}
		if w.valueT.Info.ElemType != inference.ElemFloat32 {
			return fmt.Errorf("server: value output %q holds %s, want float32", w.valueT.Info.Name, w.valueT.Info.ElemType)
		}
	}
	if w.obsT, err = sess.Input(p.Spec.ObservationInput); err != nil {
		return err
	}
	if w.obsT.Info.ElemType != inference.ElemFloat32 {
		return fmt.Errorf("server: observation input %q holds %s, want float32", w.obsT.Info.Name, w.obsT.Info.ElemType)
	}
	return nil
}

// ErrNoValueOutput is ActInto's error when values are asked of a policy without a value output.
var ErrNoValueOutput = errors.New("server: the policy has no value output")

// ActOutputs are the destinations of ActInto. Actions is required; LogP and Values may be
// nil (not computed).
type ActOutputs struct {
	Actions []float32 // n rows of the action space's raw layout
	LogP    []float32 // n log-probabilities of the actions taken
	Values  []float32 // n values of the value output
}

// ObservationSize is the number of values of one observation.
func (a *PolicyActor) ObservationSize() int { return a.obsW }

// ActionSize is the number of values of one action.
func (a *PolicyActor) ActionSize() int { return a.actW }

// HasValue reports whether the policy has a value output (ActOutputs.Values can be asked for).
func (a *PolicyActor) HasValue() bool { return a.workers[0].valueT != nil }

// Act computes the actions on a free session (waiting for one while all are busy).
func (a *PolicyActor) Act(ctx context.Context, dst, obs []float32, n int, explore Explore) ([]float32, error) {
	start := len(dst)
	dst = slices.Grow(dst, n*a.actW)[:start+n*a.actW]
	if err := a.ActInto(ctx, ActOutputs{Actions: dst[start:]}, obs, n, explore); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// ActInto is Act writing the actions, and the log-probabilities and values when asked for,
// into out's slices, which must hold n rows each. The observations are not checked against
// the observation space (the caller does that).
func (a *PolicyActor) ActInto(ctx context.Context, out ActOutputs, obs []float32, n int, explore Explore) error {
	if err := a.checkAct(out, obs, n); err != nil {
		return err
	}
	var w *actWorker
	select {
	case w = <-a.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { a.free <- w }()
	if w.sess == nil {
		return inference.ErrClosed
	}
	c := w.greedy
	switch {
	case explore == ExploreOn || (explore == ExploreDefault && a.explore):
		c = w.explore
	case out.LogP != nil:
		c = w.greedyLogp
	}
	capacity := w.sess.Capacity()
	for start := 0; start < n; start += capacity {
		if err := a.actChunk(w, c, out, obs, start, min(capacity, n-start)); err != nil {
			return err
		}
	}
	return nil
}

// checkAct refuses observations that are not n rows, and outputs without room for n rows
// or asking for values the policy does not have.
func (a *PolicyActor) checkAct(out ActOutputs, obs []float32, n int) error {
	switch {
	case len(obs) != n*a.obsW:
		return fmt.Errorf("server: Act: %d observation values for %d rows of %d", len(obs), n, a.obsW)
	case len(out.Actions) != n*a.actW:
		return fmt.Errorf("server: Act: room for %d action values, want %d rows of %d", len(out.Actions), n, a.actW)
	case out.LogP != nil && len(out.LogP) != n:
		return fmt.Errorf("server: Act: room for %d log-probabilities, want %d", len(out.LogP), n)
	case out.Values != nil && len(out.Values) != n:
		return fmt.Errorf("server: Act: room for %d values, want %d", len(out.Values), n)
	case out.Values != nil && !a.HasValue():
		return ErrNoValueOutput
	}
	return nil
}

// actChunk runs rows [start, start+m) of obs (m at most the session's capacity) through w's
// session with the connectors c, and writes their outputs into out.
func (a *PolicyActor) actChunk(w *actWorker, c *connectors.Connectors, out ActOutputs, obs []float32, start, m int) error {
	if err := w.sess.SetBatch(m); err != nil {
		return err
	}
	in := w.obsT.Float32()
	rows := obs[start*a.obsW : (start+m)*a.obsW]
	if a.copyObs {
		copy(in, rows)
	} else {
		for j := range m {
			c.Agent.Write(in[j*a.inW:(j+1)*a.inW], 0, rows[j*a.obsW:(j+1)*a.obsW], 0)
		}
	}
	if err := w.sess.Run(); err != nil {
		return err
	}
	c.Action.ComputeSession(w.rng, w.sess)
	copy(out.Actions[start*a.actW:(start+m)*a.actW], c.Action.Actions())
	if out.LogP != nil {
		copy(out.LogP[start:start+m], c.Action.LogPs())
	}
	if out.Values != nil {
		v := w.valueT.Float32()
		if len(v) != m {
			return fmt.Errorf("server: value output %q has %d values for %d rows", w.valueT.Info.Name, len(v), m)
		}
		copy(out.Values[start:start+m], v)
	}
	return nil
}

// Close closes the sessions, waiting for the requests that use them; later Act calls fail
// with inference.ErrClosed. It is safe to call more than once.
func (a *PolicyActor) Close() error {
	var errs []error
	a.closeOnce.Do(func() {
		taken := make([]*actWorker, 0, len(a.workers))
		for range a.workers {
			w := <-a.free // waits for a busy worker
			if w.sess != nil {
				errs = append(errs, w.sess.Close())
				w.sess = nil
			}
			taken = append(taken, w)
		}
		for _, w := range taken {
			a.free <- w
		}
	})
	return errors.Join(errs...)
}

// RandomActor is an Actor that draws uniform random actions from the action space (RLlib's
// RandomPolicy), for tests and for serving without a model.
type RandomActor struct {
	space spaces.Space
	mu    sync.Mutex
	rng   *rand.Rand
	buf   []float32
}

// NewRandomActor returns a RandomActor seeded with seed.
func NewRandomActor(action spaces.Space, seed uint64) *RandomActor {
	return &RandomActor{space: action, rng: rand.New(rand.NewPCG(seed, 0)), buf: make([]float32, action.Size())}
}

// Act appends n random actions.
func (a *RandomActor) Act(_ context.Context, dst, _ []float32, n int, _ Explore) ([]float32, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range n {
		dst = append(dst, a.space.Sample(a.rng, a.buf)...)
	}
	return dst, nil
}
