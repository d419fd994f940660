package envrunner

import (
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/internal/prefetch"
)

// useColumns switches the runner to the columnar protocol when the environment offers it
// (env.Columnar: a VectorEnv's sub-environments, one agent each) and every policy's rows
// match its columns. The protocol changes how observations come in and actions go out,
// nothing else: episodes, batches, metrics and callbacks are the same as through Poll and
// SendActions.
func (r *Runner) useColumns() {
	ce, ok := r.env.(env.Columnar)
	if !ok {
		return
	}
	c := ce.Columns()
	if c.ObsSize <= 0 || len(c.Obs) != len(c.Results)*c.ObsSize || len(c.Actions) != len(c.Results)*c.ActionSize ||
		len(c.Reset) != len(c.Results) {
		return
	}
	for _, p := range r.policies {
		if p.agent.InputSize() != c.ObsSize || p.actW != c.ActionSize {
			return
		}
	}
	r.ce, r.cols = ce, c
	r.colRec = make([]*agentRec, len(c.Results))
	r.colStat = make([]colStat, len(c.Results))
}

// colStat holds the running totals of a sub-environment's episode while addColumns takes
// its rows on the fast path, in one dense slice rather than in the episode and its agent
// record (two more cache lines a row). While fast is set, the episode's TotalReward and
// Length and its agent's reward and steps are stale: syncCol writes them back, and every
// path that reads or changes the episode other than the fast path calls it first.
type colStat struct {
	pol     *policy // the agent's
	ret     float64 // the episode's TotalReward, which is also its one agent's reward
	steps   int     // transitions taken on the fast path since the last write-back
	fast    bool
	collect bool // the agent's
}

// fastCol puts sub-environment e's episode on addColumns' fast path when its next row can
// take it: a running episode, counted, of one agent that waits for the row (addColumn has just
// taken the agent's row), without OnEpisodeStep callbacks.
func (r *Runner) fastCol(e env.EnvID, ep *Episode, a *agentRec) {
	if r.stepCB || a.ep != ep || a.done || !a.pending || !a.inCol || ep.ended || ep.extra ||
		len(ep.agents) != 1 || a.reward != ep.TotalReward || int(a.envID) != e {
		return
	}
	r.colStat[e] = colStat{pol: a.pol, ret: a.reward, fast: true, collect: a.collect}
}

// syncCol takes sub-environment e off the fast path, writing its totals back.
func (r *Runner) syncCol(e env.EnvID) {
	if e < 0 || e >= len(r.colStat) || !r.colStat[e].fast {
		return
	}
	cs := &r.colStat[e]
	a := r.colRec[e]
	ep := a.ep
	a.reward, ep.TotalReward = cs.ret, cs.ret
	a.steps += cs.steps
	ep.Length += cs.steps
	*cs = colStat{}
}

// syncEp is syncCol for the episode ep, when it is the one on the fast path.
func (r *Runner) syncEp(ep *Episode) {
	if e := ep.EnvID; e >= 0 && e < len(r.colStat) && r.colStat[e].fast && r.colRec[e].ep == ep {
		r.syncCol(e)
	}
}

// addColumns takes in the rows of the ready sub-environments, as addColumn does for each,
// with the common case inline: a sub-environment on the fast path (see colStat and fastCol)
// whose row is not its episode's last. It does what take does for such a row, without
// visiting the episode, nor the agent record unless the row is recorded;
// TestColumnarMatchesPollSend holds the two protocols to the same results.
func (r *Runner) addColumns(ready []int) {
	c := &r.cols
	recs, res, reset, stats := r.colRec, c.Results, c.Reset, r.colStat
	// Counters and the policy's row list are kept in locals through the loop (an increment
	// in memory per row would chain each row's store to the next row's load).
	steps := 0
	var p *policy
	var infer []row
	var stride, rew int // p's trajectory layout
	for _, e := range ready {
		if e >= len(stats) {
			r.addColumn(e)
			continue
		}
		cs, rs := &stats[e], &res[e]
		if !cs.fast || rs.Terminated || rs.Truncated || reset[e] {
			if p != nil { // addColumn appends to the lists too
				p.infer, p = infer, nil
			}
			r.addColumn(e)
			continue
		}
		reward := rs.Reward
		cs.ret += reward
		cs.steps++
		steps++
		// The agent stays pending: the row gets its action in this step.
		if cs.pol != p {
			if p != nil {
				p.infer = infer
			}
			p = cs.pol
			infer = p.infer
			stride, rew = p.lay.stride, p.lay.rew
		}
		a := recs[e]
		if cs.collect {
			// The transition's reward (its end flags stay 0: not done).
			a.tr[a.n*stride+rew] = float32(reward)
			a.n++
			prefetch.Float32(a.tr, len(a.tr)+stride-1) // a.prefetchRow, inline
		}
		// The row extends the policy's column run where it can (no row of its own).
		if run := &p.run; len(infer) == 0 && (run.m == 0 || run.k+run.m == e) {
			if run.m == 0 {
				run.k = e
			}
			run.m++
		} else {
			pushRow(&infer, a, c.ObsRow(e), reward)
		}
	}
	if p != nil {
		p.infer = infer
	}
	r.totalAgentSteps += int64(steps)
	r.sinceCutAgent += steps
	r.stepped += steps
}

// addColumn takes in sub-environment e's row of the columns, as statuses and addRow do for
// a polled status and agent.
func (r *Runner) addColumn(e env.EnvID) {
	c := &r.cols
	res := &c.Results[e]
	r.syncCol(e)
	ep := r.episodeAt(e)
	if c.Reset[e] {
		if ep != nil && !ep.ended {
			ep.ended = true
			r.ending = append(r.ending, ep)
			r.endEpisode(ep)
		}
		ep = r.startEpisode(e, true)
	}
	if ep != nil && (res.Terminated || res.Truncated) && !ep.ended {
		ep.ended = true
		r.ending = append(r.ending, ep)
		r.resets = append(r.resets, e)
	}
	if ep == nil || (ep.ended && !r.isEnding(ep)) {
		ep = r.startEpisode(e, true)
	}
	// colRec caches ep.agents[0] by sub-environment (one cache line fewer per row).
	a := r.colRec[e]
	if a == nil || a.ep != ep {
		if len(ep.agents) > 0 {
			a = ep.agents[0]
		} else if a = r.newAgent(ep, env.DefaultAgentID); a == nil {
			return // an unknown policy: Step reports r.mapErr
		}
		r.colRec[e] = a
	}
	if a.done {
		return
	}
	r.take(a, c.ObsRow(e), res.Reward, res.Terminated, res.Truncated, res.Info, nil, true)
	if !a.done {
		// The row gets its action in this step, in the action column (send's work, done
		// here where the record is at hand, so that a bulk send need not visit it; the last
		// action is the column's row, as inCol says).
		a.pending = true
		r.fastCol(e, ep, a)
	} else if a.steps > 0 {
		// The final observation: the record keeps its values, and the last action stays
		// in the column until the sub-environment's next episode acts.
		a.lastAct = c.ActionRow(e)
	}
}

// columnRows returns k when the rows' observations are rows k, k+1, ... of the columns, in
// order (the model's input rows are then one copy of them), or -1.
func (r *Runner) columnRows(rows []row, w int) int {
	if r.ce == nil || len(rows) == 0 {
		return -1
	}
	obs := r.cols.Obs
	k := r.rowIndex(rows[0].obs, w)
	if k < 0 || (k+len(rows))*w > len(obs) {
		return -1
	}
	for j := range rows {
		if &rows[j].obs[0] != &obs[(k+j)*w] {
			return -1
		}
	}
	return k
}

// rowIndex returns the row of the columns that obs is, or -1.
func (r *Runner) rowIndex(obs []float32, w int) int {
	if len(obs) != w {
		return -1
	}
	for e := range r.cols.Results {
		if &r.cols.Obs[e*w] == &obs[0] {
			return e
		}
	}
	return -1
}
