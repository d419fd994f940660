package envrunner_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// eventRecorder records the callbacks of a runner.
type eventRecorder struct {
	t        *testing.T
	events   map[int64][]string
	steps    map[int64]int
	lengths  map[int64]int
	results  []*envrunner.MultiAgentBatch
	userSeen int
}

func (c *eventRecorder) add(ep *envrunner.Episode, what string) {
	if c.events == nil {
		c.events, c.steps, c.lengths = map[int64][]string{}, map[int64]int{}, map[int64]int{}
	}
	ev := c.events[ep.ID]
	if n := len(ev); n > 0 && ev[n-1] == what && what == "step" {
		c.steps[ep.ID]++
		return
	}
	c.events[ep.ID] = append(ev, what)
	if what == "step" {
		c.steps[ep.ID]++
	}
}

func (c *eventRecorder) OnEpisodeCreated(_ *envrunner.Runner, ep *envrunner.Episode) {
	c.add(ep, "created")
}

func (c *eventRecorder) OnEpisodeStart(_ *envrunner.Runner, ep *envrunner.Episode) {
	c.add(ep, "start")
	assert.Empty(c.t, ep.UserData, "episode %d starts with the user data of another", ep.ID)
	assert.Empty(c.t, ep.CustomMetrics, "episode %d starts with the custom metrics of another", ep.ID)
	assert.Zero(c.t, ep.Length())
	assert.Zero(c.t, ep.TotalReward())
	assert.True(c.t, ep.TrainingEnabled)
	ep.UserData["id"] = ep.ID // RLlib-style: the map is there
}

func (c *eventRecorder) OnEpisodeStep(_ *envrunner.Runner, ep *envrunner.Episode) {
	c.add(ep, "step")
	assert.Equal(c.t, c.steps[ep.ID], ep.Length(), "episode %d: Length in its step callback", ep.ID)
	if assert.Equal(c.t, ep.ID, ep.UserData["id"], "episode %d: user data", ep.ID) {
		c.userSeen++
	}
	obs := ep.LastObservation(env.DefaultAgentID)
	assert.Len(c.t, obs, 4)
	assert.Equal(c.t, 1.0, ep.LastReward(env.DefaultAgentID))
	assert.Len(c.t, ep.LastAction(env.DefaultAgentID), 1, "the action of the step just completed")
	assert.Equal(c.t, envrunner.DefaultPolicyID, ep.PolicyFor(env.DefaultAgentID))
	assert.Equal(c.t, 1, ep.NumAgents())
}

func (c *eventRecorder) OnEpisodeEnd(_ *envrunner.Runner, ep *envrunner.Episode) {
	c.add(ep, "end")
	c.lengths[ep.ID] = ep.Length()
	// RLlib-style: write into the maps without making them.
	ep.CustomMetrics["length_twice"] = 2 * float64(ep.Length())
	rs := ep.AgentRewards(nil)
	require.Len(c.t, rs, 1)
	assert.Equal(c.t, ep.TotalReward(), rs[0].Reward)
	assert.Equal(c.t, envrunner.DefaultPolicyID, rs[0].Policy)
}

func (c *eventRecorder) OnSampleResult(_ *envrunner.Runner, b *envrunner.MultiAgentBatch) {
	c.results = append(c.results, b)
}

// TestCallbacks checks the order of the episode callbacks, the step count, custom metrics,
// user data and OnSampleResult.
func TestCallbacks(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	cb := &eventRecorder{t: t}
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "CartPole-v1", env.Config{"max_episode_steps": 40}, envOpts{numEnvs: 4, seed: 8}),
		NumEnvs: 4, Policies: singlePolicy(p, true), FragmentLength: 40, Callbacks: cb})
	batches := sampleBatches(t, r, 4)
	require.Len(t, cb.results, 4, "OnSampleResult once per Sample")
	for i, b := range batches {
		assert.Same(t, b, cb.results[i], "OnSampleResult gets the batch Sample fills")
	}
	ms := r.Metrics(nil)
	require.NotEmpty(t, ms)
	for _, m := range ms {
		ev := cb.events[m.EpisodeID]
		assert.Equal(t, []string{"created", "start", "step", "end"}, ev, "episode %d", m.EpisodeID)
		assert.Equal(t, m.EpisodeLength, cb.steps[m.EpisodeID], "episode %d: OnEpisodeStep calls", m.EpisodeID)
		assert.Equal(t, m.EpisodeLength, cb.lengths[m.EpisodeID])
		assert.Equal(t, map[string]float64{"length_twice": 2 * float64(m.EpisodeLength)}, m.CustomMetrics)
	}
	// Episodes still running: created, started, stepped, not ended.
	running := 0
	for id, ev := range cb.events {
		if !slices.Contains(ev, "end") {
			running++
			assert.Equal(t, []string{"created", "start", "step"}[:len(ev)], ev, "episode %d", id)
		}
	}
	assert.LessOrEqual(t, running, 4)
	assert.Equal(t, len(ms)+running, len(cb.events))
	assert.Equal(t, int(r.Counters().EnvSteps), cb.userSeen, "user data seen on every step")
}

// With NoSamples the runner steps episodes, callbacks and metrics but builds no batch.
func TestNoSamples(t *testing.T) {
	p := bundledPolicy(t, "cartpole_mlp")
	cb := &eventRecorder{t: t}
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "CartPole-v1", nil, envOpts{numEnvs: 2, seed: 8}),
		NumEnvs: 2, Policies: singlePolicy(p, true), FragmentLength: 5, NoSamples: true, Callbacks: cb})
	var mb envrunner.MultiAgentBatch
	require.ErrorContains(t, r.Sample(&mb), "NoSamples")
	eventually(t, r, 2000, func() bool { return r.Counters().Episodes >= 3 })
	assert.False(t, r.Ready())
	r.Take(&mb)
	assert.Zero(t, mb.Rows())
	ms := r.Metrics(nil)
	require.GreaterOrEqual(t, len(ms), 3)
	require.Equal(t, r.Counters().Episodes, int64(len(ms)))
	for _, m := range ms {
		assert.Equal(t, m.EpisodeLength, cb.steps[m.EpisodeID])
	}
}

// lastSeen records, at the end of each episode, what the episode says about its agent.
type lastSeen struct {
	action, obs map[int64][]float32
}

func (c *lastSeen) OnEpisodeEnd(_ *envrunner.Runner, ep *envrunner.Episode) {
	c.action[ep.ID] = slices.Clone(ep.LastAction(env.DefaultAgentID))
	c.obs[ep.ID] = slices.Clone(ep.LastObservation(env.DefaultAgentID))
}

// In OnEpisodeEnd the episode's last action and observation are those of its final
// transition, as the batch records them (the other sub-environments acted in the same
// step).
func TestLastActionAndObservationAtEpisodeEnd(t *testing.T) {
	cb := &lastSeen{action: map[int64][]float32{}, obs: map[int64][]float32{}}
	be := makeEnv(t, "RandomEnv", env.Config{"action_space": `{"type": "Box", "low": -1, "high": 1, "shape": [2]}`,
		"min_episode_len": 3, "max_episode_len": 12}, envOpts{numEnvs: 4, seed: 6})
	r := newRunner(t, envrunner.Config{Env: be, NumEnvs: 4, FragmentLength: 25, Callbacks: cb,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Random: true,
			ObservationSpace: spaces.NewBox(-1, 1, 4), ActionSpace: spaces.NewBox(-1, 1, 2)}}})
	ended := 0
	for _, mb := range sampleBatches(t, r, 4) {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		for _, c := range checkChunks(t, b) {
			last := c.end - 1
			if !done(b, last) {
				continue
			}
			ended++
			require.Contains(t, cb.action, c.epsID)
			assert.Equal(t, envrunner.Row(b.Actions, 2, last), cb.action[c.epsID], "episode %d: LastAction in OnEpisodeEnd", c.epsID)
			assert.Equal(t, envrunner.Row(b.NewObs, 4, last), cb.obs[c.epsID], "episode %d: LastObservation in OnEpisodeEnd", c.epsID)
		}
	}
	assert.Positive(t, ended)
}

// envOrder records, per sub-environment, the episode callbacks in the order they came.
type envOrder struct {
	log map[int][]string
}

func (c *envOrder) add(ep *envrunner.Episode, what string) {
	if c.log == nil {
		c.log = map[int][]string{}
	}
	c.log[ep.EnvID] = append(c.log[ep.EnvID], what)
}

func (c *envOrder) OnEpisodeCreated(_ *envrunner.Runner, ep *envrunner.Episode) { c.add(ep, "created") }
func (c *envOrder) OnEpisodeStart(_ *envrunner.Runner, ep *envrunner.Episode)   { c.add(ep, "start") }
func (c *envOrder) OnEpisodeEnd(_ *envrunner.Runner, ep *envrunner.Episode)     { c.add(ep, "end") }

// TestCallbackOrderPerEnv checks RLlib's order within one sub-environment: an episode ends
// before the next one is created.
func TestCallbackOrderPerEnv(t *testing.T) {
	pol := bundledPolicy(t, "cartpole_mlp")
	cb := &envOrder{}
	r := newRunner(t, envrunner.Config{Env: makeEnv(t, "CartPole-v1", env.Config{"max_episode_steps": 7}, envOpts{numEnvs: 3, seed: 1}),
		NumEnvs: 3, Callbacks: cb, NoSamples: true,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: {Policy: pol}}})
	for range 30 {
		require.NoError(t, r.Step())
	}
	require.Len(t, cb.log, 3)
	for e, log := range cb.log {
		require.Greater(t, len(log), 6, "env %d", e)
		for i, what := range log {
			want := []string{"created", "start", "end"}[i%3]
			require.Equal(t, want, what, "env %d, callback %d: %v", e, i, log)
		}
	}
}
