package envrunner

import "github.com/onnxrl/sampler/internal/grow"

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
