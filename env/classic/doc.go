// Package classic implements gymnasium's classic-control environments (CartPole-v1,
// Pendulum-v1, MountainCar-v0, MountainCarContinuous-v0, Acrobot-v1) and RLlib's
// StatelessCartPole and MultiAgentCartPole, natively in Go, and registers them by name in
// package env.
//
// # Usage
//
//	import _ "github.com/onnxrl/sampler/env/classic" // registers the environments
//
//	e, err := env.Make("CartPole-v1", env.Config{"max_episode_steps": 200})
//	if err != nil {
//		return err
//	}
//	cp := e.(env.Env)
//	obs := make([]float32, cp.ObservationSpace().Size())
//	if _, err := cp.Reset(env.WithSeed(7), obs); err != nil {
//		return err
//	}
//	for {
//		res, err := cp.Step([]float32{1}, obs) // push right
//		if err != nil {
//			return err
//		}
//		if res.Terminated || res.Truncated {
//			break
//		}
//	}
//
// The constructors (NewCartPole, NewPendulum, ...) take the same env.Config and return the
// concrete types, which add State and SetState (the internal float64 state, for reference
// trajectories and for users who start episodes from given states), ElapsedSteps and Render.
//
// # Fidelity to gymnasium
//
// The dynamics, spaces (float32 bounds, with +Inf where gymnasium uses np.inf), rewards,
// termination and reset distributions are gymnasium's (gymnasium 1.x, classic_control),
// computed in float64 as gymnasium computes them, in the same order of operations, so that the
// same state and actions give the same trajectory. Where gymnasium's arithmetic mixes
// float32 values into the computation (the float32 action of Pendulum and
// MountainCarContinuous, the float32 state that MountainCarContinuous stores after each step,
// the float32 initial state of Acrobot), this package rounds exactly where NumPy 2 does (NEP 50
// promotion: a Python float combined with a NumPy float32 stays float32). NumPy 1.x promotes
// those mixes to float64, so a trajectory computed with NumPy 1.x differs from this package in
// the 8th significant digit for those two environments. Trigonometric functions come from Go's
// math package and may differ from the C library's in the last bit, and on architectures where
// the Go compiler fuses multiply-adds (arm64, ppc64le, s390x) some products are not rounded
// separately; both effects stay at the level of the last bit (1e-15) except in Acrobot-v1,
// whose chaotic dynamics amplify them over long episodes. testdata/golden.json holds
// trajectories recorded with gymnasium itself (testdata/gen_golden.py) that the tests replay.
//
// What is not reproduced is the random number stream: resets draw from a math/rand/v2 PCG
// source, not from NumPy's PCG64, so the same seed gives a different (but reproducible)
// initial state than gymnasium. The reset distributions are the same (uniform on gymnasium's
// intervals, [low, high)).
//
// # Time limits
//
// Each environment applies gymnasium's TimeLimit wrapper with the max_episode_steps of its
// gymnasium registration (CartPole-v1 500, Pendulum-v1 200, MountainCar-v0 200,
// MountainCarContinuous-v0 999, Acrobot-v1 500; StatelessCartPole 500 as CartPole-v1, and each
// agent of MultiAgentCartPole 500). The config key max_episode_steps overrides it for every
// environment; 0 removes the limit. As in gymnasium, the step on which the step count reaches
// the limit reports Truncated, even when it also reports Terminated (both flags are then set).
//
// # Seeding
//
// Each environment owns a *rand.Rand over a PCG source. Reset(env.WithSeed(s), obs) reseeds it
// deterministically from s; Reset without a seed keeps drawing from the current stream. A new
// environment is seeded with DefaultSeed, so an environment that is never seeded still gives
// the same episodes on every run: Reset(env.Seed{}) on a new environment is
// Reset(env.WithSeed(DefaultSeed)).
//
// # Actions
//
// Step validates the action against the action space and returns an *env.ActionError without
// changing anything when it is not in it: the discrete environments reject anything but an
// integer in range, the continuous ones (Pendulum-v1, MountainCarContinuous-v0) a wrong length
// or NaN. Like gymnasium, the continuous environments clip out-of-range values (±Inf
// included) to the bounds of the action space instead of rejecting them. Stepping before the
// first Reset or after the episode ended returns env.ErrNeedsReset.
//
// # Buffers and allocation
//
// Reset and Step write the observation into the caller's obs slice, which must have
// ObservationSpace().Size() elements (a different length is a programmer error and panics).
// Neither allocates. An environment is not safe for concurrent use.
package classic
