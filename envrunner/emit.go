package envrunner

import (
	"math"
	"unsafe"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/internal/grow"
	"github.com/onnxrl/sampler/internal/ntcopy"
	"github.com/onnxrl/sampler/internal/prefetch"
)

// cut emits the complete transitions of every listed record into out and keeps, of the
// running ones, the last observation and pending action. When the step that filled the
// fragment went beyond it (stepDone), the transitions past the fragment's end stay for the
// next cut, and so do their env steps.
func (r *Runner) cut(out *MultiAgentBatch) {
	left := 0 // env steps beyond the fragment
	if r.mode.exact && r.frag.sinceCutEnv > r.mode.target {
		left = r.frag.sinceCutEnv - r.mode.target
	}
	out.EnvSteps += r.frag.sinceCutEnv - left
	leftAgent := 0
	kept := r.frag.listed[:0]
	for i, a := range r.frag.listed {
		if i+1 < len(r.frag.listed) {
			// The next record's trajectory, cold after a fragment's worth of steps, comes
			// in while this one is emitted (-0.8 ns/env-step of Take's 14).
			prefetch.Float32s(r.frag.listed[i+1].tr)
		}
		k := a.n
		if a.cutAt > 0 {
			k = int(a.cutAt) - 1
			a.cutAt = 0
		}
		r.emitFirst(out, a, k, r.rowsToCut(a, k))
		if a.ep == nil && k == a.n { // its episode ended: the record is finished
			a.listed = false
			a.pol.putRec(a)
			continue
		}
		a.dropFirst(k)
		leftAgent += a.n
		if a.rows() > 0 {
			kept = append(kept, a)
		} else {
			a.listed = false
		}
	}
	clear(r.frag.listed[len(kept):])
	r.frag.listed = kept
	r.frag.sinceCutEnv, r.frag.sinceCutAgent = left, leftAgent
}

// cutRows returns the number of rows cut emits for policy p.
func (r *Runner) cutRows(p *policy) int {
	n := 0
	for _, a := range r.frag.listed {
		if a.pol == p && a.collect {
			if a.cutAt > 0 {
				n += int(a.cutAt) - 1
			} else {
				n += a.n
			}
		}
	}
	return n
}

// emit appends the record's complete transitions to its policy's batch in r.out (the
// complete_episodes batch), with GAE when configured.
func (r *Runner) emit(a *agentRec) { r.emitFirst(&r.out, a, a.n, a.tr) }

// rowsToCut returns the rows of record a that cut emits its first k complete transitions
// from. The rows its protocol holds for it (columnProtocol.pend: the last ones, a row a
// page apart) are read once, with the record's own, into frag.joined, which the columns'
// passes then read in L1; the record takes in only the last observation's row, which it
// keeps. Taking every row into the trajectory first (a store to memory, read back by the
// passes) cost more: BenchmarkSampleRun greedy at 4096 sub-environments, three alternating
// pairs, take-ns/env-step 17.3-20.2 against 21.9-23.7, cpu-ratio 0.806-0.818 against
// 0.766-0.788. Where the record keeps transitions for the next fragment (cutAt), it takes
// them all in and cut reads its trajectory.
func (r *Runner) rowsToCut(a *agentRec, k int) []float32 {
	def, ds, nd := r.proto.deferred(a)
	switch {
	case nd == 0:
		return a.tr
	case k < a.n || !a.collect:
		r.proto.takeDeferred(a, 0)
		return a.tr
	}
	s := a.pol.lay.stride
	j := append(r.frag.joined[:0], a.tr...)
	ntcopy.StridedCached(grow.N(&j, nd*s), def, ds, s, nd)
	r.frag.joined = j
	r.proto.takeDeferred(a, nd-1) // the last observation's row, which the record keeps
	return j
}

// emitFirst appends the first n complete transitions of the record (n <= a.n) to its policy's
// batch in out, from tr, its rows (o_0..o_n: o_n is the last transition's new observation):
// the end flags are those of the last transition, when n is all of them; GAE bootstraps with
// the value of observation n.
func (r *Runner) emitFirst(out *MultiAgentBatch, a *agentRec, n int, tr []float32) {
	if n == 0 || !a.collect {
		return
	}
	p := a.pol
	l := &p.lay
	b := out.PolicyBatches[p.id]
	w, aw, dw, s := p.obsW, p.actW, p.distW, l.stride
	tr = tr[:(n+1)*s]
	obs, newObs, acts := grow.N(&b.Obs, n*w), grow.N(&b.NewObs, n*w), grow.N(&b.Actions, n*aw)
	rews := grow.N(&b.Rewards, n)
	var dist, logp, vf []float32
	model := !p.random
	if model {
		dist, logp = grow.N(&b.ActionDistInputs, n*dw), grow.N(&b.ActionLogp, n)
	} else {
		logp = grow.N(&b.ActionLogp, n)
	}
	if p.hasValue {
		vf = grow.N(&b.VfPreds, n)
	}
	// Column by column: each loop is a few instructions a row, and the record's rows (a few
	// kilobytes) stay in L1 across the passes. The columns of a batch of many
	// sub-environments (tens of megabytes) are long out of the cache when the next fragment
	// writes them again, and an ordinary store would read each line from memory first: the
	// wide columns take non-temporal stores (ntcopy; Take fences them), and what reads a
	// column back below reads the trajectory instead.
	ntcopy.Strided(obs, tr, s, w, n)
	ntcopy.Strided(newObs, tr[s:], s, w, n) // obs one row on
	if model {
		ntcopy.Strided(acts, tr[l.act:], s, aw, n)
	} else { // read back by randomLogp below
		ntcopy.StridedCached(acts, tr[l.act:], s, aw, n)
	}
	ntcopy.Strided(rews, tr[s+l.rew:], s, 1, n) // transition i's reward is row i+1's (trajLayout.rew)
	terminated := emitIDs(b, a, n, tr, s, l.t)
	if model {
		ntcopy.Strided(dist, tr[l.dist:], s, dw, n)
		ntcopy.Strided(logp, tr[l.logp:], s, 1, n)
	} else { // a random policy's: the uniform sampling's (of the logged action, where there is one)
		p.randomLogp.fill(logp, acts, aw)
	}
	if vf != nil {
		ntcopy.Strided(vf, tr[l.vf:], s, 1, n)
	}
	if len(p.stateW) > 0 {
		r.emitStates(b, p, n, tr)
	}
	if len(a.infos) > 0 || len(b.Infos) > 0 {
		emitInfos(b, a, n)
	}
	if r.cfg.GAE != nil {
		last := 0.0 // the value of o_n, which bootstraps the chunk unless it ends in a termination
		vfAt := -1
		if vf != nil {
			vfAt = l.vf
			if !terminated {
				last = float64(tr[n*s+l.vf])
			}
		}
		r.gae(b, tr, s, s+l.rew, vfAt, n, last) // rewards one row on, as above
	}
	b.Count += n
	out.AgentSteps += n
}

// emitIDs appends the end flags and ids of the record's first n transitions (tr its rows,
// s values each; t the rows' t, -1 when they have none) to b and reports whether the last
// of them terminated the episode: only the last transition can end it, when n is all of
// them.
func emitIDs(b *SampleBatch, a *agentRec, n int, tr []float32, s, t int) (terminated bool) {
	terms, truncs := grow.N(&b.Terminateds, n), grow.N(&b.Truncateds, n)
	eps, envs, idx, ts := grow.N(&b.EpsID, n), grow.N(&b.EnvID, n), grow.N(&b.AgentIndex, n), grow.N(&b.T, n)
	terminated = n == a.n && a.end&flagTerminated != 0
	ntcopy.Fill8(terms[:n-1], false)
	ntcopy.Fill8(truncs[:n-1], false)
	terms[n-1], truncs[n-1] = terminated, n == a.n && a.end&flagTruncated != 0
	ntcopy.Fill64(eps, a.epsID)
	ntcopy.Fill32(envs, a.envID)
	ntcopy.Fill32(idx, a.index)
	fillIDs(grow.N(&b.AgentID, n), a.id)
	if t < 0 { // the agent observed at every env step (see trajLayout.t)
		ntcopy.Iota32(ts, a.t0)
	} else {
		for i := range ts {
			ts[i] = int32(math.Float32bits(tr[i*s+t]))
		}
	}
	return terminated
}

// emitStates appends the RNN states of n transitions (tr their rows) to b, the policy's
// batch: state_out per row, state_in per row or, with Config.StatePerSequence, per
// sequence (the rows that start one: 0, maxSeq, 2*maxSeq, ...), and the sequences' lengths.
func (r *Runner) emitStates(b *SampleBatch, p *policy, n int, tr []float32) {
	l, s, seq := &p.lay, p.lay.stride, r.mode.maxSeq
	for k, sw := range p.stateW {
		if r.cfg.StatePerSequence {
			b.StateIn[k] = gather(b.StateIn[k], tr, s*seq, l.stateIn[k], sw, (n+seq-1)/seq)
		} else {
			b.StateIn[k] = gather(b.StateIn[k], tr, s, l.stateIn[k], sw, n)
		}
		b.StateOut[k] = gather(b.StateOut[k], tr, s, l.stateOut[k], sw, n)
	}
	for rem := n; rem > 0; rem -= seq {
		b.SeqLens = append(b.SeqLens, int32(min(rem, seq)))
	}
}

// emitInfos appends the infos of the record's first n transitions to b.Infos, which is empty
// while no row of the batch has an info (most batches), and one per row once one has.
func emitInfos(b *SampleBatch, a *agentRec, n int) {
	if len(b.Infos) < b.Count { // the batch's first info: the rows before it have none
		b.Infos = append(b.Infos, make([]env.Info, b.Count-len(b.Infos))...)
	}
	infos := grow.N(&b.Infos, n)
	clear(infos)
	for _, ti := range a.infos {
		if int(ti.i) < n {
			infos[ti.i] = ti.info
		}
	}
}

// fillIDs sets every agent id of dst to id, writing only those that differ: the storage
// mostly holds the ids a fragment before last wrote (see SampleBatch.empty), the same ones,
// and a line that is only read is not written back to memory. (Ids hold pointers, which
// non-temporal stores must not write: the collector would not see them.)
func fillIDs(dst []env.AgentID, id env.AgentID) {
	p, l := unsafe.StringData(id), len(id)
	for i, d := range dst {
		if unsafe.StringData(d) != p || len(d) != l {
			dst[i] = id
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
	ntcopy.StridedCached(grow.N(&dst, n*w), src[off:], stride, w, n)
	return dst
}

// scatter writes n rows of w values of src (row i at i*w) into dst, row i at i*stride: the
// inverse of gather; the common widths as one array a row (no call).
func scatter(dst, src []float32, stride, w, n int) {
	if n <= 0 || w <= 0 { // rows of no values (the check below would read dst[-1])
		return
	}
	_ = dst[(n-1)*stride+w-1]
	src = src[:n*w]
	switch w {
	case 1:
		for i, v := range src {
			dst[i*stride] = v
		}
	case 2:
		for i := range n {
			*(*[2]float32)(dst[i*stride:]) = [2]float32(src[2*i:])
		}
	case 4:
		for i := range n {
			*(*[4]float32)(dst[i*stride:]) = [4]float32(src[4*i:])
		}
	default:
		for i := range n {
			copy(dst[i*stride:i*stride+w], src[i*w:(i+1)*w])
		}
	}
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
