package envrunner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/envrunner"
)

// TestSequenceStateInIsRLlibsStateIn: a recurrent batch's sequences are at most MaxSeqLen
// rows (20 when unset, RLlib's max_seq_len default), and SequenceStateIn gives RLlib's
// state_in_N column, one row per seq_lens entry: the state going into each sequence (zero at
// an episode's start, else the state_out of the row before).
func TestSequenceStateInIsRLlibsStateIn(t *testing.T) {
	p := bundledPolicy(t, "lstm_policy")
	for _, maxSeq := range []int{0, 3} {
		r := newRunner(t, envrunner.Config{Env: makeEnv(t, "StatelessCartPole", nil, envOpts{numEnvs: 2, seed: 4}),
			NumEnvs: 2, Policies: singlePolicy(p, true), FragmentLength: 45, MaxSeqLen: maxSeq, Seed: 2})
		want := maxSeq
		if want == 0 {
			want = 20
		}
		longest := int32(0)
		for _, mb := range sampleBatches(t, r, 3) {
			b := mb.PolicyBatches[envrunner.DefaultPolicyID]
			cs := checkChunks(t, b)
			require.Equal(t, seqLensFor(cs, want), b.SeqLens)
			for k, w := range b.StateWidths {
				seq := b.SequenceStateIn(k, nil)
				require.Len(t, seq, len(b.SeqLens)*w)
				start := 0
				for j, l := range b.SeqLens {
					longest = max(longest, l)
					got := envrunner.Row(seq, w, j)
					if b.T[start] == 0 {
						assert.Equal(t, make([]float32, w), got, "sequence %d starts an episode: zero state", j)
					} else if start > 0 && b.EpsID[start-1] == b.EpsID[start] && b.AgentIndex[start-1] == b.AgentIndex[start] {
						assert.Equal(t, envrunner.Row(b.StateOut[k], w, start-1), got, "sequence %d: the state carried in", j)
					}
					assert.Equal(t, envrunner.Row(b.StateIn[k], w, start), got)
					start += int(l)
				}
			}
		}
		assert.Equal(t, int32(want), longest, "MaxSeqLen %d: the longest sequence", maxSeq)
	}
}

// TestStatePerSequenceIsRLlibsLayout: with Config.StatePerSequence a recurrent batch's
// state_in_N has RLlib's layout, one row per seq_lens entry, the rows SequenceStateIn gives
// of the default per-row batch of the same run; every other column is the same.
func TestStatePerSequenceIsRLlibsLayout(t *testing.T) {
	p := bundledPolicy(t, "lstm_policy")
	run := func(perSeq bool) []*envrunner.MultiAgentBatch {
		r := newRunner(t, envrunner.Config{Env: makeEnv(t, "StatelessCartPole", nil, envOpts{numEnvs: 2, seed: 4}),
			NumEnvs: 2, Policies: singlePolicy(p, true), FragmentLength: 45, MaxSeqLen: 7, Seed: 2, StatePerSequence: perSeq})
		return sampleBatches(t, r, 3)
	}
	rows, seqs := run(false), run(true)
	for i := range rows {
		rb, sb := *rows[i].PolicyBatches[envrunner.DefaultPolicyID], *seqs[i].PolicyBatches[envrunner.DefaultPolicyID]
		require.NoError(t, sb.Validate())
		require.True(t, sb.StatePerSequence)
		require.False(t, rb.StatePerSequence)
		require.Greater(t, rb.Count, len(rb.SeqLens), "sequences of several rows")
		for k, w := range sb.StateWidths {
			require.Len(t, sb.StateIn[k], len(sb.SeqLens)*w)
			assert.Equal(t, rb.SequenceStateIn(k, nil), sb.StateIn[k], "state_in_%d", k)
			assert.Equal(t, sb.StateIn[k], sb.SequenceStateIn(k, nil))
		}
		rb.StateIn, sb.StateIn = nil, nil
		rb.StatePerSequence = true
		assert.Equal(t, rb, sb, "fragment %d: the other columns", i)
	}
}
