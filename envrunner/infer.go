package envrunner

import (
	"math"
	"time"

	"github.com/onnxrl/sampler/env"
)

// act computes the actions of every queued row, policy by policy, and records the
// trajectory data.
func (r *Runner) act() {
	need := 0
	for _, p := range r.policies {
		need += len(p.infer) * p.actW // a column run's actions go to the action column
	}
	r.proto.startActions(need)
	for _, p := range r.policies {
		if len(p.finals) > 0 {
			r.writeRows(p, p.finals)
		}
		if len(p.infer) > 0 || p.run.n > 0 {
			p.chooseActions(p)
		}
		// Done agents give their slots back: every final row's, and those of the infer rows
		// that are final observations (counted by observe; most steps have none).
		rows := p.finals
		if p.inferFinals > 0 {
			rows = p.infer
			p.inferFinals = 0
			for _, ro := range p.finals {
				r.release(p, ro.rec)
			}
		}
		for _, ro := range rows {
			r.release(p, ro.rec)
		}
		clear(p.finals)
		clear(p.infer)
		p.finals, p.infer = p.finals[:0], p.infer[:0]
		p.run = columnRun{}
	}
}

// pickAct returns how policy p computes the actions of its rows, chosen once: uniform random
// actions, the model over one copy of a column run (col is the columnar protocol, nil under
// the row protocol; the agent connectors must leave observations as they are, with no
// state or past actions to keep per row), or the model over rows, each written by the agent
// connectors.
func (r *Runner) pickAct(p *policy, col *columnProtocol) func(*policy) {
	switch {
	case p.random && col != nil:
		return func(p *policy) {
			col.expandRun(p)
			r.randomRows(p)
		}
	case p.random:
		return r.randomRows
	case col != nil && p.copies && p.conn.State == nil && !p.records:
		if r.mode.collect && p.cap >= deferEnvs {
			p.defEnvs = len(col.recs)
			block := p.defEnvs * p.lay.stride
			p.defMax = max(1, min(r.cfg.FragmentLength+1, deferBytes/4/block))
			p.defRows = make([]float32, p.defMax*block)
		}
		return func(p *policy) {
			if p.run.n > 0 && len(p.infer) == 0 && p.run.n <= p.cap {
				col.inferRun(p)
				return
			}
			col.settle() // the rows go straight into the records, after those waiting
			col.expandRun(p)
			r.inferRows(p)
		}
	case col != nil:
		return func(p *policy) {
			col.expandRun(p)
			r.inferRows(p)
		}
	}
	return r.inferRows
}

// release gives a done agent's slot back.
func (r *Runner) release(p *policy, a *agentRec) {
	if a.done && a.slot >= 0 {
		p.release(a.slot)
		a.slot = -1
	}
}

// record appends a trajectory row for a processed observation and the reward that came with
// it (trajLayout.rew) and returns it (the rest of the row is the caller's to write; see
// newRow).
func (r *Runner) record(a *agentRec, processed []float32, reward float64) []float32 {
	row := a.newRow()
	put(row, processed)
	row[a.pol.lay.rew] = float32(reward)
	if t := a.pol.lay.t; t >= 0 {
		row[t] = math.Float32frombits(uint32(a.ep.Length())) // the env steps so far: this one's
	}
	r.recorded(a)
	return row
}

// recorded does the bookkeeping of a record's new trajectory row: the large-batch warning,
// and the list of records with data. Most rows need neither; the test is kept small enough
// to inline on the per-row path.
func (r *Runner) recorded(a *agentRec) {
	if (len(a.tr) > a.pol.large && !r.count.warnedLarge) || (!r.mode.complete && !a.listed) {
		r.recordedSlow(a)
	}
}

func (r *Runner) recordedSlow(a *agentRec) {
	if len(a.tr) > a.pol.large && !r.count.warnedLarge {
		r.warnLarge(a)
	}
	if !r.mode.complete {
		r.list(a)
	}
}

// writeRows runs the agent connectors on rows that do not go through the model (final
// observations, a random policy's rows) and records them, with a value placeholder where the
// policy has a value output.
func (r *Runner) writeRows(p *policy, rows []row) {
	t0 := time.Now()
	for _, ro := range rows {
		a := ro.rec
		p.agent.Write(p.rowBuf, a.slot, ro.obs, ro.reward)
		if a.collect {
			// No model output for the row: its value (where the policy has one) is 0, and
			// so is its action until randomRows writes one.
			clear(r.record(a, p.rowBuf, ro.reward)[p.lay.outs:p.lay.outputs])
		}
	}
	r.perf.add(phRawObs, time.Since(t0))
}

// randomRows gives the rows uniform random actions.
func (r *Runner) randomRows(p *policy) {
	r.writeRows(p, p.infer)
	t1 := time.Now()
	for _, ro := range p.infer {
		act := p.sampleRandom(r.rng)
		if ro.rec.collect {
			copy(ro.rec.lastRow()[p.lay.act:], ro.rec.rowAction(act))
		}
		r.proto.sendAction(p, ro.rec, act)
	}
	r.perf.add(phAction, time.Since(t1))
}

// inferRows runs the model over the policy's rows, in chunks of the session's capacity.
func (r *Runner) inferRows(p *policy) {
	for start := 0; start < len(p.infer); start += p.cap {
		if !r.inferChunk(p, p.infer[start:min(start+p.cap, len(p.infer))]) {
			return
		}
	}
}

// inferChunk runs the model over rows: the agent connectors write each row's input, the
// row is recorded with its RNN states, and after the run the outputs are recorded and the
// actions sent. It reports false when the run failed (r.runErr is set; no row of the step
// gets an action).
func (r *Runner) inferChunk(p *policy, rows []row) bool {
	w, m := p.obsW, len(rows)
	st := p.conn.State
	t0 := time.Now()
	if err := p.sess.SetBatch(m); err != nil {
		panic(err) // m is within the capacity and the session is open
	}
	in := p.obsT.Float32()
	for j, ro := range rows {
		a := ro.rec
		dst := in[j*w : (j+1)*w]
		p.agent.Write(dst, a.slot, ro.obs, ro.reward)
		p.slots[j] = a.slot
		if a.collect {
			tr := r.record(a, dst, ro.reward)
			if st != nil && !a.done {
				for s, off := range p.lay.stateIn {
					copy(tr[off:off+p.stateW[s]], st.Row(s, a.slot))
				}
			}
		}
	}
	if st != nil {
		st.Gather(p.slots[:m])
	}
	t1 := time.Now()
	r.perf.add(phRawObs, t1.Sub(t0))
	if err := r.runModel(p); err != nil {
		r.runErr = err
		for _, ro := range rows { // the rows recorded for this run get no model output
			if ro.rec.collect {
				clear(ro.rec.lastRow()[p.lay.outs:p.lay.outputs])
			}
		}
		r.proto.withdraw(p)
		return false
	}
	t2 := time.Now()
	r.perf.add(phInference, t2.Sub(t1))
	p.conn.AfterRun(r.rng, p.sess, p.slots[:m])
	var vals []float32
	if p.hasValue {
		vals = p.valueT.Float32()
	}
	act := p.conn.Action
	for j, ro := range rows {
		a := ro.rec
		if a.collect {
			// The row record wrote for this observation (an agent has one a step).
			r.output(p, a, a.tr[len(a.tr)-p.lay.stride:], j, vals)
		}
		if !a.done {
			r.proto.sendAction(p, a, act.Action(j))
		}
	}
	r.perf.add(phAction, time.Since(t2))
	return true
}

// runModel runs the policy's session (and the tests' hook).
func (r *Runner) runModel(p *policy) error {
	err := p.sess.Run()
	if err == nil && r.runHook != nil {
		err = r.runHook()
	}
	return err
}

// inferRun runs the model over the policy's column run (rows first..first+n-1 of the
// columns, none of them done, no state to gather and nothing recorded per row by the
// connectors): the input is one copy of the observation column, the actions one copy into
// the action column, and each row is recorded after the run, all of it in one visit.
func (c *columnProtocol) inferRun(p *policy) {
	r := c.r
	k, m := p.run.first, p.run.n
	w := p.obsW
	t0 := time.Now()
	if err := p.sess.SetBatch(m); err != nil {
		panic(err) // m is within the capacity and the session is open
	}
	in := p.obsT.Float32()
	copy(in[:m*w], c.cols.Obs[k*w:(k+m)*w])
	t1 := time.Now()
	r.perf.add(phRawObs, t1.Sub(t0))
	if err := r.runModel(p); err != nil {
		r.runErr = err
		c.withdraw(p)
		return
	}
	t2 := time.Now()
	r.perf.add(phInference, t2.Sub(t1))
	act := p.conn.Action
	p.conn.AfterRun(r.rng, p.sess, p.slots[:m])
	// addColumns set the agents pending; their last action is the column's row.
	aw := p.actW
	copy(c.cols.Actions[k*aw:(k+m)*aw], act.Actions())
	c.sent += m
	if r.mode.collect {
		// Each row, its observation and outputs as record and output write them, goes to
		// its record's trajectory, or where the policy defers its rows, to the next block
		// of defRows, for its record to take in later (see pend).
		var vals []float32
		if p.hasValue {
			vals = p.valueT.Float32()
		}
		l := &p.lay
		s, dw := l.stride, p.distW
		pacts, logps, dists := act.PolicyActions(), act.LogPs(), act.AllDistInputs()
		res := c.cols.Results[k : k+m]
		if p.defRows == nil {
			for j, a := range c.recs[k : k+m] {
				if a.collect {
					tr := r.record(a, in[j*w:(j+1)*w], res[j].Reward)
					l.putOutputs(tr, vals, j, pacts[j*aw:(j+1)*aw], logps[j], dists[j*dw:(j+1)*dw])
				}
			}
		} else {
			if p.defBlocks == p.defMax {
				c.settle() // defRows is full
			}
			rows := p.deferredRow(p.defBlocks, k)[:m*s]
			p.defBlocks++
			// The block's rows are written column by column (what putOutputs writes a row
			// at a time), scatterRows rows at once, which stay in the cache across the
			// columns' passes.
			for j := 0; j < m; j += scatterRows {
				n, blk := min(scatterRows, m-j), rows[j*s:]
				scatter(blk, in[j*w:], s, w, n)
				scatterRewards(blk[l.rew:], res[j:j+n], s)
				if vals != nil {
					scatter(blk[l.vf:], vals[j:], s, 1, n)
				}
				scatter(blk[l.act:], pacts[j*aw:], s, aw, n)
				scatter(blk[l.logp:], logps[j:], s, 1, n)
				scatter(blk[l.dist:], dists[j*dw:], s, dw, n)
			}
			for j, n := range c.pend[k : k+m] {
				if n == 0 {
					c.ndefer++
				}
				c.pend[k+j] = n + 1
			}
		}
	}
	r.perf.add(phAction, time.Since(t2))
}

// scatterRewards writes the rewards of results, as float32, into dst at stride (the rewards
// column of inferRun's block).
func scatterRewards(dst []float32, results []env.StepResult, stride int) {
	if len(results) == 0 {
		return
	}
	_ = dst[(len(results)-1)*stride]
	for i := range results {
		dst[i*stride] = float32(results[i].Reward)
	}
}

// scatterRows is how many rows of a defRows block inferRun writes a column at a time (10 KB
// of CartPole rows with a value output).
const scatterRows = 256

// putOutputs writes row j of a model run's outputs into trajectory row tr: the value (vals is
// nil without a value output), the action act with its log-probability and distribution
// inputs. Every path that runs a model writes its rows' outputs with it (output, inferRun
// into records), but inferRun into defRows, which writes the same values a column at a time.
func (l *trajLayout) putOutputs(tr, vals []float32, j int, act []float32, logp float32, dist []float32) {
	if vals != nil {
		tr[l.vf] = vals[j]
	}
	put(tr[l.act:], act)
	tr[l.logp] = logp
	put(tr[l.dist:], dist)
}

// output writes the model's outputs for row j of the run into the agent's trajectory row tr:
// the value (vals is nil without a value output) and, unless the agent is done, the action
// with its log-probability, distribution inputs and RNN states.
func (r *Runner) output(p *policy, a *agentRec, tr []float32, j int, vals []float32) {
	l := &p.lay
	if a.done { // a final observation, run for its value only: no action
		if vals != nil {
			tr[l.vf] = vals[j]
		}
		clear(tr[l.act:l.outputs])
		return
	}
	act := p.conn.Action
	// A logged action is the row's action; the log-probability, distribution inputs and
	// value stay the policy's at the observation (RLlib buffers action_to_buffer with the
	// policy's extra outputs).
	l.putOutputs(tr, vals, j, a.rowAction(act.PolicyAction(j)), act.LogP(j), act.DistInputs(j))
	for s, off := range l.stateOut {
		copy(tr[off:off+p.stateW[s]], p.conn.State.Row(s, a.slot))
	}
}
