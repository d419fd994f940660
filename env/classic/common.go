package classic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// DefaultSeed is the seed of a new environment: Reset without a seed on an environment that
// was never seeded draws its initial state as if it had been reset with env.WithSeed(DefaultSeed).
// Agent i of MultiAgentCartPole starts from DefaultSeed+i.
const DefaultSeed uint64 = 0

// source is an environment's random source: a PCG reseeded in place, so that seeding does
// not allocate.
type source struct {
	pcg rand.PCG
	rng *rand.Rand
}

func (s *source) init(seed uint64) {
	s.rng = rand.New(&s.pcg)
	s.seed(seed)
}

// seed reseeds the PCG from v; the second word is v passed through SplitMix64's finalizer so
// that nearby seeds (seed+i for the i-th environment) start far apart in the state space.
func (s *source) seed(v uint64) {
	z := v + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	s.pcg.Seed(v, z^(z>>31))
}

func (s *source) reset(seed env.Seed) {
	if seed.Set {
		s.seed(seed.Value)
	}
}

// uniform draws from [low, high) as numpy's Generator.uniform does: low + (high-low)*U.
func (s *source) uniform(low, high float64) float64 {
	return low + (high-low)*s.rng.Float64()
}

// episode is gymnasium's TimeLimit wrapper plus the bookkeeping for ErrNeedsReset.
type episode struct {
	limit   int // max_episode_steps; 0: no limit
	elapsed int
	running bool
}

func (e *episode) start() {
	e.elapsed = 0
	e.running = true
}

func (e *episode) check() error {
	if !e.running {
		return env.ErrNeedsReset
	}
	return nil
}

// finish counts a step and reports whether the time limit truncates it. As gymnasium's
// TimeLimit does, it truncates on reaching the limit whether or not the step terminated.
func (e *episode) finish(terminated bool) (truncated bool) {
	e.elapsed++
	truncated = e.limit > 0 && e.elapsed >= e.limit
	if terminated || truncated {
		e.running = false
	}
	return truncated
}

// maxEpisodeSteps reads the max_episode_steps config key.
func maxEpisodeSteps(cfg env.Config, def int) (int, error) {
	n, err := cfg.Int("max_episode_steps", def)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("classic: config max_episode_steps: must be >= 0 (0: no limit), got %d", n)
	}
	return n, nil
}

// finiteFloat reads a float config key that must be finite.
func finiteFloat(cfg env.Config, key string, def float64) (float64, error) {
	v, err := cfg.Float(key, def)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("classic: config %s: must be finite, got %v", key, v)
	}
	return v, nil
}

// checkObs panics when obs does not have n elements (a programmer error).
func checkObs(name string, obs []float32, n int) {
	if len(obs) != n {
		badObs(name, len(obs), n)
	}
}

//go:noinline
func badObs(name string, got, want int) {
	panic(fmt.Sprintf("classic: %s: len(obs) = %d, want %d (ObservationSpace().Size())", name, got, want))
}

func actionError(agent env.AgentID, action []float32, space spaces.Space) error {
	return &env.ActionError{Agent: agent, Action: slices.Clone(action), Space: spaces.String(space)}
}

// discreteAction returns the value of a Discrete action, or false when it is not in space.
func discreteAction(space *spaces.Discrete, action []float32) (int, bool) {
	if !space.Contains(action) {
		return 0, false
	}
	return int(action[0]), true
}

// setState copies s into dst after checking its length.
func setState(name string, dst, s []float64) error {
	if len(s) != len(dst) {
		return fmt.Errorf("classic: %s: SetState: want %d values, got %d", name, len(dst), len(s))
	}
	copy(dst, s)
	return nil
}

func maker[T any](f func(env.Config) (T, error)) env.Maker {
	return func(cfg env.Config) (any, error) {
		e, err := f(cfg)
		if err != nil {
			return nil, err
		}
		return e, nil
	}
}

func init() {
	env.Register("CartPole-v1", maker(NewCartPole))
	env.Register("StatelessCartPole", maker(NewStatelessCartPole))
	env.Register("Pendulum-v1", maker(NewPendulum))
	env.Register("MountainCar-v0", maker(NewMountainCar))
	env.Register("MountainCarContinuous-v0", maker(NewMountainCarContinuous))
	env.Register("Acrobot-v1", maker(NewAcrobot))
	env.Register("MultiAgentCartPole", maker(NewMultiAgentCartPole))
}

// float32 bounds helpers.
func f32s(v ...float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func neg(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = -x
	}
	return out
}
