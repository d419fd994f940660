package envrunner

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// PolicyConfig configures one policy of a runner.
type PolicyConfig struct {
	// Policy is the ONNX policy with its resolved spec. Nil with Random.
	Policy *models.Policy
	// Random samples uniform random actions from ActionSpace instead of running a model
	// (RLlib's RandomPolicy): the batches then have no action_dist_inputs or vf_preds (GAE
	// takes the values as 0); action_logp is the log-probability of the uniform sampling.
	Random bool
	// ObservationSpace and ActionSpace are the environment's spaces for the agents of this
	// policy. Nil means: the spec's (required with Random).
	ObservationSpace, ActionSpace spaces.Space
	// Agent are agent connectors applied after the default flatten of the observation.
	Agent []connectors.AgentConnector
	// Action configures the action connectors (explore or greedy, normalize and clip).
	Action connectors.ActionConfig
	// Session configures the ONNX Runtime session the runner creates. Capacity 0 means:
	// twice the runner's NumEnvs (room for the final and first observations of every
	// sub-environment in one step), at least 16. Steps with more ready agents run in chunks.
	Session inference.Options
	// SharedSession, when set, is used instead of creating one; the runner does not close it
	// and must be its only user.
	SharedSession *inference.Session
}

// row is one ready agent of a policy in the current step.
type row struct {
	rec    *agentRec
	obs    []float32
	reward float64
}

// columnRun is a run of rows first..first+n-1 of the columns queued for a policy by
// addColumns (rows of sub-environments on the fast path, in order), without a row each: the
// agents are the columnar protocol's recs, the observations the column's rows. The policy's
// rows are the run's followed by infer's; expandRun writes the run out as rows where a path
// needs them.
type columnRun struct{ first, n int }

// policy is one policy of a runner: its connectors, session and per-step rows.
type policy struct {
	id     PolicyID
	random bool
	obs    spaces.Space
	act    spaces.Space

	agent  *connectors.AgentPipeline
	conn   *connectors.Connectors // nil for a random policy
	sess   *inference.Session
	own    bool
	obsT   *inference.Tensor
	valueT *inference.Tensor
	cap    int

	obsW, actW, distW int
	stateW            []int
	// What SwapPolicy needs to build and check a new model's session: the options the first
	// one was made with, the action connectors' configuration, the distribution and the
	// state pairs (immutable after New, so read from any goroutine).
	sessOpts   inference.Options
	actionCfg  connectors.ActionConfig
	distName   string
	statePairs []models.StatePair
	hasValue   bool
	copies     bool // the agent connectors copy the raw observation as it is
	records    bool // an agent connector keeps past actions
	// defRows holds the trajectory rows inferRun wrote for its records to take in later
	// (columnProtocol.pend), time-major: defBlocks blocks (of defMax), one a step, each with a
	// row per sub-environment (defEnvs of them; see deferredRow). Nil where the policy's rows
	// go straight into its records.
	defRows                    []float32
	defEnvs, defBlocks, defMax int

	// chooseActions computes the actions of the step's rows (infer and run), chosen in New (pickAct).
	chooseActions func(p *policy)
	infer         []row // rows that go through the model, after those of run
	run           columnRun
	spare         []row // expandRun's
	inferFinals   int   // infer rows that are final observations
	finals        []row // final observations that need no model run
	slots         []int
	free          []int
	next          int
	rowBuf        []float32 // a random policy's processed observation rows; also scratch
	rows0         int       // trajectory rows a new record has room for (a fragment's worth)
	lay           trajLayout
	large         int       // trajectory values one agent may buffer before the large-batch warning
	actRnd        []float32 // a random policy's actions
	randomLogp    uniformLogp
	pool          []*agentRec
}

func newPolicy(id PolicyID, cfg PolicyConfig, numEnvs int) (*policy, error) {
	p := &policy{id: id, random: cfg.Random}
	p.obs, p.act = cfg.ObservationSpace, cfg.ActionSpace
	if cfg.Random {
		if p.obs == nil || p.act == nil {
			return nil, fmt.Errorf("envrunner: policy %q: a random policy needs the observation and action spaces", id)
		}
		if err := p.obs.Validate(); err != nil {
			return nil, fmt.Errorf("envrunner: policy %q: observation space: %w", id, err)
		}
		if err := p.act.Validate(); err != nil {
			return nil, fmt.Errorf("envrunner: policy %q: action space: %w", id, err)
		}
		conns := append([]connectors.AgentConnector{connectors.NewFlatten(p.obs)}, cfg.Agent...)
		agent, err := connectors.NewAgentPipeline(p.obs, conns...)
		if err != nil {
			return nil, fmt.Errorf("envrunner: policy %q: %w", id, err)
		}
		p.agent = agent
		p.obsW, p.actW = agent.Width(), p.act.Size()
		p.cap = max(cfg.Session.Capacity, 2*numEnvs, 16)
		p.rowBuf = make([]float32, p.obsW)
		p.actRnd = make([]float32, p.actW)
		p.randomLogp = newUniformLogp(p.act)
		p.records = agent.RecordsActions()
		p.lay = newTrajLayout(p)
		return p, nil
	}
	if cfg.Policy == nil {
		return nil, fmt.Errorf("envrunner: policy %q: no model (set Policy, or Random)", id)
	}
	spec := &cfg.Policy.Spec
	if p.obs == nil {
		p.obs = spec.ObservationSpace
	}
	if p.act == nil {
		p.act = spec.ActionSpace
	}
	capacity := cfg.Session.Capacity
	if capacity <= 0 {
		capacity = max(2*numEnvs, 16)
	}
	if cfg.SharedSession != nil {
		capacity = cfg.SharedSession.Capacity()
	}
	c, err := connectors.New(connectors.Config{Policy: cfg.Policy, ObservationSpace: p.obs, ActionSpace: p.act,
		Agent: cfg.Agent, Action: cfg.Action, Capacity: capacity})
	if err != nil {
		return nil, fmt.Errorf("envrunner: policy %q: %w", id, err)
	}
	p.conn, p.agent = c, c.Agent
	if p.obs == nil {
		p.obs = spec.ObservationSpace
	}
	p.sessOpts, p.actionCfg = cfg.Session, cfg.Action
	p.sessOpts.Capacity = capacity
	p.distName, p.statePairs = spec.Distribution, append([]models.StatePair(nil), spec.State...)
	sess := cfg.SharedSession
	if sess == nil {
		opts := p.sessOpts
		if sess, err = inference.NewSession(cfg.Policy.Model, opts); err != nil {
			return nil, fmt.Errorf("envrunner: policy %q: %w", id, err)
		}
		p.own = true
	}
	p.sess, p.cap = sess, sess.Capacity()
	if err := p.bind(spec); err != nil {
		p.close()
		return nil, fmt.Errorf("envrunner: policy %q: %w", id, err)
	}
	p.lay = newTrajLayout(p)
	return p, nil
}

func (p *policy) bind(spec *models.Spec) error {
	if err := p.conn.Bind(p.sess); err != nil {
		return err
	}
	var err error
	if p.obsT, err = p.sess.Input(spec.ObservationInput); err != nil {
		return err
	}
	if p.obsT.Info.ElemType != inference.ElemFloat32 {
		return fmt.Errorf("observation input %q holds %s, want float32", p.obsT.Info.Name, p.obsT.Info.ElemType)
	}
	if spec.ValueOutput != "" {
		if p.valueT, err = p.sess.Output(spec.ValueOutput); err != nil {
			return err
		}
		if p.valueT.Info.ElemType != inference.ElemFloat32 {
			return fmt.Errorf("value output %q holds %s, want float32", p.valueT.Info.Name, p.valueT.Info.ElemType)
		}
		if p.valueT.RowSize() != 1 {
			return fmt.Errorf("value output %q has %d values per row, want 1", p.valueT.Info.Name, p.valueT.RowSize())
		}
		p.hasValue = true
	}
	p.obsW = p.agent.Width()
	p.actW = p.act.Size()
	p.distW = p.conn.Action.Distribution().InputSize()
	for _, sp := range spec.State {
		t, err := p.sess.Input(sp.Input)
		if err != nil {
			return err
		}
		p.stateW = append(p.stateW, t.RowSize())
	}
	p.slots = make([]int, p.cap)
	p.rowBuf = make([]float32, p.obsW)
	p.copies, p.records = p.agent.Copies(), p.agent.RecordsActions()
	return nil
}

// slot takes a free connector slot and starts it afresh.
func (p *policy) slot() int {
	var s int
	if n := len(p.free); n > 0 {
		s = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		s = p.next
		p.next++
	}
	p.agent.Reset(s)
	return s
}

func (p *policy) release(s int) { p.free = append(p.free, s) }

// deferredRow returns sub-environment e's row of block b of defRows, and what follows it.
func (p *policy) deferredRow(b, e int) []float32 {
	return p.defRows[(b*p.defEnvs+e)*p.lay.stride:]
}

// newRec takes an agent record from the pool.
func (p *policy) newRec() *agentRec {
	if n := len(p.pool); n > 0 {
		a := p.pool[n-1]
		p.pool = p.pool[:n-1]
		return a
	}
	// Room for a fragment's worth of rows, so that records stop growing once the pool has
	// enough of them (steady state without allocations).
	a := &agentRec{pol: p}
	a.tr = make([]float32, 0, p.rows0*p.lay.stride)
	return a
}

func (p *policy) putRec(a *agentRec) {
	a.clearTrajectory()
	a.ep, a.lastObs, a.lastInfo, a.lastAct = nil, nil, nil, nil
	a.id = ""
	p.pool = append(p.pool, a)
}

// sampleRandom draws a random action into p.actRnd.
func (p *policy) sampleRandom(rng *rand.Rand) []float32 {
	return p.act.Sample(rng, p.actRnd)
}

func (p *policy) close() error {
	if p.own && p.sess != nil {
		err := p.sess.Close()
		p.sess = nil
		return err
	}
	return nil
}

var errClosed = errors.New("envrunner: the runner is closed")
