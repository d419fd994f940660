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
		need += len(p.infer) * p.actW
	}
	if cap(r.actBuf) < need {
		r.actBuf = make([]float32, 0, need+need/2)
	}
	r.actBuf = r.actBuf[:0]
	for _, p := range r.policies {
		if len(p.plain) > 0 {
			r.writeRows(p, p.plain)
		}
		if len(p.infer) > 0 {
			if p.random {
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
	}
}

// release gives a done agent's slot back.
func (r *Runner) release(p *policy, a *agentRec) {
	if a.done && a.slot >= 0 {
		p.release(a.slot)
		a.slot = -1
	}
}

// record appends a processed observation row to the record's trajectory.
func (r *Runner) record(a *agentRec, processed []float32) {
	a.obs = append(a.obs, processed...)
	if len(a.obs) > r.largeRows && !r.warnedLarge {
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
			r.record(a, p.rowBuf)
			if p.hasValue {
				a.vf = append(a.vf, 0)
			}
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
			ro.rec.actions = append(ro.rec.actions, act...)
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
	w := p.obsW
	st := p.conn.State
	act := p.conn.Action
	for start := 0; start < len(p.infer); start += p.cap {
		rows := p.infer[start:min(start+p.cap, len(p.infer))]
		m := len(rows)
		t0 := time.Now()
		if err := p.sess.SetBatch(m); err != nil {
			panic(err) // m is within the capacity and the session is open
		}
		in := p.obsT.Float32()
		bulk, k := false, -1
		if p.copies {
			if k = r.columnRows(rows, w); k >= 0 {
				copy(in[:m*w], r.cols.Obs[k*w:(k+m)*w])
				bulk = true
			}
		}
		if !bulk || st != nil || r.collect {
			for j, ro := range rows {
				a := ro.rec
				dst := in[j*w : (j+1)*w]
				if !bulk {
					p.agent.Write(dst, a.slot, ro.obs, ro.reward)
				}
				p.slots[j] = a.slot
				if a.collect {
					r.record(a, dst)
					if st != nil && !a.done {
						for s := range p.stateW {
							a.stateIn[s] = append(a.stateIn[s], st.Row(s, a.slot)...)
						}
					}
				}
			}
		} // else: nothing to record and no state to gather (the slots are for the state)
		if st != nil {
			st.Gather(p.slots[:m])
		}
		t1 := time.Now()
		r.perf.add(phRawObs, t1.Sub(t0))
		if err := p.sess.Run(); err != nil {
			r.runErr = err
			if r.ce != nil { // no row of this step gets its action
				for _, ro := range p.infer {
					ro.rec.pending = false
				}
			}
			return
		}
		t2 := time.Now()
		r.perf.add(phInference, t2.Sub(t1))
		p.conn.AfterRun(r.rng, p.sess, p.slots[:m])
		var vals []float32
		if p.hasValue {
			vals = p.valueT.Float32()
		}
		if bulk && !r.collect && !p.records {
			// Rows k..k+m-1 of the columns, none of them done (a final observation is a
			// copy): the actions go into the action column in one copy.
			aw := p.actW
			sent := r.cols.Actions[k*aw : (k+m)*aw]
			copy(sent, act.Actions()) // addColumn set lastAct and pending
			r.sent += m
			r.perf.add(phAction, time.Since(t2))
			continue
		}
		for j, ro := range rows {
			a := ro.rec
			if a.collect && p.hasValue {
				a.vf = append(a.vf, vals[j])
			}
			if a.done {
				continue
			}
			if a.collect {
				a.actions = append(a.actions, act.PolicyAction(j)...)
				a.logp = append(a.logp, act.LogP(j))
				a.dist = append(a.dist, act.DistInputs(j)...)
				for s := range p.stateW {
					a.stateOut[s] = append(a.stateOut[s], st.Row(s, a.slot)...)
				}
			}
			r.send(p, a, act.Action(j))
		}
		r.perf.add(phAction, time.Since(t2))
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
	if ep.endCalled || ep.extra {
		return
	}
	ep.endCalled = true
	r.episodesDone++
	r.progress.returnSum += ep.TotalReward
	r.cb.OnEpisodeEnd(r, ep)
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
	clear(ep.agents)
	ep.agents = ep.agents[:0]
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
	b := r.out.PolicyBatches[p.id]
	w := p.obsW
	b.Obs = append(b.Obs, a.obs[:n*w]...)
	b.NewObs = append(b.NewObs, a.obs[w:(n+1)*w]...)
	b.Actions = append(b.Actions, a.actions[:n*p.actW]...)
	b.Rewards = append(b.Rewards, a.rewards[:n]...)
	b.Terminateds = append(b.Terminateds, a.terms[:n]...)
	b.Truncateds = append(b.Truncateds, a.truncs[:n]...)
	for i := range int32(n) {
		b.EpsID = append(b.EpsID, a.epsID)
		b.EnvID = append(b.EnvID, a.envID)
		b.AgentIndex = append(b.AgentIndex, a.index)
		b.T = append(b.T, a.t0+i)
	}
	if !p.random {
		b.ActionDistInputs = append(b.ActionDistInputs, a.dist[:n*p.distW]...)
		b.ActionLogp = append(b.ActionLogp, a.logp[:n]...)
	}
	if p.hasValue {
		b.VfPreds = append(b.VfPreds, a.vf[:n]...)
	}
	for s, sw := range p.stateW {
		b.StateIn[s] = append(b.StateIn[s], a.stateIn[s][:n*sw]...)
		b.StateOut[s] = append(b.StateOut[s], a.stateOut[s][:n*sw]...)
	}
	if len(p.stateW) > 0 {
		for rem := n; rem > 0; rem -= r.maxSeq {
			b.SeqLens = append(b.SeqLens, int32(min(rem, r.maxSeq)))
		}
	}
	if r.cfg.GAE != nil {
		r.gae(b, a, n)
	}
	b.Count += n
	r.out.AgentSteps += n
}

// gae appends advantages and value targets for the record's n complete transitions (RLlib's
// compute_advantages with use_gae): the chunk is bootstrapped with the value of its last new
// observation unless it ends with a termination.
func (r *Runner) gae(b *SampleBatch, a *agentRec, n int) {
	gamma, lambda := r.cfg.GAE.Gamma, r.cfg.GAE.Lambda
	p := a.pol
	v := func(i int) float64 {
		if !p.hasValue || i >= len(a.vf) {
			return 0
		}
		return float64(a.vf[i])
	}
	last := 0.0
	if !a.terms[n-1] {
		last = v(n)
	}
	off := len(b.Advantages)
	b.Advantages = append(b.Advantages, make([]float32, n)...)
	b.ValueTargets = append(b.ValueTargets, make([]float32, n)...)
	adv, vt := b.Advantages[off:], b.ValueTargets[off:]
	acc := 0.0
	next := last
	for i := n - 1; i >= 0; i-- {
		vi := v(i)
		delta := float64(a.rewards[i]) + gamma*next - vi
		acc = delta + gamma*lambda*acc
		adv[i] = float32(acc)
		vt[i] = float32(acc + vi)
		next = vi
	}
}
