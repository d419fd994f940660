package envrunner

import (
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/internal/grow"
	"github.com/onnxrl/sampler/internal/ntcopy"
)

// columnProtocol drives an env.Columnar environment (a VectorEnv's sub-environments, one
// agent each) through its shared columns: observations, rewards and flags are read from
// them and actions written into them, without a per-agent record in between. It changes how
// observations come in and actions go out, nothing else.
type columnProtocol struct {
	r    *Runner
	ce   env.Columnar
	cols env.Columns
	// ready lists the sub-environments of the last poll.
	ready []env.EnvID
	// recs[e] is the agent record of sub-environment e's episode, once it was looked up.
	recs []*agentRec
	sent int // actions written to cols.Actions in the current step
	// fastOK: rows may take addColumns' fast path at all, decided once: it skips
	// OnEpisodeStep, so a runner with that callback takes every row through observe.
	fastOK bool
	// pend[e]: the number of sub-environment e's record's trajectory rows that wait in its
	// policy's defRows (inferRun wrote them there), its last pend[e] rows, in the last pend[e]
	// blocks; ndefer counts the sub-environments with some.
	pend   []int32
	ndefer int
}

// newColumnProtocol returns the columnar protocol for r's environment, or nil when it does
// not offer one or a policy's rows do not match its columns.
func newColumnProtocol(r *Runner) *columnProtocol {
	ce, ok := r.env.(env.Columnar)
	if !ok {
		return nil
	}
	c := ce.Columns()
	if c.ObsSize <= 0 || len(c.Obs) != len(c.Results)*c.ObsSize || len(c.Actions) != len(c.Results)*c.ActionSize ||
		len(c.Reset) != len(c.Results) {
		return nil
	}
	for _, p := range r.policies {
		if p.agent.InputSize() != c.ObsSize || p.actW != c.ActionSize {
			return nil
		}
	}
	return &columnProtocol{r: r, ce: ce, cols: c, recs: make([]*agentRec, len(c.Results)), fastOK: !r.mode.stepCB,
		pend: make([]int32, len(c.Results))}
}

func (c *columnProtocol) poll() error {
	var err error
	c.ready, err = c.ce.PollColumns(&c.r.batch)
	return err
}

func (c *columnProtocol) takeReady() int {
	c.addColumns(c.ready)
	return len(c.ready)
}

func (c *columnProtocol) reset(e env.EnvID) (int, error) {
	r := c.r
	ne := len(r.batch.Envs)
	ok, err := c.ce.ResetColumns(e, env.Seed{}, &r.batch)
	if err != nil {
		return 0, err
	}
	r.statuses(ne)
	if !ok {
		return 0, nil
	}
	c.addColumn(e)
	return 1, nil
}

func (c *columnProtocol) startActions(int) { c.sent = 0 }

// sendAction writes the action into the agent's row of the action column, which is also
// where the record finds its last action (until the sub-environment's next action; an ended
// episode's OnEpisodeEnd comes before it; see inColumns).
func (c *columnProtocol) sendAction(p *policy, a *agentRec, act []float32) {
	sent := c.cols.ActionRow(int(a.envID))
	copy(sent, act)
	c.sent++
	a.lastAct = sent
	a.pending = true
	if p.records {
		p.agent.RecordAction(a.slot, sent)
	}
}

func (c *columnProtocol) flush() error {
	if c.sent == 0 {
		return nil
	}
	return c.ce.StepColumns()
}

// withdraw takes back the actions of every row of the policy in this step: the agents wait
// for them no longer (and so leave the fast path, which takes a waiting agent for granted).
func (c *columnProtocol) withdraw(p *policy) {
	for e := p.run.first; e < p.run.first+p.run.n; e++ {
		c.recs[e].pending = false
	}
	for _, ro := range p.infer {
		ro.rec.pending = false
	}
}

// A step's inferRun over a policy of at least deferEnvs rows (decided in New) writes its rows
// (observation and model outputs) into the next block of the policy's defRows, in order,
// rather than into each agent's trajectory: at hundreds of sub-environments and more a
// step's row of every record is a store to as many places, mostly out of the cache (and at
// thousands, of the TLB's pages), where the block is one run of memory. The rows stay there, each sub-environment's
// in the last pend[e] blocks, while its agent takes the fast path; its record takes them in
// (takeIn) before its trajectory is read or written otherwise: at addColumn, before a step
// whose rows go straight into the records (inferRows), when defRows is full, and for every
// record (settle) before a step's faults and a step in which some sub-environment was not
// ready (its block would lack its row). Take's cut emits them from defRows (deferred,
// Runner.rowsToCut) and the record takes in only the row it keeps.

// deferEnvs is the fewest sub-environments (the policy's session capacity) for which inferRun
// defers its rows. sample run --env CartPole-v1 --workers 1, CPU seconds (perf stat
// task-clock), median of 6-8 alternating runs, rows deferred against written at once: 256
// sub-environments, 20M steps greedy 5.606 s against 5.667 s; 10M steps exploring with GAE
// 3.068 s against 3.127 s; 64 sub-environments, 5M steps, no difference beyond the noise
// (1.694 s against 1.708 s exploring, 1.580 s against 1.586 s greedy). At 4096, 8M steps
// greedy: 2.573 s against 2.640 s.
var deferEnvs = 256 // a variable for the tests (SetDeferEnvs)

// deferBytes bounds a policy's defRows: as many blocks as fit, at most a fragment's steps.
var deferBytes = 64 << 20 // a variable for the tests (SetDeferEnvs)

// takeIn appends the rows of sub-environment e that wait in defRows to the trajectory of its
// record, in order (takeFrom with from 0).
func (c *columnProtocol) takeIn(e env.EnvID) { c.takeFrom(e, 0) }

// takeFrom appends the rows of sub-environment e that wait in defRows, from the from'th on, to
// the trajectory of its record, in order, and forgets the others (cut emitted them from
// defRows). They are a row in each of the last blocks, a page apart; the next
// sub-environment's share their lines, which this one brought into the cache (settle goes in
// order). The trajectory takes non-temporal stores (ntcopy; Take fences them): at thousands
// of sub-environments a fragment's trajectories are tens of megabytes, long out of the cache,
// and an ordinary store would read each line from memory first.
func (c *columnProtocol) takeFrom(e env.EnvID, from int) {
	a, k := c.recs[e], int(c.pend[e])
	c.pend[e] = 0
	c.ndefer--
	if !a.collect || from >= k {
		return
	}
	p := a.pol
	s := p.lay.stride
	ntcopy.Strided(grow.N(&a.tr, (k-from)*s), p.deferredRow(p.defBlocks-k+from, int(e)), p.defEnvs*s, s, k-from)
	c.r.recorded(a)
}

// deferred returns the record's rows that wait in its policy's defRows (see pend).
func (c *columnProtocol) deferred(a *agentRec) (rows []float32, stride, k int) {
	e := int(a.envID)
	if e < 0 || e >= len(c.recs) || c.recs[e] != a || c.pend[e] == 0 {
		return nil, 0, 0
	}
	p := a.pol
	k = int(c.pend[e])
	return p.deferredRow(p.defBlocks-k, e), p.defEnvs * p.lay.stride, k
}

// takeDeferred takes the record's rows that wait in defRows, from the first'th on, into its
// trajectory (takeFrom); deferred said it has some.
func (c *columnProtocol) takeDeferred(a *agentRec, first int) { c.takeFrom(int(a.envID), first) }

// settle takes every waiting row into its record; defRows starts over.
func (c *columnProtocol) settle() {
	for e := 0; c.ndefer > 0 && e < len(c.pend); e++ {
		if c.pend[e] > 0 {
			c.takeIn(e)
		}
	}
	for _, p := range c.r.policies {
		p.defBlocks = 0
	}
}

// inColumns returns the columns when the agent's last observation, info, reward and action
// are its sub-environment's rows there: while its episode runs there and it is not done
// (observe keeps copies of a final observation's values, whose rows the reset reuses).
func (c *columnProtocol) inColumns(a *agentRec) *env.Columns {
	if a.done || int(a.envID) >= len(c.recs) || c.recs[a.envID] != a {
		return nil
	}
	return &c.cols
}

// fast reports whether a, the record of sub-environment e, may take its next row through
// addColumns' fast path (the row's own flags aside): its episode runs (finish and drop take
// a record's episode away: under this protocol an episode ends in the step that ends it) and
// its agent waits for the row. Under this protocol an episode has one agent, in its
// sub-environment, and its totals are that agent's: the test reads the record only, not its
// episode (a line less per sub-environment and step). fastOK rules out the rest once, and
// addColumns the steps in which an episode may be extra (extraEpisodes).
func (c *columnProtocol) fast(a *agentRec, e env.EnvID) bool {
	return a != nil && a.pending && int(a.envID) == e && a.ep != nil
}

// addColumns takes in the rows of the ready sub-environments, as addColumn does for each,
// with the common case inline: a sub-environment whose agent may take the fast path (fast)
// and whose row is not its episode's last. It does what observe does for such a row, without
// the checks that hold for every such row; TestColumnarMatchesPollSend holds the two
// protocols to the same results.
func (c *columnProtocol) addColumns(ready []env.EnvID) {
	r := c.r
	recs, res, reset := c.recs, c.cols.Results, c.cols.Reset
	// Counters and the policy's row list are kept in locals through the loop (an increment
	// in memory per row would chain each row's store to the next row's load).
	steps := 0
	var p *policy
	var infer []row
	// A step that may fill the fragment takes every row through observe, which notes where
	// the fragment ends (stepDone), and so does a step in which an episode may be extra (not
	// counted), which the fast path does not ask.
	slow := !c.fastOK || (r.mode.exact && r.frag.sinceCutEnv+r.step.counted+len(ready) > r.mode.target) ||
		r.extraEpisodes()
	for _, e := range ready {
		a, rs := recs[e], &res[e]
		if slow || !c.fast(a, e) || rs.Terminated || rs.Truncated || reset[e] || rs.Info != nil {
			if p != nil { // addColumn appends to the lists too
				p.infer, p = infer, nil
			}
			c.addColumn(e)
			continue
		}
		// What stepDone counts for the transition, then the transition itself (its end
		// flags 0: not done; its reward goes with the row of this observation, which the
		// model's run writes). The agent stays pending: the row gets its action in this step.
		steps++
		if a.pol != p {
			if p != nil {
				p.infer = infer
			}
			p = a.pol
			infer = p.infer
		}
		a.complete(rs.Reward, 0)
		// The row extends the policy's column run where it can (no row of its own).
		if run := &p.run; len(infer) == 0 && (run.n == 0 || run.first+run.n == e) {
			if run.n == 0 {
				run.first = e
			}
			run.n++
		} else {
			pushRow(&infer, a, c.cols.ObsRow(e), rs.Reward)
		}
	}
	if p != nil {
		p.infer = infer
	}
	if c.ndefer > 0 && len(ready) < len(recs) {
		c.settle() // a sub-environment that was not ready gets no row in the next block
	}
	r.count.agentSteps += int64(steps)
	r.frag.sinceCutAgent += steps
	r.step.stepped += steps
	r.step.counted += steps
}

// addColumn takes in sub-environment e's row of the columns, as statuses and addRow do for
// a polled status and agent.
func (c *columnProtocol) addColumn(e env.EnvID) {
	r := c.r
	if c.pend[e] > 0 {
		c.takeIn(e)
	}
	res := &c.cols.Results[e]
	ep := r.episodeAt(e)
	if c.cols.Reset[e] {
		if ep != nil && !ep.ended {
			ep.ended = true
			r.step.ending = append(r.step.ending, ep)
			r.endEpisode(ep)
		}
		ep = r.startEpisode(e, true)
	}
	if ep != nil && (res.Terminated || res.Truncated) && !ep.ended {
		ep.ended = true
		r.step.ending = append(r.step.ending, ep)
		r.step.resets = append(r.step.resets, e)
	}
	if ep == nil || (ep.ended && !r.isEnding(ep)) {
		ep = r.startEpisode(e, true)
	}
	// recs caches ep.agents[0] by sub-environment (one cache line fewer per row).
	a := c.recs[e]
	if a == nil || a.ep != ep {
		if len(ep.agents) > 0 {
			a = ep.agents[0]
		} else if a = r.newAgent(ep, env.DefaultAgentID); a == nil {
			return // an unknown policy: Step reports r.mapErr
		}
		c.recs[e] = a
	}
	if a.done {
		return
	}
	r.observe(a, c.cols.ObsRow(e), res.Reward, res.Terminated, res.Truncated, res.Info, nil, true)
	if !a.done {
		// The row gets its action in this step, in the action column (sendAction's work,
		// done here where the record is at hand, so that a bulk send need not visit it; the
		// last action is the column's row, as inColumns says).
		a.pending = true
	} else if a.steps > 0 {
		// The final observation: the record keeps its values, and the last action stays
		// in the column until the sub-environment's next episode acts.
		a.lastAct = c.cols.ActionRow(e)
	}
}

// expandRun turns the policy's column run into rows at the front of p.infer (see
// columnRun), for the paths that need a row per agent.
func (c *columnProtocol) expandRun(p *policy) {
	if p.run.n == 0 {
		return
	}
	rows := p.spare[:0]
	for e := p.run.first; e < p.run.first+p.run.n; e++ {
		pushRow(&rows, c.recs[e], c.cols.ObsRow(e), c.cols.Results[e].Reward)
	}
	rows = append(rows, p.infer...)
	clear(p.infer)
	p.spare, p.infer = p.infer[:0], rows
	p.run = columnRun{}
}
