package classic

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/onnxrl/sampler/env"
	"github.com/stretchr/testify/require"
)

// testdata/golden.json holds trajectories recorded with gymnasium itself (see
// testdata/gen_golden.py): from a fixed state, a recorded action sequence, step by step.
type goldenFile struct {
	Generator string       `json:"generator"`
	Cases     []goldenCase `json:"cases"`
}

type goldenCase struct {
	Env             string       `json:"env"`
	MaxEpisodeSteps int          `json:"max_episode_steps"`
	State           []float64    `json:"state"`
	Steps           []goldenStep `json:"steps"`
}

type goldenStep struct {
	Action     []float32 `json:"action"`
	State      []float64 `json:"state"`
	Obs        []float32 `json:"obs"`
	Reward     float64   `json:"reward"`
	Terminated bool      `json:"terminated"`
	Truncated  bool      `json:"truncated"`
}

// stateful is implemented by every single-agent environment of the package.
type stateful interface {
	env.Env
	State() []float64
	SetState([]float64) error
	ElapsedSteps() int
}

// goldenTol is the largest difference allowed between this package and the recording, per
// environment. CartPole-v1 and MountainCar-v0 compute in float64 only: they match to the last
// bits that a different libm cos/sin can change. Acrobot-v1 is chaotic, so last-bit
// differences of sin/cos grow over hundreds of steps. Pendulum-v1 and MountainCarContinuous-v0
// mix float32 into the arithmetic; this package rounds as NumPy 2 does, while the recording
// was made with NumPy 1.x, which promotes those mixes to float64: they differ around 1e-8.
var goldenTol = map[string]float64{
	"CartPole-v1":              1e-12,
	"MountainCar-v0":           1e-12,
	"Acrobot-v1":               1e-9,
	"Pendulum-v1":              1e-6,
	"MountainCarContinuous-v0": 1e-6,
}

func loadGolden(t *testing.T) goldenFile {
	t.Helper()
	data, err := os.ReadFile("testdata/golden.json")
	require.NoError(t, err)
	var g goldenFile
	require.NoError(t, json.Unmarshal(data, &g))
	require.NotEmpty(t, g.Cases)
	return g
}

func TestGoldenTrajectories(t *testing.T) {
	g := loadGolden(t)
	t.Logf("recorded with %s", g.Generator)
	for ci, c := range g.Cases {
		t.Run(fmt.Sprintf("%s/%d", c.Env, ci), func(t *testing.T) {
			tol, ok := goldenTol[c.Env]
			require.True(t, ok, "no tolerance for %s", c.Env)
			made, err := env.Make(c.Env, env.Config{"max_episode_steps": c.MaxEpisodeSteps})
			require.NoError(t, err)
			e := made.Value().(stateful)
			obs := make([]float32, e.ObservationSpace().Size())
			_, err = e.Reset(env.WithSeed(0), obs)
			require.NoError(t, err)
			require.NoError(t, e.SetState(c.State))
			var maxState, maxObs, maxRew float64
			for i, st := range c.Steps {
				res, err := e.Step(st.Action, obs)
				require.NoError(t, err, "step %d", i+1)
				s := e.State()
				for k := range s {
					d := math.Abs(s[k] - st.State[k])
					maxState = max(maxState, d)
					require.LessOrEqual(t, d, tol, "step %d state[%d]: got %v want %v", i+1, k, s[k], st.State[k])
				}
				for k := range obs {
					d := math.Abs(float64(obs[k]) - float64(st.Obs[k]))
					maxObs = max(maxObs, d)
					// One float32 rounding step apart at most.
					require.LessOrEqual(t, d, tol+4e-7*math.Max(1, math.Abs(float64(st.Obs[k]))),
						"step %d obs[%d]: got %v want %v", i+1, k, obs[k], st.Obs[k])
				}
				d := math.Abs(res.Reward - st.Reward)
				maxRew = max(maxRew, d)
				require.LessOrEqual(t, d, tol*math.Max(1, math.Abs(st.Reward)), "step %d reward: got %v want %v", i+1, res.Reward, st.Reward)
				require.Equal(t, st.Terminated, res.Terminated, "step %d terminated", i+1)
				require.Equal(t, st.Truncated, res.Truncated, "step %d truncated", i+1)
				require.Equal(t, i+1, e.ElapsedSteps())
			}
			last := c.Steps[len(c.Steps)-1]
			require.True(t, last.Terminated || last.Truncated, "the recording ends the episode")
			_, err = e.Step(c.Steps[0].Action, obs)
			require.True(t, errors.Is(err, env.ErrNeedsReset), "step after the end: %v", err)
			t.Logf("%d steps; max |diff| state %.3g, obs %.3g, reward %.3g", len(c.Steps), maxState, maxObs, maxRew)
		})
	}
}
