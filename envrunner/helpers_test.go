package envrunner_test

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic" // also registers CartPole-v1 and the others
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// needORT skips the test when the ONNX Runtime library cannot be loaded.
func needORT(tb testing.TB) {
	tb.Helper()
	if err := inference.Init(); err != nil {
		tb.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
}

// bundledPolicy loads a bundled model; the runtime must be available.
func bundledPolicy(tb testing.TB, name string) *models.Policy {
	tb.Helper()
	needORT(tb)
	p, err := models.Bundled(name)
	require.NoError(tb, err)
	return p
}

// envOpts are the BaseEnv options of the tests' environments.
type envOpts struct {
	numEnvs int
	seed    uint64
	restart bool
}

// makeEnv builds a BaseEnv of registered environments: sub-environment i is
// env.Make(name, cfg), seeded with seed+i.
func makeEnv(tb testing.TB, name string, cfg env.Config, o envOpts) env.BaseEnv {
	tb.Helper()
	be, err := env.ToBaseEnv(func(int) (any, error) { return env.Make(name, cfg) },
		env.BaseEnvOptions{NumEnvs: o.numEnvs, Seed: env.WithSeed(o.seed), RestartFailedSubEnvironments: o.restart})
	require.NoError(tb, err)
	return be
}

// newRunner builds a runner that the test closes when it ends. When New fails, the
// environment is stopped and the test fails.
func newRunner(tb testing.TB, cfg envrunner.Config) *envrunner.Runner {
	tb.Helper()
	r, err := envrunner.New(cfg)
	if err != nil {
		_ = cfg.Env.Stop()
	}
	require.NoError(tb, err)
	tb.Cleanup(func() { require.NoError(tb, r.Close()) })
	return r
}

// singlePolicy is the Policies of a runner with one model policy.
func singlePolicy(p *models.Policy, explore bool) map[envrunner.PolicyID]envrunner.PolicyConfig {
	return map[envrunner.PolicyID]envrunner.PolicyConfig{
		envrunner.DefaultPolicyID: {Policy: p, Action: actionCfg(explore), Session: inference.Options{IntraOpThreads: 1}},
	}
}

// sampleBatches takes n fragments, each into a batch of its own.
func sampleBatches(tb testing.TB, r *envrunner.Runner, n int) []*envrunner.MultiAgentBatch {
	tb.Helper()
	out := make([]*envrunner.MultiAgentBatch, n)
	for i := range out {
		out[i] = &envrunner.MultiAgentBatch{}
		require.NoError(tb, r.Sample(out[i]))
	}
	return out
}

// chunk is a run of rows [start, end) of one agent episode in a sample batch.
type chunk struct {
	start, end int
	epsID      int64
	agent      int32
}

func (c chunk) len() int { return c.end - c.start }

// chunksOf splits a batch into its agent-episode chunks and checks that the rows of one agent
// episode are contiguous (one chunk per agent episode and batch).
func chunksOf(tb testing.TB, b *envrunner.SampleBatch) []chunk {
	tb.Helper()
	type key struct {
		eps   int64
		agent int32
	}
	seen := map[key]bool{}
	var out []chunk
	for i := 0; i < b.Count; i++ {
		if i == 0 || b.EpsID[i] != b.EpsID[i-1] || b.AgentIndex[i] != b.AgentIndex[i-1] {
			k := key{b.EpsID[i], b.AgentIndex[i]}
			require.False(tb, seen[k], "row %d: agent %d of episode %d has rows in two places of the batch", i, k.agent, k.eps)
			seen[k] = true
			out = append(out, chunk{start: i, end: i + 1, epsID: k.eps, agent: k.agent})
			continue
		}
		out[len(out)-1].end = i + 1
	}
	return out
}

// checkChunks checks what holds within every chunk of a batch: t increases (by one for an
// agent that observes at every env step: t is the episode's env step), env_id is constant, obs[i+1] == new_obs[i], and only the last row may be terminated or truncated.
func checkChunks(tb testing.TB, b *envrunner.SampleBatch) []chunk {
	tb.Helper()
	require.NoError(tb, b.Validate())
	cs := chunksOf(tb, b)
	w := b.ObsWidth
	for _, c := range cs {
		for i := c.start; i < c.end; i++ {
			if i > c.start {
				require.Less(tb, b.T[i-1], b.T[i], "row %d: t", i)
				require.Equal(tb, b.EnvID[c.start], b.EnvID[i], "row %d: env_id", i)
				require.Equal(tb, envrunner.Row(b.NewObs, w, i-1), envrunner.Row(b.Obs, w, i), "row %d: obs is not the previous new_obs", i)
			}
			if i < c.end-1 {
				require.False(tb, b.Terminateds[i] || b.Truncateds[i], "row %d: done before the end of its chunk", i)
			}
		}
	}
	return cs
}

// done reports whether row i ended its episode.
func done(b *envrunner.SampleBatch, i int) bool { return b.Terminateds[i] || b.Truncateds[i] }

// logSoftmaxAt returns log(softmax(logits)[a]) in float64.
func logSoftmaxAt(logits []float32, a int) float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = math.Max(m, float64(l))
	}
	s := 0.0
	for _, l := range logits {
		s += math.Exp(float64(l) - m)
	}
	return float64(logits[a]) - m - math.Log(s)
}

// eventually steps the runner until cond holds, at most n steps.
func eventually(tb testing.TB, r *envrunner.Runner, n int, cond func() bool) {
	tb.Helper()
	for range n {
		if cond() {
			return
		}
		require.NoError(tb, r.Step())
	}
	require.True(tb, cond(), "condition not reached in %d steps", n)
}

func actionCfg(explore bool) connectors.ActionConfig {
	// RLlib's default normalize_actions: a Gaussian policy's samples may leave the Box, and
	// the environments refuse such actions.
	return connectors.ActionConfig{Explore: explore, NormalizeActions: true}
}

// cartPoleModel predicts CartPole-v1 transitions from recorded observations with the
// environment's own dynamics.
type cartPoleModel struct{ c *classic.CartPole }

func newCartPoleModel(tb testing.TB) *cartPoleModel {
	tb.Helper()
	c, err := classic.NewCartPole(env.Config{"max_episode_steps": 0})
	require.NoError(tb, err)
	return &cartPoleModel{c: c}
}

// next returns the observation that follows obs under action, and whether it terminates.
func (m *cartPoleModel) next(tb testing.TB, obs []float32, action float32) ([]float32, bool) {
	tb.Helper()
	out := make([]float32, 4)
	_, err := m.c.Reset(env.Seed{}, out)
	require.NoError(tb, err)
	require.NoError(tb, m.c.SetState([]float64{float64(obs[0]), float64(obs[1]), float64(obs[2]), float64(obs[3])}))
	res, err := m.c.Step([]float32{action}, out)
	require.NoError(tb, err)
	return out, res.Terminated
}

// directNet runs a policy's model directly, one row at a time, for reference values.
type directNet struct {
	sess              *inference.Session
	obs, act, value   *inference.Tensor
	stateIn, stateOut []*inference.Tensor
}

func newDirectNet(tb testing.TB, p *models.Policy) *directNet {
	tb.Helper()
	sess, err := inference.NewSession(p.Model, inference.Options{Capacity: 1, IntraOpThreads: 1})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = sess.Close() })
	require.NoError(tb, sess.SetBatch(1))
	n := &directNet{sess: sess}
	n.obs, err = sess.Input(p.Spec.ObservationInput)
	require.NoError(tb, err)
	n.act, err = sess.Output(p.Spec.ActionOutput)
	require.NoError(tb, err)
	n.value, err = sess.Output(p.Spec.ValueOutput)
	require.NoError(tb, err)
	for _, sp := range p.Spec.State {
		in, err := sess.Input(sp.Input)
		require.NoError(tb, err)
		out, err := sess.Output(sp.Output)
		require.NoError(tb, err)
		n.stateIn, n.stateOut = append(n.stateIn, in), append(n.stateOut, out)
	}
	return n
}

// run runs one row: the observation and the states going in (nil: zeros). It returns copies
// of the action output row, the value and the states coming out.
func (n *directNet) run(tb testing.TB, obs []float32, states [][]float32) (act []float32, value float32, out [][]float32) {
	tb.Helper()
	copy(n.obs.Float32(), obs)
	for k, t := range n.stateIn {
		if states == nil {
			clear(t.Float32())
		} else {
			copy(t.Float32(), states[k])
		}
	}
	require.NoError(tb, n.sess.Run())
	for _, t := range n.stateOut {
		out = append(out, slices.Clone(t.Float32()))
	}
	return slices.Clone(n.act.Float32()), n.value.Float32()[0], out
}

// randomPolicies are random policies for RandomEnv's default spaces (Box(-1, 1, (4,)),
// Discrete(2)).
func randomPolicies(ids ...envrunner.PolicyID) map[envrunner.PolicyID]envrunner.PolicyConfig {
	m := map[envrunner.PolicyID]envrunner.PolicyConfig{}
	for _, id := range ids {
		m[id] = envrunner.PolicyConfig{Random: true, ObservationSpace: spaces.NewBox(-1, 1, 4), ActionSpace: &spaces.Discrete{N: 2}}
	}
	return m
}

// pushingEnv makes sub-environment 0 of a CartPole BaseEnv push right on every step,
// whatever the policy chose, and reports that action with the observation it is taken at
// (OffPolicyAction): its episodes terminate within a few dozen steps however good the
// policy is, so the tests see terminations.
type pushingEnv struct {
	env.BaseEnv
	acts []env.Action
}

var pushRight = []float32{1}

func pushing(be env.BaseEnv) env.BaseEnv { return &pushingEnv{BaseEnv: be} }

func (p *pushingEnv) mark(dst *env.Batch, from int) {
	for i := from; i < len(dst.Agents); i++ {
		if a := &dst.Agents[i]; a.Env == 0 && !a.Terminated && !a.Truncated {
			a.OffPolicyAction = pushRight
		}
	}
}

func (p *pushingEnv) Poll(dst *env.Batch) error {
	from := len(dst.Agents)
	err := p.BaseEnv.Poll(dst)
	p.mark(dst, from)
	return err
}

func (p *pushingEnv) TryReset(e env.EnvID, seed env.Seed, dst *env.Batch) (bool, error) {
	from := len(dst.Agents)
	async, err := p.BaseEnv.TryReset(e, seed, dst)
	p.mark(dst, from)
	return async, err
}

func (p *pushingEnv) SendActions(actions []env.Action) error {
	p.acts = append(p.acts[:0], actions...)
	for i := range p.acts {
		if p.acts[i].Env == 0 {
			p.acts[i].Action = pushRight
		}
	}
	return p.BaseEnv.SendActions(p.acts)
}
