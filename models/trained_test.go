package models

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/inference"
)

// greedyEnv is what the test needs from the classic environments.
type greedyEnv interface {
	Reset(seed env.Seed, obs []float32) (env.Info, error)
	Step(action []float32, obs []float32) (env.StepResult, error)
}

// TestTrainedGreedyReturns plays 100 greedy episodes (seeds 0..99) of each PPO-trained bundled
// policy through ONNX Runtime against the Go environments, one step at a time with the
// recurrent state carried per episode (zeros at the start), and checks the mean return. The
// Gaussian policy's action is its mean, clipped to [-1, 1] and scaled to the torque range
// [-2, 2] (RLlib's normalize_actions). Measured: 500, 500, about -150 (export/README.md).
func TestTrainedGreedyReturns(t *testing.T) {
	needRuntime(t)
	const episodes = 100
	cases := []struct {
		name     string
		make     func() (greedyEnv, error)
		obsDim   int
		gaussian bool
		min      float64 // the mean return must be at least this
	}{
		{"cartpole_mlp", func() (greedyEnv, error) { return classic.NewCartPole(nil) }, 4, false, 475},
		{"lstm_policy", func() (greedyEnv, error) { return classic.NewStatelessCartPole(nil) }, 2, false, 400},
		{"pendulum_gaussian", func() (greedyEnv, error) { return classic.NewPendulum(nil) }, 3, true, -400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Bundled(c.name)
			require.NoError(t, err)
			s, err := inference.NewSession(p.Model, inference.Options{Capacity: episodes, IntraOpThreads: 1})
			require.NoError(t, err)
			defer s.Close()
			require.NoError(t, s.SetBatch(episodes))
			obsT, err := s.Input(p.Spec.ObservationInput)
			require.NoError(t, err)
			actT, err := s.Output(p.Spec.ActionOutput)
			require.NoError(t, err)
			var stIn, stOut [][]float32
			for _, sp := range p.Spec.State {
				in, err := s.Input(sp.Input)
				require.NoError(t, err)
				out, err := s.Output(sp.Output)
				require.NoError(t, err)
				stIn, stOut = append(stIn, in.Float32()), append(stOut, out.Float32())
				clear(in.Float32())
			}

			envs := make([]greedyEnv, episodes)
			obs := obsT.Float32()
			for i := range envs {
				envs[i], err = c.make()
				require.NoError(t, err)
				_, err = envs[i].Reset(env.WithSeed(uint64(i)), obs[i*c.obsDim:(i+1)*c.obsDim])
				require.NoError(t, err)
			}
			returns := make([]float64, episodes)
			alive := make([]bool, episodes)
			for i := range alive {
				alive[i] = true
			}
			next := make([]float32, c.obsDim)
			for left := episodes; left > 0; {
				require.NoError(t, s.Run())
				for k := range stIn { // the state goes back in; finished rows are never read
					copy(stIn[k], stOut[k])
				}
				act := actT.Float32()
				for i, e := range envs {
					if !alive[i] {
						continue
					}
					var a float32
					if c.gaussian {
						a = 2 * min(max(act[2*i], -1), 1)
					} else if act[2*i+1] > act[2*i] {
						a = 1
					}
					res, err := e.Step([]float32{a}, next)
					require.NoError(t, err)
					copy(obs[i*c.obsDim:], next)
					returns[i] += res.Reward
					if res.Terminated || res.Truncated {
						alive[i] = false
						left--
					}
				}
			}
			mean, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for _, r := range returns {
				mean += r / episodes
				lo, hi = math.Min(lo, r), math.Max(hi, r)
			}
			t.Logf("%s: greedy return over %d episodes: mean %.2f, min %.2f, max %.2f", c.name, episodes, mean, lo, hi)
			require.GreaterOrEqual(t, mean, c.min)
		})
	}
}
