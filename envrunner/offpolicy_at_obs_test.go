package envrunner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// loggedAt is the scripted environments' logging schedule: the environment takes its own
// action at every third observation of an episode, the first one included, alternately 0 and
// 1.
func loggedAt(e, ep, t int, _ env.AgentID) []float32 {
	if t%3 == 0 {
		return []float32{float32((e + ep + t/3) % 2)}
	}
	return nil
}

// TestOffPolicyActionIsRecordedAtItsObservation: an action a BaseEnv reports as
// OffPolicyAction with an observation (RLlib's off_policy_actions from poll) is the action
// of that observation's row, the first observation of an episode included; the row's
// action_dist_inputs and vf_preds are the policy's outputs at that observation and its
// action_logp the log-probability of the action the policy sampled there (and sent, which
// the environment ignored), as RLlib records the policy's extra outputs beside a logged
// action. Rows without a logged action hold the policy's action.
func TestOffPolicyActionIsRecordedAtItsObservation(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	net := newDirectNet(t, p)
	for _, mode := range []string{envrunner.TruncateEpisodes, envrunner.CompleteEpisodes} {
		t.Run(mode, func(t *testing.T) {
			se := newScriptedEnv(3, 7)
			se.logged = loggedAt
			r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 3, Policies: singlePolicy(p, true), FragmentLength: 5,
				BatchMode: mode, Seed: 3})
			agents := []env.AgentID{env.DefaultAgentID}
			var logged, first, own, differs int
			for _, mb := range sampleBatches(t, r, 6) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				checkChunks(t, b)
				for i := range b.Count {
					k := keyOfRow(b, i, agents)
					require.Equal(t, int32(k.t), b.T[i], "row %d", i)
					sent, ok := se.sent[k]
					require.True(t, ok, "row %d: no action was sent for %+v", i, k)
					logits, value, _ := net.run(t, envrunner.Row(b.Obs, 4, i), nil)
					assert.InDeltaSlice(t, logits, envrunner.Row(b.ActionDistInputs, 2, i), 1e-5, "row %d: action_dist_inputs", i)
					assert.InDelta(t, value, b.VfPreds[i], 1e-5, "row %d: vf_preds", i)
					assert.InDelta(t, logSoftmaxAt(logits, int(sent[0])), float64(b.ActionLogp[i]), 1e-5,
						"row %d: action_logp is the policy's, of the action it sampled", i)
					if l := loggedAt(k.env, k.ep, k.t, k.agent); l != nil {
						logged++
						if k.t == 0 {
							first++
						}
						if sent[0] != l[0] {
							differs++
						}
						assert.Equal(t, l[0], b.Actions[i], "row %d (t=%d): the logged action", i, k.t)
					} else {
						own++
						assert.Equal(t, sent[0], b.Actions[i], "row %d (t=%d): the policy's action", i, k.t)
					}
				}
			}
			assert.Positive(t, first, "actions logged with an episode's first observation are recorded")
			assert.Positive(t, differs, "some logged actions differ from the policy's")
			assert.Greater(t, own, logged)
		})
	}
}

// lastActionCheck checks in OnEpisodeStep that Episode.LastAction is the action of the
// previous observation as the batch records it: the logged one where the environment took
// its own.
type lastActionCheck struct {
	t       *testing.T
	se      *scriptedEnv
	checked int
}

func (c *lastActionCheck) OnEpisodeStep(_ *envrunner.Runner, ep *envrunner.Episode) {
	o := ep.LastObservation(env.DefaultAgentID)
	if o == nil || o[2] == 0 {
		return
	}
	prev := scriptKey{env: int(o[0]), ep: int(o[1]), t: int(o[2]) - 1, agent: env.DefaultAgentID}
	want := c.se.sent[prev]
	if l := loggedAt(prev.env, prev.ep, prev.t, prev.agent); l != nil {
		want = l
	}
	assert.Equal(c.t, want, ep.LastAction(env.DefaultAgentID), "%+v: last action", prev)
	c.checked++
}

// TestOffPolicyActionOfARandomPolicy: the same with a random policy (no model outputs), and
// Episode.LastAction is the logged action where there is one.
func TestOffPolicyActionOfARandomPolicy(t *testing.T) {
	se := newScriptedEnv(2, 5)
	se.logged = loggedAt
	cb := &lastActionCheck{t: t, se: se}
	r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 2, Policies: scriptedPolicies(envrunner.DefaultPolicyID), FragmentLength: 6, Seed: 4,
		Callbacks: cb})
	agents := []env.AgentID{env.DefaultAgentID}
	differs := 0
	for _, mb := range sampleBatches(t, r, 4) {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		checkChunks(t, b)
		for i := range b.Count {
			k := keyOfRow(b, i, agents)
			want := se.sent[k]
			if l := loggedAt(k.env, k.ep, k.t, k.agent); l != nil {
				if want[0] != l[0] {
					differs++
				}
				want = l
			}
			assert.Equal(t, want[0], b.Actions[i], "row %d (%+v)", i, k)
		}
	}
	assert.Positive(t, differs)
	assert.Positive(t, cb.checked)
}
