package envrunner

import (
	"maps"
	"time"

	"github.com/onnxrl/sampler/internal/grow"
)

// act computes the actions of every queued row, policy by policy, and records the
// trajectory data.
func (r *Runner) act() {
	r.sent = 0
	need := 0
	for _, p := range r.policies {
		need += len(p.infer) * p.actW // a column run's actions go to the action column
	}
	if cap(r.actBuf) < need {
		r.actBuf = make([]float32, 0, need+need/2)
	}
	r.actBuf = r.actBuf[:0]
	for _, p := range r.policies {
		if len(p.plain) > 0 {
			r.writeRows(p, p.plain)
		}
		if len(p.infer) > 0 || p.run.m > 0 {
			if p.random {
				r.spell(p)
				r.randomRows(p)
			} else {
				r.inferRows(p)
			}
		}
		// Done agents give their slots back: every plain row's, and those of the infer rows
		// that are final observations (counted by take; most steps have none).
		rows := p.plain
		if p.inferDone > 0 {
			rows = p.infer
			p.inferDone = 0
			for _, ro := range p.plain {
				r.release(p, ro.rec)
			}
		}
		for _, ro := range rows {
			r.release(p, ro.rec)
		}
		clear(p.plain)
		clear(p.infer)
		p.plain, p.infer = p.plain[:0], p.infer[:0]
		p.run = colRun{}
	}
}

// release gives a done agent's slot back.
func (r *Runner) release(p *policy, a *agentRec) {
	if a.done && a.slot >= 0 {
		p.release(a.slot)
		a.slot = -1
	}
}

// record appends a trajectory row for a processed observation and returns it (the rest of
// the row is the caller's to write; see newRow).
func (r *Runner) record(a *agentRec, processed []float32) []float32 {
	row := a.newRow()
	put(row, processed)
	r.recorded(a)
	return row
}

// recorded does the bookkeeping of a record's new trajectory row: the large-batch warning,
// and the list of records with data. Most rows need neither; the test is kept small enough
// to inline on the per-row path.
func (r *Runner) recorded(a *agentRec) {
	if (len(a.tr) > a.pol.large && !r.warnedLarge) || (!r.complete && !a.listed) {
		r.recordedSlow(a)
	}
}

func (r *Runner) recordedSlow(a *agentRec) {
	if len(a.tr) > a.pol.large && !r.warnedLarge {
		r.warnLarge(a)
	}
	if !r.complete {
		r.keep(a)
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
			clear(r.record(a, p.rowBuf)[p.obsW:])
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
			copy(ro.rec.lastRow()[p.lay.act:], act)
		}
		r.send(p, ro.rec, act)
	}
	r.perf.add(phAction, time.Since(t1))
}

// send queues the agent's action for SendActions (or writes it into the action column).
func (r *Runner) send(p *policy, a *agentRec, act []float32) {
	var sent []float32
	if r.ce != nil {
		e := int(a.envID)
		sent = r.cols.ActionRow(e)
		copy(sent, act)
		r.sent++
	} else {
		off := len(r.actBuf)
		r.actBuf = append(r.actBuf, act...)
		sent = r.actBuf[off : off+p.actW : off+p.actW]
		x := grow.Zero(&r.actions)
		x.Env, x.Agent, x.Action = a.ep.EnvID, a.id, sent
	}
	if r.ce != nil {
		// The row is written again only with the agent's next action (an ended episode's
		// OnEpisodeEnd comes before its sub-environment's next action).
		a.lastAct = sent
	} else {
		// r.actBuf is refilled in the next step, before OnEpisodeEnd may ask for the last
		// action: keep a copy.
		a.lastBuf = append(a.lastBuf[:0], act...)
		a.lastAct = a.lastBuf
	}
	a.pending = true
	if p.records {
		p.agent.RecordAction(a.slot, sent)
	}
}

// inferRows runs the model over the policy's rows, in chunks of the session's capacity.
func (r *Runner) inferRows(p *policy) {
	if p.run.m > 0 && (len(p.infer) > 0 || p.run.m > p.cap || !p.copies || p.conn.State != nil || p.records) {
		r.spell(p)
	}
	if p.run.m > 0 {
		r.inferChunk(p, nil, p.run.k, p.run.m)
		return
	}
	for start := 0; start < len(p.infer); start += p.cap {
		rows := p.infer[start:min(start+p.cap, len(p.infer))]
		if !r.inferChunk(p, rows, -1, len(rows)) {
			return
		}
	}
}

// inferChunk runs the model over rows, or, when rows is nil, over the policy's column run:
// rows k..k+m-1 of the columns, the agents of colRec (see colRun). It reports false when the
// run failed (r.runErr is set; no row of the step gets an action).
func (r *Runner) inferChunk(p *policy, rows []row, k, m int) bool {
	w := p.obsW
	st := p.conn.State
	act := p.conn.Action
	t0 := time.Now()
	if err := p.sess.SetBatch(m); err != nil {
		panic(err) // m is within the capacity and the session is open
	}
	in := p.obsT.Float32()
	bulk := rows == nil
	if bulk {
		copy(in[:m*w], r.cols.Obs[k*w:(k+m)*w])
	} else if p.copies {
		if k = r.columnRows(rows, w); k >= 0 {
			copy(in[:m*w], r.cols.Obs[k*w:(k+m)*w])
			bulk = true
		}
	}
	// late: the rows are rows k..k+m-1 of the columns (none of them done: a final
	// observation is a copy) and there is no state to gather, so a row is recorded
	// after the run, all of it in one visit (the input rows stay as they are).
	late := bulk && st == nil && !p.records
	if !late && (!bulk || st != nil || r.collect) {
		for j, ro := range rows {
			a := ro.rec
			dst := in[j*w : (j+1)*w]
			if !bulk {
				p.agent.Write(dst, a.slot, ro.obs, ro.reward)
			}
			p.slots[j] = a.slot
			if a.collect {
				tr := r.record(a, dst)
				if st != nil && !a.done {
					for s, off := range p.lay.stateIn {
						copy(tr[off:off+p.stateW[s]], st.Row(s, a.slot))
					}
				}
			}
		}
	} // else: nothing to record yet and no state to gather (the slots are for the state)
	if st != nil {
		st.Gather(p.slots[:m])
	}
	t1 := time.Now()
	r.perf.add(phRawObs, t1.Sub(t0))
	err := p.sess.Run()
	if err == nil && r.runHook != nil {
		err = r.runHook()
	}
	if err != nil {
		r.runErr = err
		if !late {
			for _, ro := range rows { // the rows recorded for this run get no model output
				if ro.rec.collect {
					clear(ro.rec.lastRow()[w:])
				}
			}
		}
		if r.ce != nil { // no row of this step gets its action
			r.unsend(p)
		}
		return false
	}
	t2 := time.Now()
	r.perf.add(phInference, t2.Sub(t1))
	p.conn.AfterRun(r.rng, p.sess, p.slots[:m])
	var vals []float32
	if p.hasValue {
		vals = p.valueT.Float32()
	}
	bulkAct := bulk && !p.records && (late || !r.collect)
	if bulkAct {
		// The actions go into the action column in one copy (addColumn set pending; the
		// last action is the column's row).
		aw := p.actW
		copy(r.cols.Actions[k*aw:(k+m)*aw], act.Actions())
		r.sent += m
	}
	switch {
	case late && r.collect:
		// record and output for rows that are neither done nor have states, written
		// out (two calls a row cost more than what they do here).
		l := &p.lay
		aw, dw := p.actW, p.distW
		pacts, logps, dists := act.PolicyActions(), act.LogPs(), act.AllDistInputs()
		for j := range m {
			var a *agentRec
			if rows != nil {
				a = rows[j].rec
			} else {
				a = r.colRec[k+j]
			}
			if !a.collect {
				continue
			}
			tr := a.newRow()
			put(tr, in[j*w:(j+1)*w])
			r.recorded(a)
			if vals != nil {
				tr[l.vf] = vals[j]
			}
			put(tr[l.act:], pacts[j*aw:(j+1)*aw])
			tr[l.logp] = logps[j]
			put(tr[l.dist:], dists[j*dw:(j+1)*dw])
		}
	case !bulkAct:
		for j, ro := range rows {
			a := ro.rec
			if a.collect {
				// The row record wrote for this observation (an agent has one a step).
				r.output(p, a, a.tr[len(a.tr)-p.lay.stride:], j, vals)
			}
			if !a.done {
				r.send(p, a, act.Action(j))
			}
		}
	}
	r.perf.add(phAction, time.Since(t2))
	return true
}

// unsend takes back the actions of every row of the policy in this step (its model run
// failed): the agents wait for them no longer, and a sub-environment on the fast path leaves
// it (the fast path takes a waiting agent for granted).
func (r *Runner) unsend(p *policy) {
	for e := p.run.k; e < p.run.k+p.run.m; e++ {
		r.syncCol(e)
		r.colRec[e].pending = false
	}
	for _, ro := range p.infer {
		r.syncCol(int(ro.rec.envID))
		ro.rec.pending = false
	}
}

// spell turns the policy's column run into rows at the front of p.infer (see colRun).
func (r *Runner) spell(p *policy) {
	rows := p.spare[:0]
	for e := p.run.k; e < p.run.k+p.run.m; e++ {
		pushRow(&rows, r.colRec[e], r.cols.ObsRow(e), r.cols.Results[e].Reward)
	}
	rows = append(rows, p.infer...)
	clear(p.infer)
	p.spare, p.infer = p.infer[:0], rows
	p.run = colRun{}
}

// output writes the model's outputs for row j of the run into the agent's trajectory row tr:
// the value (vals is nil without a value output) and, unless the agent is done, the action
// with its log-probability, distribution inputs and RNN states.
func (r *Runner) output(p *policy, a *agentRec, tr []float32, j int, vals []float32) {
	l := &p.lay
	if vals != nil {
		tr[l.vf] = vals[j]
	}
	if a.done { // a final observation, run for its value only: no action
		clear(tr[l.act:])
		return
	}
	act := p.conn.Action
	put(tr[l.act:], act.PolicyAction(j))
	tr[l.logp] = act.LogP(j)
	put(tr[l.dist:], act.DistInputs(j))
	for s, off := range l.stateOut {
		copy(tr[off:off+p.stateW[s]], p.conn.State.Row(s, a.slot))
	}
}

// finish ends an episode: callbacks, metrics, its agents' data to the batch (complete
// mode) or left for the next cut (truncate mode).
func (r *Runner) finish(ep *Episode) {
	if ep.extra {
		r.drop(ep)
		return
	}
	r.endEpisode(ep)
	if r.complete && r.collect && ep.TrainingEnabled {
		r.out.EnvSteps += ep.Length
	}
	for _, a := range ep.agents {
		if a.slot >= 0 {
			a.pol.release(a.slot)
			a.slot = -1
		}
		a.ep = nil
		if r.complete {
			r.emit(a)
		}
		if !a.listed {
			a.pol.putRec(a)
		}
	}
	r.recycle(ep)
}

// endEpisode calls OnEpisodeEnd and records the episode's metrics, once. The runner calls it
// as soon as the episode's last step is taken in, before the sub-environment's next episode
// starts (as RLlib does); the episode's data follows after the step's inference.
func (r *Runner) endEpisode(ep *Episode) {
	r.syncEp(ep)
	if ep.endCalled || ep.extra {
		return
	}
	ep.endCalled = true
	r.episodesDone++
	r.progress.returnSum += ep.TotalReward
	if r.cb.end != nil {
		r.cb.end.OnEpisodeEnd(r, ep)
	}
	m := RolloutMetrics{Worker: r.cfg.Worker, EpisodeID: ep.ID, EpisodeLength: ep.Length, EpisodeReturn: ep.TotalReward}
	if n := len(ep.agents); n > 1 {
		// The callers keep the metrics: cut them from a slab that is never written twice,
		// rather than allocating (and growing) a slice per episode.
		if cap(r.rewards)-len(r.rewards) < n {
			r.rewards = make([]AgentReward, 0, max(256, n))
		}
		off := len(r.rewards)
		r.rewards = ep.AgentRewards(r.rewards)
		m.AgentReturns = r.rewards[off:len(r.rewards):len(r.rewards)]
	}
	if len(ep.CustomMetrics) > 0 {
		m.CustomMetrics = maps.Clone(ep.CustomMetrics)
	}
	r.metrics = append(r.metrics, m)
}

// fault drops an episode whose sub-environment failed (RLlib's faulty episode): its data is
// discarded and it counts as faulty, not in the episode metrics.
func (r *Runner) fault(ep *Episode) {
	r.faulty++
	if ep.ended { // it was about to finish in this step
		for i, e := range r.ending {
			if e == ep {
				r.ending = append(r.ending[:i], r.ending[i+1:]...)
				break
			}
		}
	}
	r.drop(ep)
}

// drop ends an episode without recording anything of it.
func (r *Runner) drop(ep *Episode) {
	r.syncEp(ep)
	for _, a := range ep.agents {
		if a.slot >= 0 {
			a.pol.release(a.slot)
			a.slot = -1
		}
		a.ep = nil
		a.clearTrajectory()
		if !a.listed {
			a.pol.putRec(a)
		}
	}
	r.recycle(ep)
}

func (r *Runner) recycle(ep *Episode) {
	if r.episodeAt(ep.EnvID) == ep {
		r.episodes[ep.EnvID] = nil
	}
	ep.clearAgents()
	clear(ep.CustomMetrics)
	clear(ep.UserData)
	ep.Length, ep.TotalReward, ep.ended, ep.stepped, ep.faulty, ep.endCalled = 0, 0, false, false, false, false
	r.epPool = append(r.epPool, ep)
}

// emit appends the record's complete transitions to its policy's batch in r.out, with GAE
// when configured.
func (r *Runner) emit(a *agentRec) {
	n := a.n
	if n == 0 || !a.collect {
		return
	}
	p := a.pol
	l := &p.lay
	b := r.out.PolicyBatches[p.id]
	w, aw, dw, s := p.obsW, p.actW, p.distW, l.stride
	tr := a.tr[:(n+1)*s] // rows o_0..o_n: o_n is the last transition's new observation
	obs, newObs, acts := grow.N(&b.Obs, n*w), grow.N(&b.NewObs, n*w), grow.N(&b.Actions, n*aw)
	rews, terms, truncs := grow.N(&b.Rewards, n), grow.N(&b.Terminateds, n), grow.N(&b.Truncateds, n)
	eps, envs, idx, ts := grow.N(&b.EpsID, n), grow.N(&b.EnvID, n), grow.N(&b.AgentIndex, n), grow.N(&b.T, n)
	var dist, logp, vf []float32
	model := !p.random
	if model {
		dist, logp = grow.N(&b.ActionDistInputs, n*dw), grow.N(&b.ActionLogp, n)
	}
	if p.hasValue {
		vf = grow.N(&b.VfPreds, n)
	}
	// Column by column: each loop is a few instructions a row, and the record's rows (a few
	// kilobytes) stay in L1 across the passes.
	strided(obs, tr, s, w, n)
	// new_obs is obs one row on: all but its last row are in the column just written.
	copy(newObs, obs[w:])
	copy(newObs[(n-1)*w:], tr[n*s:n*s+w])
	strided(acts, tr[l.act:], s, aw, n)
	strided(rews, tr[l.rew:], s, 1, n)
	// Only the last transition can end the episode.
	clear(terms)
	clear(truncs)
	terms[n-1], truncs[n-1] = a.end&flagTerminated != 0, a.end&flagTruncated != 0
	fill(eps, a.epsID)
	fill(envs, a.envID)
	fill(idx, a.index)
	for i := range ts {
		ts[i] = a.t0 + int32(i)
	}
	if model {
		strided(dist, tr[l.dist:], s, dw, n)
		strided(logp, tr[l.logp:], s, 1, n)
	}
	if vf != nil {
		strided(vf, tr[l.vf:], s, 1, n)
	}
	for k, sw := range p.stateW {
		b.StateIn[k] = gather(b.StateIn[k], tr, s, l.stateIn[k], sw, n)
		b.StateOut[k] = gather(b.StateOut[k], tr, s, l.stateOut[k], sw, n)
	}
	if len(p.stateW) > 0 {
		for rem := n; rem > 0; rem -= r.maxSeq {
			b.SeqLens = append(b.SeqLens, int32(min(rem, r.maxSeq)))
		}
	}
	if r.cfg.GAE != nil {
		last := 0.0 // the value of o_n, which bootstraps the chunk unless it ends in a termination
		if vf != nil && !terms[n-1] {
			last = float64(tr[n*s+l.vf])
		}
		r.gae(b, rews, vf, last)
	}
	b.Count += n
	r.out.AgentSteps += n
}

// strided sets dst to n rows of w values: row i is src[i*stride:][:w].
func strided(dst, src []float32, stride, w, n int) {
	if n == 0 {
		return
	}
	_ = src[(n-1)*stride+w-1]
	switch w {
	case 1:
		dst = dst[:n]
		for i := range dst {
			dst[i] = src[i*stride]
		}
	case 2:
		dst = dst[:2*n]
		for i := 0; i < n; i++ {
			*(*[2]float32)(dst[2*i:]) = *(*[2]float32)(src[i*stride:])
		}
	case 4:
		dst = dst[:4*n]
		for i := 0; i < n; i++ {
			*(*[4]float32)(dst[4*i:]) = *(*[4]float32)(src[i*stride:])
		}
	default:
		for i := range n {
			copy(dst[i*w:(i+1)*w], src[i*stride:i*stride+w])
		}
	}
}

// fill sets every element of dst to v.
func fill[T any](dst []T, v T) {
	for i := range dst {
		dst[i] = v
	}
}

// gather appends n rows of w values to dst: row i is src[i*stride+off:][:w].
func gather(dst, src []float32, stride, off, w, n int) []float32 {
	strided(grow.N(&dst, n*w), src[off:], stride, w, n)
	return dst
}

// put copies src into the start of dst; the common widths as one array (no call).
func put(dst, src []float32) {
	switch len(src) {
	case 1:
		dst[0] = src[0]
	case 2:
		*(*[2]float32)(dst) = [2]float32(src)
	case 4:
		*(*[4]float32)(dst) = [4]float32(src)
	default:
		copy(dst, src)
	}
}

// gae appends advantages and value targets for a chunk of transitions with rewards rews
// and values vf (nil: all 0), bootstrapped with last (RLlib's compute_advantages with
// use_gae).
func (r *Runner) gae(b *SampleBatch, rews, vf []float32, last float64) {
	gamma, lambda := r.cfg.GAE.Gamma, r.cfg.GAE.Lambda
	n := len(rews)
	adv, vt := grow.N(&b.Advantages, n), grow.N(&b.ValueTargets, n)
	acc := 0.0
	next := last
	gl := gamma * lambda
	for i := n - 1; i >= 0; i-- {
		vi := 0.0
		if vf != nil {
			vi = float64(vf[i])
		}
		delta := float64(rews[i]) + gamma*next - vi
		acc = delta + gl*acc
		adv[i] = float32(acc)
		vt[i] = float32(acc + vi)
		next = vi
	}
}
