package envrunner_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// TestPrevActionsSeeTheLoggedAction: after an action the environment logged (OffPolicyAction),
// an agent connector that appends previous actions sees the logged action, not the one the
// policy chose, as the batch does (RLlib passes action_to_buffer to the agent connectors'
// on_policy_output): the prev-action part of every observation is the one-hot of the
// previous row's action.
func TestPrevActionsSeeTheLoggedAction(t *testing.T) {
	se := newScriptedEnv(2, 9)
	se.logged = loggedAt
	pols := scriptedPolicies(envrunner.DefaultPolicyID)
	pc := pols[envrunner.DefaultPolicyID]
	pc.Agent = []connectors.AgentConnector{connectors.NewPrevActions(&spaces.Discrete{N: 2}, 1)}
	pols[envrunner.DefaultPolicyID] = pc
	r := newRunner(t, envrunner.Config{Env: se, NumEnvs: 2, Policies: pols, FragmentLength: 7, Seed: 8})
	agents := []env.AgentID{env.DefaultAgentID}
	checked, differs := 0, 0
	for _, mb := range sampleBatches(t, r, 4) {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		require.Equal(t, 6, b.ObsWidth)
		cs := checkChunks(t, b)
		for _, c := range cs {
			for i := c.start; i < c.end; i++ {
				k := keyOfRow(b, i, agents)
				prev := envrunner.Row(b.Obs, 6, i)[4:]
				if k.t == 0 {
					assert.Equal(t, []float32{0, 0}, prev, "row %d: no action before the first", i)
					continue
				}
				before := keyOfRow(b, i, agents)
				before.t--
				act := se.sent[before]
				if l := loggedAt(before.env, before.ep, before.t, before.agent); l != nil {
					if l[0] != act[0] {
						differs++
					}
					act = l
				}
				oneHot := []float32{0, 0}
				oneHot[int(act[0])] = 1
				assert.Equal(t, oneHot, prev, "row %d (%+v): prev action", i, k)
				if i > c.start {
					assert.Equal(t, b.Actions[i-1], act[0], "row %d: the batch's previous action", i)
				}
				checked++
			}
		}
	}
	assert.Positive(t, checked)
	assert.Positive(t, differs, "some logged actions differ from the policy's")
}
