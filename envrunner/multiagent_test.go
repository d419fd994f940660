package envrunner_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
)

// envStepKey identifies one environment step of one episode.
type envStepKey struct {
	eps  int64
	step int32
}

// TestCountStepsByMultiAgentCartPole: with env_steps a fragment holds exactly
// FragmentLength*NumEnvs environment steps, with agent_steps at least that many agent steps
// (and less than one runner step more). In MultiAgentCartPole every active agent steps with
// the environment, so an agent's t is the episode's step. 3 agents in 8 sub-environments
// are more rows than the session's capacity (16): the runner infers in chunks.
func TestCountStepsByMultiAgentCartPole(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	const envs, agents, frag = 8, 3, 10
	for _, by := range []string{envrunner.EnvSteps, envrunner.AgentSteps} {
		t.Run(by, func(t *testing.T) {
			r := newRunner(t, envrunner.Config{Env: makeEnv(t, "MultiAgentCartPole", env.Config{"num_agents": agents, "max_episode_steps": 12},
				envOpts{numEnvs: envs, seed: 4}), NumEnvs: envs, Policies: singlePolicy(p, true), FragmentLength: frag, CountStepsBy: by})
			perAgent := map[int64]map[int32]int{} // rows per episode and agent
			var envSteps, agentSteps int
			for k, mb := range sampleBatches(t, r, 5) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				assert.Equal(t, b.Count, mb.AgentSteps, "fragment %d: agent steps are the rows", k)
				steps := map[envStepKey]bool{}
				for _, c := range checkChunks(t, b) {
					require.True(t, c.agent >= 0 && c.agent < agents, "agent_index %d", c.agent)
					if perAgent[c.epsID] == nil {
						perAgent[c.epsID] = map[int32]int{}
					}
					perAgent[c.epsID][c.agent] += c.len()
					for i := c.start; i < c.end; i++ {
						steps[envStepKey{c.epsID, b.T[i]}] = true
						assert.Equal(t, float32(1), b.Rewards[i])
					}
				}
				assert.Equal(t, len(steps), mb.EnvSteps, "fragment %d: env steps are the distinct steps of its rows", k)
				switch by {
				case envrunner.EnvSteps:
					assert.Equal(t, envs*frag, mb.EnvSteps, "fragment %d", k)
				case envrunner.AgentSteps:
					assert.GreaterOrEqual(t, mb.AgentSteps, envs*frag, "fragment %d", k)
					assert.Less(t, mb.AgentSteps, envs*frag+envs*agents, "fragment %d: more than one runner step past the target", k)
				}
				assert.Greater(t, b.Count, mb.EnvSteps, "several agents per env step")
				envSteps += mb.EnvSteps
				agentSteps += mb.AgentSteps
			}
			c := r.Counters()
			assert.Equal(t, int64(envSteps), c.EnvSteps)
			assert.Equal(t, int64(agentSteps), c.AgentSteps)
			ms := r.Metrics(nil)
			require.NotEmpty(t, ms)
			for _, m := range ms {
				require.Len(t, m.AgentReturns, agents, "episode %d", m.EpisodeID)
				longest, sum := 0, 0.0
				for i, ar := range m.AgentReturns {
					assert.Equal(t, "agent_"+strconv.Itoa(i), ar.Agent, "agents in order of appearance")
					assert.Equal(t, float64(perAgent[m.EpisodeID][int32(i)]), ar.Reward, "episode %d %s: return is its rows", m.EpisodeID, ar.Agent)
					longest = max(longest, int(ar.Reward))
					sum += ar.Reward
				}
				assert.Equal(t, longest, m.EpisodeLength, "episode %d lasts until its last agent is done", m.EpisodeID)
				assert.Equal(t, sum, m.EpisodeReturn)
			}
		})
	}
}

// TestJoiningAgents: RandomMultiAgentEnv with agents joining late (agent i at step 2i, each
// living 5 steps). agent_steps fragments count agent transitions; the metrics and rewards
// follow the environment's schedule exactly.
func TestJoiningAgents(t *testing.T) {
	const envs, frag, agents, joinEvery, life = 2, 12, 3, 2, 5
	for _, by := range []string{envrunner.EnvSteps, envrunner.AgentSteps} {
		t.Run(by, func(t *testing.T) {
			be := makeEnv(t, "RandomMultiAgentEnv", env.Config{"num_agents": agents, "join_every": joinEvery, "episode_len": life, "reward_is_step": true},
				envOpts{numEnvs: envs, seed: 9})
			r := newRunner(t, envrunner.Config{Env: be, NumEnvs: envs, Policies: randomPolicies(envrunner.DefaultPolicyID),
				FragmentLength: frag, CountStepsBy: by, Seed: 1})
			for k, mb := range sampleBatches(t, r, 6) {
				b := mb.PolicyBatches[envrunner.DefaultPolicyID]
				steps := map[envStepKey]bool{}
				for _, c := range checkChunks(t, b) {
					// Agent i joined at env step joinEvery*i (agents appear in id order); t is
					// the episode's env step.
					joined := int32(joinEvery) * c.agent
					for i := c.start; i < c.end; i++ {
						assert.Equal(t, float32(b.T[i]-joined+1), b.Rewards[i], "row %d: the reward is the agent's step since it joined", i)
						steps[envStepKey{c.epsID, b.T[i]}] = true
						assert.Less(t, b.T[i]-joined, int32(life))
					}
					if done(b, c.end-1) {
						assert.Equal(t, int32(life-1), b.T[c.end-1]-joined)
						assert.True(t, b.Truncateds[c.end-1])
					}
				}
				assert.Equal(t, len(steps), mb.EnvSteps, "fragment %d: env steps", k)
				assert.Equal(t, b.Count, mb.AgentSteps, "fragment %d: agent steps", k)
				if by == envrunner.EnvSteps {
					assert.Equal(t, envs*frag, mb.EnvSteps)
				} else {
					assert.GreaterOrEqual(t, mb.AgentSteps, envs*frag)
					assert.Less(t, mb.AgentSteps, envs*frag+envs*agents)
				}
			}
			ms := r.Metrics(nil)
			require.NotEmpty(t, ms)
			for _, m := range ms {
				assert.Equal(t, joinEvery*(agents-1)+life, m.EpisodeLength)
				assert.Equal(t, float64(agents*life*(life+1)/2), m.EpisodeReturn)
				require.Len(t, m.AgentReturns, agents)
				for i, ar := range m.AgentReturns {
					assert.Equal(t, fmt.Sprintf("agent%d", i), ar.Agent)
					assert.Equal(t, float64(life*(life+1)/2), ar.Reward)
				}
			}
		})
	}
}

// TestMultiPolicy maps the agents of MultiAgentCartPole to two policies by agent id: each
// policy's batch holds exactly its agents, and the mapping is asked once per agent and
// episode.
func TestMultiPolicy(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	for _, tc := range []struct {
		name      string
		secondRnd bool
	}{{name: "model+random", secondRnd: true}, {name: "two_sessions"}} {
		t.Run(tc.name, func(t *testing.T) {
			const envs, agents, frag = 3, 4, 20
			second := envrunner.PolicyConfig{Policy: p, Action: actionCfg(false)}
			if tc.secondRnd {
				second = envrunner.PolicyConfig{Random: true, ObservationSpace: p.Spec.ObservationSpace, ActionSpace: p.Spec.ActionSpace}
			}
			pols := map[envrunner.PolicyID]envrunner.PolicyConfig{"even": {Policy: p, Action: actionCfg(true)}, "odd": second}
			type call struct {
				eps   int64
				agent env.AgentID
			}
			calls := map[call]int{}
			episodes := map[int64]bool{}
			mapping := func(agent env.AgentID, ep *envrunner.Episode) envrunner.PolicyID {
				calls[call{ep.ID, agent}]++
				episodes[ep.ID] = true
				n, err := strconv.Atoi(strings.TrimPrefix(agent, "agent_"))
				require.NoError(t, err)
				require.Equal(t, n, ep.NumAgents(), "agents are mapped in order of appearance")
				if n%2 == 0 {
					return "even"
				}
				return "odd"
			}
			r := newRunner(t, envrunner.Config{Env: makeEnv(t, "MultiAgentCartPole", env.Config{"num_agents": agents, "max_episode_steps": 40},
				envOpts{numEnvs: envs, seed: 14}), NumEnvs: envs, Policies: pols, PolicyMapping: mapping, FragmentLength: frag})
			oddSeen := false
			for k, mb := range sampleBatches(t, r, 5) {
				// The trained policy keeps its agents up; the random one's fall early, so a
				// fragment may hold none of them.
				ids := mb.PolicyIDs()
				require.Contains(t, ids, "even", "fragment %d", k)
				oddSeen = oddSeen || slices.Contains(ids, "odd")
				even, odd := mb.PolicyBatches["even"], mb.PolicyBatches["odd"]
				assert.Equal(t, envs*frag, mb.EnvSteps)
				assert.Equal(t, even.Count+odd.Count, mb.AgentSteps)
				checkChunks(t, even)
				checkChunks(t, odd)
				for i := range even.Count {
					assert.Contains(t, []int32{0, 2}, even.AgentIndex[i])
					assert.Equal(t, fmt.Sprintf("agent_%d", even.AgentIndex[i]), even.AgentID[i], "row %d: the env's agent id", i)
					assert.InDelta(t, logSoftmaxAt(envrunner.Row(even.ActionDistInputs, 2, i), int(even.Actions[i])), float64(even.ActionLogp[i]), 1e-5)
				}
				for i := range odd.Count {
					assert.Contains(t, []int32{1, 3}, odd.AgentIndex[i])
					assert.Equal(t, fmt.Sprintf("agent_%d", odd.AgentIndex[i]), odd.AgentID[i], "row %d: the env's agent id", i)
				}
				assert.Len(t, even.VfPreds, even.Count)
				if tc.secondRnd {
					assert.Zero(t, odd.DistWidth)
					assert.Empty(t, odd.ActionDistInputs)
					assert.Len(t, odd.ActionLogp, odd.Count, "the uniform sampling's")
					assert.Empty(t, odd.VfPreds)
				} else {
					assert.Len(t, odd.VfPreds, odd.Count)
					for i := range odd.Count { // greedy
						d := envrunner.Row(odd.ActionDistInputs, 2, i)
						assert.Equal(t, d[1] > d[0], odd.Actions[i] == 1, "row %d: greedy", i)
					}
				}
			}
			assert.True(t, oddSeen, "no fragment held the odd agents")
			for c, n := range calls {
				assert.Equal(t, 1, n, "mapping of %s in episode %d", c.agent, c.eps)
			}
			assert.Len(t, calls, agents*len(episodes))
			ms := r.Metrics(nil)
			require.NotEmpty(t, ms)
			for _, m := range ms {
				require.Len(t, m.AgentReturns, agents)
				for i, ar := range m.AgentReturns {
					want := "even"
					if i%2 == 1 {
						want = "odd"
					}
					assert.Equal(t, want, ar.Policy, "%s", ar.Agent)
				}
			}
		})
	}
}

// A mapping to a policy the runner does not have is an error of Step naming the agent, the
// policy and the runner's policies, not a panic (RLlib raises too); the runner still closes.
func TestMappingToUnknownPolicyIsAnError(t *testing.T) {
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "RandomEnv", nil, envOpts{numEnvs: 2}), NumEnvs: 2,
		Policies:      randomPolicies("a", "b"),
		PolicyMapping: func(env.AgentID, *envrunner.Episode) envrunner.PolicyID { return "c" }})
	var err error
	require.NotPanics(t, func() { err = r.Step() })
	require.Error(t, err)
	assert.Contains(t, err.Error(), `PolicyMapping("agent0") returned "c", which is not one of the runner's policies [a b]`)
	require.NotPanics(t, func() { err = r.Step() })
	assert.Error(t, err, "the next step fails the same way")
}
