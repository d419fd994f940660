package envrunner_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// turnsEnv is a MultiAgentEnv of two agents: "a" observes every step; "b" observes at even
// steps only and is rewarded at every step, without an observation at odd ones
// (MultiAgentStep.AddReward). Episodes end (AllTerminated) after length steps, an odd
// number, so "b" is missing from the final step. Observations are [t, agent]; a's reward
// is 1, b's 10*t.
type turnsEnv struct {
	length, t int
}

var turnsAgents = []env.AgentID{"a", "b"}

func (e *turnsEnv) PossibleAgents() []env.AgentID             { return turnsAgents }
func (e *turnsEnv) ObservationSpace(env.AgentID) spaces.Space { return spaces.NewBox(-1e6, 1e6, 2) }
func (e *turnsEnv) ActionSpace(env.AgentID) spaces.Space      { return &spaces.Discrete{N: 2} }

func (e *turnsEnv) Reset(_ env.Seed, out *env.MultiAgentStep) error {
	e.t = 0
	e.observe(out)
	return nil
}

func (e *turnsEnv) observe(out *env.MultiAgentStep) {
	out.Clear()
	a := out.Add("a", 2)
	a.Obs[0], a.Obs[1] = float32(e.t), 0
	if e.t > 0 {
		a.Reward = 1
	}
	if e.t%2 == 0 {
		b := out.Add("b", 2)
		b.Obs[0], b.Obs[1] = float32(e.t), 1
		b.Reward = float64(10 * e.t)
	} else {
		out.AddReward("b", float64(10*e.t))
	}
	out.AllTerminated = e.t == e.length
}

func (e *turnsEnv) Step(actions []env.AgentAction, out *env.MultiAgentStep) error {
	want := 1
	if e.t%2 == 0 {
		want = 2
	}
	if len(actions) != want {
		return fmt.Errorf("turnsEnv: %d actions at t=%d, want %d", len(actions), e.t, want)
	}
	e.t++
	e.observe(out)
	return nil
}

// TestAgentMissingFromTheFinalStepGetsATerminatedRow: an agent that is not in the last step
// of its episode (the environment ended it with AllTerminated without observing the agent)
// gets a final row, as RLlib fakes one: its last observation repeated as new_obs, the reward
// accrued since its last action, terminated (GAE does not bootstrap it). A reward given
// without an observation is added to the agent's next transition; the episode's returns
// count every reward.
func TestAgentMissingFromTheFinalStepGetsATerminatedRow(t *testing.T) {
	const length, envs = 5, 2
	for _, mode := range []string{envrunner.TruncateEpisodes, envrunner.CompleteEpisodes} {
		t.Run(mode, func(t *testing.T) {
			be, err := env.NewMultiAgentBaseEnv(func(int) (env.MultiAgentEnv, error) { return &turnsEnv{length: length}, nil },
				env.BaseEnvOptions{NumEnvs: envs})
			require.NoError(t, err)
			pols := map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true,
				ObservationSpace: spaces.NewBox(-1e6, 1e6, 2), ActionSpace: &spaces.Discrete{N: 2}}}
			r := newRunner(t, envrunner.Config{Env: be, NumEnvs: envs, Policies: pols, FragmentLength: 3, BatchMode: mode,
				GAE: &envrunner.GAE{Gamma: 0.9, Lambda: 1}})
			type agentEp struct {
				eps   int64
				agent int32
			}
			rows := map[agentEp][]int{} // the t of each row's observation
			for _, mb := range sampleBatches(t, r, 6) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				for _, c := range checkChunks(t, b) {
					for i := c.start; i < c.end; i++ {
						o := envrunner.Row(b.Obs, 2, i)
						k := agentEp{c.epsID, c.agent}
						rows[k] = append(rows[k], int(o[0]))
						assert.Equal(t, int32(o[0]), b.T[i], "row %d: t is the env step of the observation", i)
						if o[1] == 0 { // agent a: every step
							assert.Equal(t, float32(1), b.Rewards[i])
							assert.Equal(t, o[0] == length-1, b.Terminateds[i], "row %d", i)
							continue
						}
						// Agent b, at t = 0, 2, 4: the reward of its next step without an
						// observation and of the one with.
						tb := int(o[0])
						switch {
						case tb+2 <= length:
							assert.Equal(t, float32(10*(tb+1)+10*(tb+2)), b.Rewards[i], "row %d: b at t=%d", i, tb)
							assert.False(t, done(b, i))
						default: // the final row made for b
							assert.Equal(t, float32(10*length), b.Rewards[i], "row %d: b's final reward", i)
							assert.True(t, b.Terminateds[i], "row %d: b's final row is terminated", i)
							assert.False(t, b.Truncateds[i])
							assert.Equal(t, o, envrunner.Row(b.NewObs, 2, i), "row %d: the last observation repeated", i)
							assert.Equal(t, b.Rewards[i], b.Advantages[i], "row %d: no bootstrap", i)
						}
					}
				}
			}
			whole := 0
			for k, ts := range rows {
				if len(ts) == 0 || ts[0] != 0 {
					continue
				}
				if k.agent == 1 && len(ts) == 3 {
					whole++
					assert.Equal(t, []int{0, 2, 4}, ts)
				}
			}
			assert.Positive(t, whole, "whole episodes of b")
			ms := r.Metrics(nil)
			require.NotEmpty(t, ms)
			for _, m := range ms {
				assert.Equal(t, length, m.EpisodeLength)
				require.Len(t, m.AgentReturns, 2)
				assert.Equal(t, float64(length), m.AgentReturns[0].Reward)
				assert.Equal(t, float64(10*length*(length+1)/2), m.AgentReturns[1].Reward, "b's rewards, observed or not")
				assert.Equal(t, float64(length+10*length*(length+1)/2), m.EpisodeReturn)
			}
		})
	}
}
