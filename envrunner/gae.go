package envrunner

import "github.com/onnxrl/sampler/internal/grow"

// gae appends advantages and value targets for a chunk of n transitions, bootstrapped with
// last (RLlib's compute_advantages with use_gae). Their rewards and values are read from
// the trajectory tr (rows of stride values, row i's reward at i*stride+rew, which may lie in
// the next row, its value at vf; vf < 0: all 0) rather than from the batch's columns, which
// emitFirst wrote past the cache.
func (r *Runner) gae(b *SampleBatch, tr []float32, stride, rew, vf, n int, last float64) {
	gamma, lambda := r.cfg.GAE.Gamma, r.cfg.GAE.Lambda
	adv, vt := grow.N(&b.Advantages, n), grow.N(&b.ValueTargets, n)
	acc := 0.0
	next := last
	gl := gamma * lambda
	_ = tr[(n-1)*stride+max(rew, vf)]
	for i := n - 1; i >= 0; i-- {
		vi := 0.0
		if vf >= 0 {
			vi = float64(tr[i*stride+vf])
		}
		delta := float64(tr[i*stride+rew]) + gamma*next - vi
		acc = delta + gl*acc
		adv[i] = float32(acc)
		vt[i] = float32(acc + vi)
		next = vi
	}
}
