package envrunner

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/internal/ntcopy"
)

// Batch modes (RLlib's batch_mode).
const (
	TruncateEpisodes = "truncate_episodes"
	CompleteEpisodes = "complete_episodes"
)

// Step counting modes (RLlib's count_steps_by).
const (
	EnvSteps   = "env_steps"
	AgentSteps = "agent_steps"
)

// GAE configures generalized advantage estimation (RLlib's compute_advantages with
// use_gae and use_critic): advantages and value_targets columns.
type GAE struct {
	Gamma  float64 // discount, e.g. 0.99
	Lambda float64 // GAE lambda, e.g. 0.95
}

// Config configures a Runner.
type Config struct {
	// Env is the environment; the runner owns it from now on (Close stops it).
	Env env.BaseEnv
	// NumEnvs is the number of sub-environments of Env; it sizes the fragments and the
	// sessions. 0 means 1.
	NumEnvs int
	// Policies maps policy ids to their configuration; at least one.
	Policies map[PolicyID]PolicyConfig
	// PolicyMapping maps an agent of an episode to its policy, once per agent and episode.
	// Nil is allowed with one policy (every agent maps to it). Returning an id that is not
	// in Policies makes Step return an error naming it, then and at every later Step (the
	// rows of that step got no actions): close the runner.
	PolicyMapping func(agent env.AgentID, ep *Episode) PolicyID
	// Seed seeds the runner's random source (action sampling, episode ids). Runners of one
	// run differ by Worker; the environments are seeded by their BaseEnv.
	Seed uint64
	// RunID tells this run's episode ids from those of other runs with the same Seed: it is
	// mixed into the ids' stream (not the actions'), so that runs of other environments or
	// models number their episodes differently while the same run and Seed give the same
	// ids. runspec derives it from the run's settings; a run whose settings are its policies
	// (a policy server, the C API's env) takes PoliciesRunID; 0 leaves the ids to Seed alone.
	RunID uint64
	// Worker is the index of the runner in its group (RLlib's worker_index).
	Worker int

	// FragmentLength is RLlib's rollout_fragment_length: a sample batch holds
	// FragmentLength*NumEnvs steps (counted by CountStepsBy). 0 means 200.
	FragmentLength int
	// CountStepsBy is EnvSteps (default) or AgentSteps.
	CountStepsBy string
	// BatchMode is TruncateEpisodes (default: a batch cuts running episodes, and their rest
	// goes to the next batch) or CompleteEpisodes (a batch holds whole episodes only).
	BatchMode string
	// GAE, when set, adds advantages and value_targets to every batch.
	GAE *GAE
	// MaxSeqLen is the longest sequence (seq_lens entry) of a recurrent policy; 0 means 20.
	MaxSeqLen int
	// StatePerSequence gives recurrent policies' batches RLlib's state_in layout, one row per
	// sequence (SampleBatch.StatePerSequence). The default, a row per row, is what the
	// row-per-transition formats (Parquet, Arrow) can hold; JSON lines hold either.
	StatePerSequence bool
	// MaxEnvSteps and MaxEpisodes, when positive, end the run (Done) after that many
	// environment steps or finished episodes. With MaxEpisodes, no episode is started beyond
	// the budget that counts: once MaxEpisodes episodes have started, sub-environments that
	// reset run "extra" episodes that are neither recorded nor counted, so that the finished
	// episodes are not biased towards short ones.
	MaxEnvSteps int64
	MaxEpisodes int64
	// MaxMetrics bounds the ended episodes' metrics the runner keeps for Metrics: beyond it
	// the oldest are dropped (Counters.MetricsDropped counts them), so that a runner nobody
	// asks for metrics (a policy server, an embedded env) does not grow without end.
	// 0 means DefaultMaxMetrics; negative means no bound.
	MaxMetrics int
	// NoSamples turns sample collection off: episodes, metrics and callbacks still run, but
	// no batch is built (evaluation and deployment runs).
	NoSamples bool

	// Callbacks is a value with any of the callback methods (see Callbacks), called on the
	// runner's goroutine; nil means none.
	Callbacks Callbacks
	// PerfEMA, when in (0, 1], makes the perf stats exponential moving averages with this
	// coefficient instead of means over all steps (RLlib's _PerfStats ema_coef).
	PerfEMA float64
	// Render renders sub-environment 0 every step (when Env implements env.TryRenderer); the
	// time goes to mean_env_render_ms.
	Render bool
	// Logger receives the runner's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// Runner is RLlib's EnvRunner: it steps a BaseEnv with its policies and builds sample
// batches. One goroutine owns a Runner; nothing in it is locked.
type Runner struct {
	cfg      Config
	env      env.BaseEnv
	policies []*policy // sorted by id
	byID     map[PolicyID]*policy
	mapping  func(env.AgentID, *Episode) PolicyID
	cb       callbacks
	log      *slog.Logger
	rng      *rand.Rand
	idState  uint64
	mode     runMode     // decided once, in New
	proto    envProtocol // chosen in New

	eps episodeTable

	batch env.Batch
	step  stepState
	frag  fragment
	out   MultiAgentBatch

	count    runCounts
	met      metricRing
	perf     perfStats
	progress progress
	runErr   error
	mapErr   error // PolicyMapping named an unknown policy, or a model run failed: every Step returns it
	closed   bool

	rewards []AgentReward // the slab of multi-agent episodes' metrics (endEpisode)

	runHook func() error // tests: called after each successful model run; an error fails it

	swaps        swaps       // SwapPolicy's models waiting for a batch boundary
	swapsPending atomic.Bool // swaps has some: the runner's cheap test at a boundary
}

// episodeTable holds the runner's episodes by sub-environment.
type episodeTable struct {
	byEnv   []*Episode // by env id; nil where none runs
	next    []*Episode // by env id: the episode made before the sub-environment's reset (not started)
	pool    []*Episode // ended episodes, for reuse
	started int64      // episodes started that count
	polled  bool       // the first Poll ran
	idr     env.EpisodeIDer
}

// runMode is what New decides from the Config, once, for the runner's life.
type runMode struct {
	target   int  // rows (steps, counted by Config.CountStepsBy) of a fragment
	complete bool // complete_episodes
	byAgent  bool // steps counted by agent steps
	maxSeq   int
	collect  bool // batches are built (not NoSamples)
	exact    bool // truncate_episodes counted by env steps: fragments are cut at exactly target
	stepCB   bool // OnEpisodeStep is called (cb.step != nil)
}

// stepState is what one Step gathers as it goes; the next Step starts it over.
type stepState struct {
	ending  []*Episode
	touched []*Episode
	resets  []env.EnvID // sub-environments to reset in this step
	retry   []env.EnvID // resets that failed (restarted) and are tried again next step
	stepped int         // env steps of this step counted by observe (episodes of one agent)
	counted int         // env steps of this step counted so far (all episodes; see stepDone)
}

// fragment is the fragment being collected (truncate_episodes: until the next cut).
type fragment struct {
	listed                     []*agentRec // records with data since the last cut (truncate mode)
	sinceCutEnv, sinceCutAgent int
	// joined holds, while cut emits a record, its trajectory's rows followed by those its
	// protocol holds for it (envProtocol.deferred): a few kilobytes, in L1 across the
	// columns' passes.
	joined []float32
}

// runCounts are the runner's lifetime counters and the warnings they gave.
type runCounts struct {
	envSteps, agentSteps    int64
	episodes, faulty        int64
	idle                    int // steps in a row without an agent observation
	warnedLarge, warnedIdle bool
}

// metricRing holds the episodes ended since the last Metrics call, under mu: Metrics may be
// called from another goroutine while the runner steps.
type metricRing struct {
	mu      sync.Mutex
	list    []RolloutMetrics // a ring from at once MaxMetrics long
	at      int
	dropped int64 // metrics dropped for MaxMetrics
}

// New builds a runner: a session and connectors per policy, checked against each other.
func New(cfg Config) (*Runner, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	r := &Runner{cfg: cfg, env: cfg.Env, byID: map[PolicyID]*policy{}, mapping: cfg.PolicyMapping,
		cb: findCallbacks(cfg.Callbacks), log: cfg.Logger, mode: runMode{complete: cfg.BatchMode == CompleteEpisodes,
			byAgent: cfg.CountStepsBy == AgentSteps, maxSeq: cfg.MaxSeqLen, collect: !cfg.NoSamples}}
	r.mode.exact = !r.mode.complete && !r.mode.byAgent && r.mode.collect
	r.perf.ema = cfg.PerfEMA
	if r.log == nil {
		r.log = slog.Default()
	}
	r.mode.stepCB = r.cb.step != nil
	if err := r.addPolicies(); err != nil {
		r.closePolicies()
		return nil, err
	}
	r.mode.target = cfg.FragmentLength * cfg.NumEnvs
	r.proto = r.pickProtocol()
	r.reserveFirst()
	r.eps.idr, _ = cfg.Env.(env.EpisodeIDer)
	col, _ := r.proto.(*columnProtocol)
	for _, p := range r.policies {
		p.chooseActions = r.pickAct(p, col)
		if col == nil {
			p.lay.addT() // an agent may skip env steps: each row keeps its t
		}
		p.large = r.largeRows() * p.lay.stride
	}
	r.rng = rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.Worker)+0x9e3779b97f4a7c15))
	r.idState = cfg.Seed ^ uint64(cfg.Worker)<<48 ^ 0x5851f42d4c957f2d ^ cfg.RunID
	return r, nil
}

// check fills in the defaults of cfg's unset fields and reports the first field that is
// out of range.
func (cfg *Config) check() error {
	if cfg.Env == nil {
		return errors.New("envrunner: Config.Env is nil")
	}
	if len(cfg.Policies) == 0 {
		return errors.New("envrunner: Config.Policies is empty")
	}
	if cfg.NumEnvs <= 0 {
		cfg.NumEnvs = 1
	}
	if cfg.FragmentLength < 0 {
		return fmt.Errorf("envrunner: FragmentLength %d, want >= 0", cfg.FragmentLength)
	}
	if cfg.FragmentLength == 0 {
		cfg.FragmentLength = 200
	}
	if cfg.MaxMetrics == 0 {
		cfg.MaxMetrics = DefaultMaxMetrics
	}
	if err := cfg.checkModes(); err != nil {
		return err
	}
	if g := cfg.GAE; g != nil && (!(g.Gamma >= 0 && g.Gamma <= 1) || !(g.Lambda >= 0 && g.Lambda <= 1)) {
		return fmt.Errorf("envrunner: GAE gamma %v and lambda %v must be in [0, 1]", g.Gamma, g.Lambda)
	}
	if cfg.MaxSeqLen < 0 {
		return fmt.Errorf("envrunner: MaxSeqLen %d, want >= 0", cfg.MaxSeqLen)
	}
	if cfg.MaxSeqLen == 0 {
		cfg.MaxSeqLen = 20
	}
	if !(cfg.PerfEMA >= 0 && cfg.PerfEMA <= 1) { // NaN too
		return fmt.Errorf("envrunner: PerfEMA %v, want 0 (mean) or in (0, 1]", cfg.PerfEMA)
	}
	return nil
}

// checkModes fills in and checks how steps are counted and batches cut.
func (cfg *Config) checkModes() error {
	switch cfg.CountStepsBy {
	case "":
		cfg.CountStepsBy = EnvSteps
	case EnvSteps, AgentSteps:
	default:
		return fmt.Errorf("envrunner: CountStepsBy %q, want %q or %q", cfg.CountStepsBy, EnvSteps, AgentSteps)
	}
	switch cfg.BatchMode {
	case "":
		cfg.BatchMode = TruncateEpisodes
	case TruncateEpisodes, CompleteEpisodes:
	default:
		return fmt.Errorf("envrunner: BatchMode %q, want %q or %q", cfg.BatchMode, TruncateEpisodes, CompleteEpisodes)
	}
	return nil
}

// addPolicies makes the runner's policies, in the order of their ids, and the mapping of a
// single policy when the configuration has none. The caller closes what it made on error.
func (r *Runner) addPolicies() error {
	cfg := &r.cfg
	ids := make([]PolicyID, 0, len(cfg.Policies))
	for id := range cfg.Policies {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		pc := cfg.Policies[id]
		// Not exploring, action_logp is 0, as RLlib's StochasticSampling records it
		// (zeros_like the sampled logp): the mode's log-probability is never computed.
		pc.Action.SkipLogp = !pc.Action.Explore
		p, err := newPolicy(id, pc, cfg.NumEnvs)
		if err != nil {
			return err
		}
		if !cfg.NoSamples {
			p.rows0 = min(cfg.FragmentLength+2, 1024)
		}
		r.policies = append(r.policies, p)
		r.byID[id] = p
		r.out.Policy(id).setLayout(p.obsW, p.actW, p.distW, p.stateW, p.act)
		r.out.Policy(id).StatePerSequence = cfg.StatePerSequence && len(p.stateW) > 0
	}
	if r.mapping == nil {
		if len(ids) != 1 {
			return fmt.Errorf("envrunner: %d policies need a PolicyMapping", len(ids))
		}
		only := ids[0]
		r.mapping = func(env.AgentID, *Episode) PolicyID { return only }
	}
	return nil
}

// reserveFirst gives the complete_episodes batch of a single policy room for its first
// fragment. The episodes are emitted into r.out as they end, and the first fragment has at
// least target rows. Under the columnar protocol every sub-environment steps every step, so
// the fragment comes and is reserved whole: grown from a part (doubling, each copy fresh
// memory and garbage), the first batch of 4096 sub-environments cost `sample run` 0.3 s (2M
// steps in 1.0 s against 0.7 s reserved whole). Otherwise at most firstReserve are reserved
// up front: an ExternalEnv's target (its most concurrent episodes times the fragment) may be
// far more than a short session collects, and a larger first fragment grows as it fills
// (Take sizes the later ones). In truncate_episodes mode Take sizes each batch for its
// fragment.
func (r *Runner) reserveFirst() {
	if !r.mode.complete || !r.mode.collect || len(r.policies) != 1 {
		return
	}
	p, rows := r.policies[0], min(r.mode.target, firstReserve)
	if r.neverWaits() {
		rows = r.mode.target
	}
	r.reserve(r.out.Policy(p.id), p, rows)
}

// firstReserve is the most rows New reserves for a runner's first fragment (see New).
const firstReserve = 1 << 16

// layOut sets the layout of b, an empty batch of policy p, and gives it room for rows rows.
func (r *Runner) layOut(b *SampleBatch, p *policy, rows int) {
	b.setLayout(p.obsW, p.actW, p.distW, p.stateW, p.act)
	b.StatePerSequence = r.cfg.StatePerSequence && len(p.stateW) > 0
	r.reserve(b, p, rows)
}

// reserve gives b, policy p's batch, room for rows rows of the columns the runner fills.
func (r *Runner) reserve(b *SampleBatch, p *policy, rows int) {
	b.reserve(rows, !p.random, p.hasValue, r.cfg.GAE != nil)
}

func (r *Runner) closePolicies() error {
	var errs []error
	for _, p := range r.policies {
		errs = append(errs, p.close())
	}
	return errors.Join(errs...)
}

// Close stops the environment and closes the sessions the runner made. Data not taken
// with Take is dropped.
func (r *Runner) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.env.Stop()
	if err != nil {
		err = fmt.Errorf("envrunner: stop the environment: %w", err)
	}
	return errors.Join(err, r.closePolicies(), r.closeSwaps())
}

// nextID returns the next episode id (splitmix64 of the runner's id state).
func (r *Runner) nextID() int64 {
	r.idState += 0x9e3779b97f4a7c15
	z := r.idState
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return int64(z & math.MaxInt64)
}

// Sample steps until a fragment is complete, or until the run is Done (MaxEnvSteps or
// MaxEpisodes reached: the rest of the run counts nothing more, so the fragment is what was
// collected up to then), and moves it into dst (RLlib's sample()). dst is reset first; its
// buffers are reused, so passing the same batch back allocates nothing in steady state.
// While it steps a VectorBaseEnv, the calling goroutine is locked to its thread, as in a
// Group (see Group).
func (r *Runner) Sample(dst *MultiAgentBatch) error {
	if r.cfg.NoSamples {
		return errors.New("envrunner: Sample with NoSamples set")
	}
	defer r.holdThread()()
	for !r.Ready() && !r.Done() {
		if err := r.Step(); err != nil {
			return err
		}
	}
	r.Take(dst)
	return nil
}

// Ready reports whether a fragment is complete.
func (r *Runner) Ready() bool {
	if !r.mode.collect {
		return false
	}
	if r.mode.complete {
		if r.mode.byAgent {
			return r.out.AgentSteps >= r.mode.target
		}
		return r.out.EnvSteps >= r.mode.target
	}
	if r.mode.byAgent {
		return r.frag.sinceCutAgent >= r.mode.target
	}
	return r.frag.sinceCutEnv >= r.mode.target
}

// Take moves what is collected into dst (after emptying dst) and calls OnSampleResult: in
// truncate_episodes mode every running episode is cut here; in complete_episodes mode dst
// gets the episodes that ended. It does so whether or not the fragment is complete, so a
// run's last partial fragment is taken the same way.
//
// In truncate_episodes mode the fragment is written straight into dst's storage, sized at
// once for it (so that even a fresh dst each time costs one allocation a column, not a
// doubling series): a caller that passes the same batch back each time has the runner fill
// one storage only. In complete_episodes mode the episodes are emitted as they end, into the
// runner's own batch: dst takes its storage, and dst's storage becomes the runner's for the
// next fragment, sized for one like this.
func (r *Runner) Take(dst *MultiAgentBatch) {
	t0 := time.Now()
	dst.empty()
	if r.mode.complete {
		r.proto.settle()
		r.out, *dst = *dst, r.out
		for _, p := range r.policies {
			r.layOut(r.out.Policy(p.id), p, dst.Policy(p.id).Count)
		}
	} else {
		for _, p := range r.policies {
			r.layOut(dst.Policy(p.id), p, r.cutRows(p))
		}
		r.cut(dst)       // emits the rows the protocol holds from there (envProtocol.deferred)
		r.proto.settle() // and the rows of records cut did not visit
	}
	ntcopy.Fence() // emitFirst's non-temporal stores, before the batch leaves this goroutine
	for _, b := range dst.PolicyBatches {
		b.dropStaleIDs() // what the fragment's rows did not write over
	}
	for _, p := range r.policies {
		b := dst.Policy(p.id)
		b.Model = nil
		if p.conn != nil {
			b.Model = p.conn.Policy
		}
	}
	if r.swapsPending.Load() { // the batch boundary: dst holds the old models' data only
		r.applySwaps()
	}
	r.perf.addOutput(time.Since(t0))
	if r.cb.sample != nil {
		r.cb.sample.OnSampleResult(r, dst)
	}
}

// Step runs one step: poll, agent connectors, one inference per policy over its ready
// agents, action connectors, send actions; episodes that ended are finished and their
// sub-environments reset.
func (r *Runner) Step() error {
	if r.closed {
		return errClosed
	}
	if r.mapErr != nil { // the polled rows of that step were left without actions
		return r.mapErr
	}
	if !r.mode.collect && r.swapsPending.Load() { // no batches: every step is a boundary
		r.applySwaps()
	}
	r.batch.Clear()
	r.step.counted = 0
	if !r.eps.polled {
		r.firstPoll()
	}
	t0 := time.Now()
	err := r.proto.poll()
	t1 := time.Now()
	wait := t1.Sub(t0)
	if err != nil {
		return fmt.Errorf("envrunner: poll: %w", err)
	}
	r.step.resets = append(r.step.resets[:0], r.step.retry...)
	r.step.retry = r.step.retry[:0]
	if len(r.batch.Envs) > 0 { // a status may end an episode: its trajectory is read or dropped
		r.proto.settle()
	}
	r.statuses(0)
	nAgents := len(r.batch.Agents)
	for i := range nAgents {
		r.addRow(&r.batch.Agents[i])
	}
	cols := r.proto.takeReady() // rows taken in outside the batch (columns)
	envSteps := r.stepEpisodes()
	// Episodes that ended end now, before their sub-environments start the next ones.
	for _, ep := range r.step.ending {
		r.endEpisode(ep)
	}
	n, err := r.resetEnded()
	if err != nil {
		return err
	}
	cols += n
	for i := nAgents; i < len(r.batch.Agents); i++ { // the rows of synchronous resets
		r.addRow(&r.batch.Agents[i])
	}
	if r.mapErr != nil {
		return r.mapErr
	}
	agents, envs := len(r.batch.Agents)+cols, len(r.batch.Envs)+cols
	r.act()
	if r.runErr != nil {
		// The polled agents got no actions and their sub-environments would wait for them
		// forever: like a mapping error, a failed run ends the runner's sampling (every
		// later Step returns it, as RLlib's sampler is done after an exception); Close
		// releases the environment.
		r.mapErr = fmt.Errorf("envrunner: %w", r.runErr)
		r.runErr = nil
		return r.mapErr
	}
	for _, ep := range r.step.ending {
		r.finish(ep)
	}
	clear(r.step.ending)
	r.step.ending = r.step.ending[:0]
	if r.cfg.Render {
		r.render()
	}
	t3 := time.Now()
	err = r.proto.flush()
	wait += time.Since(t3)
	r.perf.add(phEnvWait, wait)
	r.perf.endStep()
	if err != nil {
		return fmt.Errorf("envrunner: send actions: %w", err)
	}
	r.count.envSteps += int64(envSteps)
	r.frag.sinceCutEnv += envSteps
	r.countIdle(agents, envs)
	r.progress.update(r)
	return nil
}

// stepEpisodes gives the agents of episodes that ended for all agents their final rows,
// returns the env steps of the step (those counted as transitions completed and, for
// episodes of several agents, one for each episode an agent of which completed one), and
// calls OnEpisodeStep for each episode that stepped.
func (r *Runner) stepEpisodes() int {
	for _, ep := range r.step.ending {
		if ep.byAll {
			r.finalRows(ep)
		}
	}
	envSteps := r.step.stepped
	r.step.stepped = 0
	for _, ep := range r.step.touched {
		if ep.stepped {
			ep.stepped = false
			ep.length++ // Length of an episode of several agents
			if !ep.extra {
				envSteps++
			}
			if r.mode.stepCB {
				r.cb.step.OnEpisodeStep(r, ep)
			}
		}
	}
	r.step.touched = r.step.touched[:0]
	return envSteps
}

// firstPoll makes the episodes of every sub-environment before the first Poll, which resets
// them all, as before every later reset (RLlib creates them before its first poll).
func (r *Runner) firstPoll() {
	r.eps.polled = true
	for e := range r.cfg.NumEnvs {
		r.createEpisode(e)
	}
}

// resetEnded resets the sub-environments whose episode ended, so that their first
// observations get actions in this step, and returns the number of rows taken in outside the
// batch (a synchronous reset appends to the batch).
func (r *Runner) resetEnded() (int, error) {
	cols := 0
	for k := 0; k < len(r.step.resets); k++ {
		e := r.step.resets[k]
		r.createEpisode(e) // before the reset (OnEpisodeCreated), as RLlib's create_episode
		tr := time.Now()
		n, err := r.proto.reset(e)
		// Reset time is raw observation processing, not env wait: RLlib's EnvRunnerV2 calls
		// try_reset inside _process_observations, under the raw_obs_processing timer.
		r.perf.add(phRawObs, time.Since(tr))
		if err != nil {
			return cols, fmt.Errorf("envrunner: reset sub-environment %d: %w", e, err)
		}
		cols += n
	}
	return cols, nil
}

// render renders the environment, when it can (Config.Render).
func (r *Runner) render() {
	if tr, ok := r.env.(env.TryRenderer); ok {
		t := time.Now()
		_, _ = tr.TryRender(0)
		r.perf.add(phRender, time.Since(t))
	}
}

// countIdle counts the steps in a row in which the environment stepped (envs statuses)
// without an agent observation (agents), and warns once after a thousand.
func (r *Runner) countIdle(agents, envs int) {
	if agents == 0 && envs > 0 {
		r.count.idle++
		if r.count.idle > 1000 && !r.count.warnedIdle {
			r.count.warnedIdle = true
			r.log.Warn("envrunner: your environment seems to be stepping without ever emitting agent observations (agents are never requested to act)",
				"worker", r.cfg.Worker)
		}
	} else if agents > 0 {
		r.count.idle = 0
	}
}

// largeRows is the number of observations one agent may buffer before the large-batch
// warning.
func (r *Runner) largeRows() int { return max(1000, r.cfg.FragmentLength*10) }

// warnLarge warns, once, that an agent's trajectory grows without its episode ending or a
// fragment cutting it (RLlib's large batch warning).
func (r *Runner) warnLarge(a *agentRec) {
	r.count.warnedLarge = true
	limit := r.largeRows()
	r.log.Warn(fmt.Sprintf("envrunner: more than %d observations of one agent are buffered in the sampler. "+
		"If this is more than you expected, check that the environment's episodes end (set a time limit); "+
		"in multi-agent environments rollout_fragment_length counts environment steps, not the steps of "+
		"one agent, and batch_mode %s waits for episodes to end", limit, r.cfg.BatchMode),
		"worker", r.cfg.Worker, "episode", a.epsID, "agent", a.id)
}
