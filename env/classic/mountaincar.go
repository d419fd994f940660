package classic

import (
	"fmt"
	"math"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// Mountain car constants, as gymnasium's MountainCarEnv and Continuous_MountainCarEnv set them.
var (
	mcMinPosition = -1.2
	mcMaxPosition = 0.6
	mcMaxSpeed    = 0.07
	mcForce       = 0.001  // MountainCar-v0
	mcGravity     = 0.0025 // MountainCar-v0; MountainCarContinuous-v0 writes the literal 0.0025
	mcPower       = 0.0015 // MountainCarContinuous-v0
	mcGoalDisc    = 0.5    // MountainCar-v0 goal position
	mcGoalCont    = 0.45   // MountainCarContinuous-v0 goal position
)

func mountainCarObsSpace() *spaces.Box {
	return spaces.NewBoxBounds(f32s(mcMinPosition, -mcMaxSpeed), f32s(mcMaxPosition, mcMaxSpeed))
}

// MountainCar is gymnasium's MountainCar-v0.
//
// State: [position, velocity] (float64). Observation: the state as float32, in
// Box([-1.2, -0.07], [0.6, 0.07]). Action: Discrete(3) (0 accelerate left, 1 none, 2 right).
// velocity += (action-1)*0.001 - 0.0025*cos(3 position), clipped to [-0.07, 0.07]; position +=
// velocity, clipped to [-1.2, 0.6], and the velocity is zeroed when the car hits the left wall
// moving left. The episode terminates when position >= 0.5 and velocity >= goal_velocity; the
// reward is -1 on every step. Reset draws the position from [-0.6, -0.4), velocity 0.
//
// Config keys: goal_velocity (default 0), max_episode_steps (default 200).
type MountainCar struct {
	goalVelocity float64
	state        [2]float64
	src          source
	ep           episode
	obsSpace     *spaces.Box
	actSpace     *spaces.Discrete
}

// NewMountainCar returns a MountainCar-v0.
func NewMountainCar(cfg env.Config) (*MountainCar, error) {
	if err := cfg.Check("goal_velocity", "max_episode_steps"); err != nil {
		return nil, err
	}
	limit, err := maxEpisodeSteps(cfg, 200)
	if err != nil {
		return nil, err
	}
	gv, err := finiteFloat(cfg, "goal_velocity", 0)
	if err != nil {
		return nil, err
	}
	m := &MountainCar{goalVelocity: gv, ep: episode{limit: limit}}
	m.src.init(DefaultSeed)
	m.obsSpace = mountainCarObsSpace()
	m.actSpace = &spaces.Discrete{N: 3}
	return m, nil
}

// ObservationSpace returns Box([-1.2, -0.07], [0.6, 0.07]).
func (m *MountainCar) ObservationSpace() spaces.Space { return m.obsSpace }

// ActionSpace returns Discrete(3).
func (m *MountainCar) ActionSpace() spaces.Space { return m.actSpace }

// Reset starts an episode at a position uniform in [-0.6, -0.4) with velocity 0.
func (m *MountainCar) Reset(seed env.Seed, obs []float32) (env.Info, error) {
	checkObs("MountainCar-v0", obs, 2)
	m.src.reset(seed)
	m.state = [2]float64{m.src.uniform(-0.6, -0.4), 0}
	m.ep.start()
	obs[0], obs[1] = float32(m.state[0]), float32(m.state[1])
	return nil, nil
}

// Step applies action (0: left, 1: none, 2: right).
func (m *MountainCar) Step(action []float32, obs []float32) (env.StepResult, error) {
	checkObs("MountainCar-v0", obs, 2)
	if err := m.ep.check(); err != nil {
		return env.StepResult{}, err
	}
	a, ok := discreteAction(m.actSpace, action)
	if !ok {
		return env.StepResult{}, actionError("", action, m.actSpace)
	}
	position, velocity := m.state[0], m.state[1]
	velocity += float64(a-1)*mcForce + math.Cos(3*position)*(-mcGravity)
	velocity = min(max(velocity, -mcMaxSpeed), mcMaxSpeed)
	position += velocity
	position = min(max(position, mcMinPosition), mcMaxPosition)
	if position == mcMinPosition && velocity < 0 {
		velocity = 0
	}
	terminated := position >= mcGoalDisc && velocity >= m.goalVelocity
	m.state = [2]float64{position, velocity}
	obs[0], obs[1] = float32(position), float32(velocity)
	return env.StepResult{Reward: -1, Terminated: terminated, Truncated: m.ep.finish(terminated)}, nil
}

// State returns a copy of the state [position, velocity].
func (m *MountainCar) State() []float64 { return append([]float64(nil), m.state[:]...) }

// SetState replaces the state with s ([position, velocity]); the step count and whether the
// episode needs a Reset are unchanged.
func (m *MountainCar) SetState(s []float64) error {
	return setState("MountainCar-v0", m.state[:], s)
}

// ElapsedSteps returns the number of steps since the last Reset.
func (m *MountainCar) ElapsedSteps() int { return m.ep.elapsed }

// Render returns a one-line text description of the state.
func (m *MountainCar) Render() (any, error) {
	return fmt.Sprintf("MountainCar-v0 step=%d position=%+.4f velocity=%+.5f",
		m.ep.elapsed, m.state[0], m.state[1]), nil
}

// MountainCarContinuous is gymnasium's MountainCarContinuous-v0.
//
// State: [position, velocity]. Observation: the state as float32, in
// Box([-1.2, -0.07], [0.6, 0.07]). Action: the force, in Box(-1, 1, (1,)); like gymnasium,
// Step clips it to [-1, 1] rather than rejecting it (NaN and a wrong length are errors).
// velocity += force*0.0015 - 0.0025*cos(3 position), clipped to [-0.07, 0.07]; position +=
// velocity, clipped to [-1.2, 0.6], with the velocity zeroed at the left wall. The episode
// terminates when position >= 0.45 and velocity >= goal_velocity. The reward is 100 on the
// terminating step, minus 0.1*action^2 on every step, where action is the action as given,
// before clipping (gymnasium's reward -= math.pow(action[0], 2) * 0.1). Reset draws the
// position from [-0.6, -0.4), velocity 0.
//
// Gymnasium stores the state as float32 after every step (the state after a Reset, or set
// with SetState, is float64), so the next step starts from the float32-rounded state, and the
// float32 action makes part of the arithmetic float32; Step rounds exactly where NumPy 2 does.
//
// Config keys: goal_velocity (default 0), max_episode_steps (default 999).
type MountainCarContinuous struct {
	goalVelocity float64
	state        [2]float64
	state32      bool // the state is a float32 array (after a Step)
	src          source
	ep           episode
	obsSpace     *spaces.Box
	actSpace     *spaces.Box
}

// NewMountainCarContinuous returns a MountainCarContinuous-v0.
func NewMountainCarContinuous(cfg env.Config) (*MountainCarContinuous, error) {
	if err := cfg.Check("goal_velocity", "max_episode_steps"); err != nil {
		return nil, err
	}
	limit, err := maxEpisodeSteps(cfg, 999)
	if err != nil {
		return nil, err
	}
	gv, err := finiteFloat(cfg, "goal_velocity", 0)
	if err != nil {
		return nil, err
	}
	m := &MountainCarContinuous{goalVelocity: gv, ep: episode{limit: limit}}
	m.src.init(DefaultSeed)
	m.obsSpace = mountainCarObsSpace()
	m.actSpace = spaces.NewBox(-1, 1, 1)
	return m, nil
}

// ObservationSpace returns Box([-1.2, -0.07], [0.6, 0.07]).
func (m *MountainCarContinuous) ObservationSpace() spaces.Space { return m.obsSpace }

// ActionSpace returns Box(-1, 1, (1,)).
func (m *MountainCarContinuous) ActionSpace() spaces.Space { return m.actSpace }

// Reset starts an episode at a position uniform in [-0.6, -0.4) with velocity 0.
func (m *MountainCarContinuous) Reset(seed env.Seed, obs []float32) (env.Info, error) {
	checkObs("MountainCarContinuous-v0", obs, 2)
	m.src.reset(seed)
	m.state = [2]float64{m.src.uniform(-0.6, -0.4), 0}
	m.state32 = false
	m.ep.start()
	obs[0], obs[1] = float32(m.state[0]), float32(m.state[1])
	return nil, nil
}

// num is a scalar of gymnasium's arithmetic together with the kind that decides NumPy 2's
// promotion: is32 for a NumPy float32, false for a float64 (a NumPy float64 or a Python
// float). Python floats are "weak": combined with a NumPy float32 they are cast to float32.
// A NumPy float64 is not, but one only appears here as the state after a Reset, where the
// explicit branches of Step handle it.
type num struct {
	v    float64
	is32 bool
}

// gt, lt, ge and eq compare x with a Python float constant: in float32 when x is a NumPy
// float32 (NumPy 2 casts the Python float to float32), in float64 otherwise.
func (x num) gt(c float64) bool {
	if x.is32 {
		return float32(x.v) > float32(c)
	}
	return x.v > c
}

func (x num) lt(c float64) bool {
	if x.is32 {
		return float32(x.v) < float32(c)
	}
	return x.v < c
}

func (x num) ge(c float64) bool {
	if x.is32 {
		return float32(x.v) >= float32(c)
	}
	return x.v >= c
}

func (x num) eq(c float64) bool {
	if x.is32 {
		return float32(x.v) == float32(c)
	}
	return x.v == c
}

// Step applies the force action[0], clipped to [-1, 1].
func (m *MountainCarContinuous) Step(action []float32, obs []float32) (env.StepResult, error) {
	checkObs("MountainCarContinuous-v0", obs, 2)
	if err := m.ep.check(); err != nil {
		return env.StepResult{}, err
	}
	if len(action) != 1 || action[0] != action[0] {
		return env.StepResult{}, actionError("", action, m.actSpace)
	}
	a := action[0]

	// position = self.state[0]; velocity = self.state[1]
	position := num{m.state[0], m.state32}
	velocity := num{m.state[1], m.state32}

	// force = min(max(action[0], -1.0), 1.0): the float32 action, or a Python float when
	// clipped.
	// velocity += force * self.power - 0.0025 * math.cos(3 * position)
	var x3 float64
	if position.is32 {
		x3 = float64(3 * float32(position.v))
	} else {
		x3 = 3 * position.v
	}
	gterm := 0.0025 * math.Cos(x3) // a Python float
	var acc float64
	switch {
	case a < -1:
		acc = -1*mcPower - gterm
	case a > 1:
		acc = 1*mcPower - gterm
	default: // float32 force: the product and the difference are float32
		acc = float64(a*float32(mcPower) - float32(gterm))
	}
	if velocity.is32 {
		velocity.v = float64(float32(velocity.v) + float32(acc))
	} else {
		velocity.v += acc
	}

	if velocity.gt(mcMaxSpeed) {
		velocity = num{mcMaxSpeed, false}
	}
	if velocity.lt(-mcMaxSpeed) {
		velocity = num{-mcMaxSpeed, false}
	}
	// position += velocity
	if position.is32 {
		position.v = float64(float32(position.v) + float32(velocity.v))
	} else {
		position.v += velocity.v
	}
	if position.gt(mcMaxPosition) {
		position = num{mcMaxPosition, false}
	}
	if position.lt(mcMinPosition) {
		position = num{mcMinPosition, false}
	}
	if position.eq(mcMinPosition) && velocity.v < 0 {
		velocity = num{0, false}
	}
	terminated := position.ge(mcGoalCont) && velocity.ge(m.goalVelocity)

	reward := 0.0
	if terminated {
		reward = 100.0
	}
	reward -= float64(a) * float64(a) * 0.1

	m.state = [2]float64{float64(float32(position.v)), float64(float32(velocity.v))}
	m.state32 = true
	obs[0], obs[1] = float32(m.state[0]), float32(m.state[1])
	return env.StepResult{Reward: reward, Terminated: terminated, Truncated: m.ep.finish(terminated)}, nil
}

// State returns a copy of the state [position, velocity].
func (m *MountainCarContinuous) State() []float64 { return append([]float64(nil), m.state[:]...) }

// SetState replaces the state with s ([position, velocity], a float64 state as after a
// Reset); the step count and whether the episode needs a Reset are unchanged.
func (m *MountainCarContinuous) SetState(s []float64) error {
	if err := setState("MountainCarContinuous-v0", m.state[:], s); err != nil {
		return err
	}
	m.state32 = false
	return nil
}

// ElapsedSteps returns the number of steps since the last Reset.
func (m *MountainCarContinuous) ElapsedSteps() int { return m.ep.elapsed }

// Render returns a one-line text description of the state.
func (m *MountainCarContinuous) Render() (any, error) {
	return fmt.Sprintf("MountainCarContinuous-v0 step=%d position=%+.4f velocity=%+.5f",
		m.ep.elapsed, m.state[0], m.state[1]), nil
}
