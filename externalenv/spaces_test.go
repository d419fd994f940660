package externalenv_test

import (
	"testing"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/spaces"
)

// TestSpacesOfExternalEnvs: both ExternalEnv forms tell their spaces to env.SpacesOf (RLlib's
// BaseEnv.observation_space and action_space).
func TestSpacesOfExternalEnvs(t *testing.T) {
	obs, act := spaces.NewBox(-1, 1, 3), &spaces.Discrete{N: 4}
	single, err := externalenv.New(externalenv.Options{ObservationSpace: obs, ActionSpace: act})
	if err != nil {
		t.Fatal(err)
	}
	defer single.Stop()
	multi, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: obs, ActionSpace: act})
	if err != nil {
		t.Fatal(err)
	}
	defer multi.Stop()
	for _, c := range []struct {
		b     env.BaseEnv
		agent env.AgentID
		ok    bool
	}{{single, env.DefaultAgentID, true}, {single, "car1", false}, {multi, "car1", true}} {
		o, a, err := env.SpacesOf(c.b, c.agent)
		if (err == nil) != c.ok || c.ok && (o != obs || a != act) {
			t.Fatalf("%T agent %q: %v %v %v", c.b, c.agent, o, a, err)
		}
	}
}
