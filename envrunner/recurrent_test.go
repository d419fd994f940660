package envrunner_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
)

// seqLensFor splits chunks into sequences of at most maxSeq rows.
func seqLensFor(cs []chunk, maxSeq int) []int32 {
	var out []int32
	for _, c := range cs {
		for rem := c.len(); rem > 0; rem -= maxSeq {
			out = append(out, int32(min(rem, maxSeq)))
		}
	}
	return out
}

// TestRecurrentPolicy samples StatelessCartPole with the bundled LSTM and checks the state
// columns: widths, zero at t=0, state_out[t] == state_in[t+1] within an agent episode (across
// fragments too), seq_lens, and that running the model step by step on the recorded
// observations and states reproduces the recorded distribution inputs and states. A small
// session capacity makes the runner infer in chunks.
func TestRecurrentPolicy(t *testing.T) {
	p := bundledPolicy(t, "lstm_policy")
	net := newDirectNet(t, p)
	for _, capacity := range []int{0, 3} {
		t.Run(fmt.Sprintf("capacity=%d", capacity), func(t *testing.T) {
			const envs, maxSeq = 4, 8
			pols := singlePolicy(p, true)
			pc := pols[envrunner.DefaultPolicyID]
			pc.Session = inference.Options{Capacity: capacity, IntraOpThreads: 1}
			pols[envrunner.DefaultPolicyID] = pc
			r := newRunner(t, envrunner.Config{Env: makeEnv(t, "StatelessCartPole", nil, envOpts{numEnvs: envs, seed: 12}),
				NumEnvs: envs, Policies: pols, FragmentLength: 40, MaxSeqLen: maxSeq, Seed: 6})
			last := map[int64][][]float32{} // state_out of the last row of a cut chunk
			starts, conts := 0, 0
			for k, mb := range sampleBatches(t, r, 4) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				require.Equal(t, []int{32, 32}, b.StateWidths)
				require.Len(t, b.StateIn, 2)
				require.Len(t, b.StateOut, 2)
				assert.Equal(t, 2, b.ObsWidth)
				assert.Equal(t, 2, b.DistWidth)
				cs := checkChunks(t, b)
				sum := 0
				for _, l := range b.SeqLens {
					assert.True(t, l >= 1 && l <= maxSeq, "seq_lens entry %d", l)
					sum += int(l)
				}
				assert.Equal(t, b.Count, sum, "fragment %d: seq_lens add up to the rows", k)
				assert.Equal(t, seqLensFor(cs, maxSeq), b.SeqLens, "fragment %d: sequences split the chunks", k)
				for _, c := range cs {
					first := c.start
					if b.T[first] == 0 {
						starts++
						for s := range 2 {
							assert.Equal(t, make([]float32, 32), envrunner.Row(b.StateIn[s], 32, first), "episode %d: state_in_%d at t=0", c.epsID, s)
						}
					} else {
						conts++
						prev, ok := last[c.epsID]
						require.True(t, ok, "episode %d continues at t=%d without a cut chunk before", c.epsID, b.T[first])
						for s := range 2 {
							assert.Equal(t, prev[s], envrunner.Row(b.StateIn[s], 32, first), "episode %d: state_in_%d after the cut", c.epsID, s)
						}
					}
					delete(last, c.epsID)
					for i := c.start; i < c.end; i++ {
						in := [][]float32{envrunner.Row(b.StateIn[0], 32, i), envrunner.Row(b.StateIn[1], 32, i)}
						out := [][]float32{envrunner.Row(b.StateOut[0], 32, i), envrunner.Row(b.StateOut[1], 32, i)}
						if i > c.start {
							for s := range 2 {
								require.Equal(t, envrunner.Row(b.StateOut[s], 32, i-1), in[s], "row %d: state_in_%d is the previous state_out", i, s)
							}
						}
						logits, _, next := net.run(t, envrunner.Row(b.Obs, 2, i), in)
						require.InDeltaSlice(t, logits, envrunner.Row(b.ActionDistInputs, 2, i), 1e-5, "row %d (t=%d): action_dist_inputs", i, b.T[i])
						for s := range 2 {
							require.InDeltaSlice(t, next[s], out[s], 1e-5, "row %d (t=%d): state_out_%d", i, b.T[i], s)
						}
						assert.InDelta(t, logSoftmaxAt(logits, int(b.Actions[i])), float64(b.ActionLogp[i]), 1e-5)
					}
					if !done(b, c.end-1) {
						last[c.epsID] = [][]float32{slices.Clone(envrunner.Row(b.StateOut[0], 32, c.end-1)), slices.Clone(envrunner.Row(b.StateOut[1], 32, c.end-1))}
					}
				}
			}
			assert.Positive(t, starts)
			assert.Positive(t, conts)
		})
	}
}

// A random policy and a model without state have no state columns or seq_lens.
func TestNoStateColumns(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "CartPole-v1", nil, envOpts{numEnvs: 2}), NumEnvs: 2,
		Policies: singlePolicy(p, true), FragmentLength: 10})
	b := sampleBatches(t, r, 1)[0].PolicyBatches[envrunner.DefaultPolicyID]
	assert.Empty(t, b.StateWidths)
	assert.Empty(t, b.StateIn)
	assert.Empty(t, b.SeqLens)
}
