package classic

import (
	"fmt"
	"math"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// Acrobot constants, as gymnasium's AcrobotEnv sets them ("book" dynamics, no torque noise).
var (
	acDt       = 0.2
	acL1       = 1.0 // LINK_LENGTH_1
	acM1       = 1.0 // LINK_MASS_1
	acM2       = 1.0 // LINK_MASS_2
	acLc1      = 0.5 // LINK_COM_POS_1
	acLc2      = 0.5 // LINK_COM_POS_2
	acMOI      = 1.0 // LINK_MOI
	acG        = 9.8
	acPi       = math.Pi
	acMaxVel1  = 4 * acPi
	acMaxVel2  = 9 * acPi
	acTorques  = [3]float64{-1.0, 0.0, +1}
	acRK4Half  = acDt / 2.0
	acRK4Sixth = acDt / 6.0
)

// Acrobot is gymnasium's Acrobot-v1.
//
// State: [theta1, theta2, dtheta1, dtheta2] (float64). Observation: [cos theta1, sin theta1,
// cos theta2, sin theta2, dtheta1, dtheta2] in Box(-high, high), high = [1, 1, 1, 1, 4 pi,
// 9 pi]. Action: Discrete(3), the torque -1, 0 or +1 on the joint between the links. A step
// integrates the book's dynamics over dt = 0.2 with one classical Runge-Kutta step (gymnasium's
// rk4 on the state augmented by the torque), wraps the angles to [-pi, pi] and bounds the
// velocities to [-4 pi, 4 pi] and [-9 pi, 9 pi]. The episode terminates when
// -cos(theta1) - cos(theta2 + theta1) > 1; the reward is -1 per step and 0 on the terminating
// step. Reset draws each state variable uniformly from [-0.1, 0.1) and rounds it to float32,
// as gymnasium does.
//
// Config keys: max_episode_steps (default 500).
type Acrobot struct {
	state    [4]float64
	src      source
	ep       episode
	obsSpace *spaces.Box
	actSpace *spaces.Discrete
}

// NewAcrobot returns an Acrobot-v1.
func NewAcrobot(cfg env.Config) (*Acrobot, error) {
	if err := cfg.Check("max_episode_steps"); err != nil {
		return nil, err
	}
	limit, err := maxEpisodeSteps(cfg, 500)
	if err != nil {
		return nil, err
	}
	a := &Acrobot{ep: episode{limit: limit}}
	a.src.init(DefaultSeed)
	high := f32s(1, 1, 1, 1, acMaxVel1, acMaxVel2)
	a.obsSpace = spaces.NewBoxBounds(neg(high), high)
	a.actSpace = &spaces.Discrete{N: 3}
	return a, nil
}

// ObservationSpace returns the observation space (a *spaces.Box).
func (a *Acrobot) ObservationSpace() spaces.Space { return a.obsSpace }

// ActionSpace returns Discrete(3).
func (a *Acrobot) ActionSpace() spaces.Space { return a.actSpace }

// Reset starts an episode from a state uniform in [-0.1, 0.1)^4, rounded to float32.
func (a *Acrobot) Reset(seed env.Seed, obs []float32) (env.Info, error) {
	checkObs("Acrobot-v1", obs, 6)
	a.src.reset(seed)
	for i := range a.state {
		a.state[i] = float64(float32(a.src.uniform(-0.1, 0.1)))
	}
	a.ep.start()
	a.observe(obs)
	return nil, nil
}

// Step applies the torque of action (0: -1, 1: 0, 2: +1) for dt = 0.2.
func (a *Acrobot) Step(action []float32, obs []float32) (env.StepResult, error) {
	checkObs("Acrobot-v1", obs, 6)
	if err := a.ep.check(); err != nil {
		return env.StepResult{}, err
	}
	act, ok := discreteAction(a.actSpace, action)
	if !ok {
		return env.StepResult{}, actionError("", action, a.actSpace)
	}
	s := a.state
	y0 := [5]float64{s[0], s[1], s[2], s[3], acTorques[act]}
	ns := rk4(&y0)
	ns[0] = wrap(ns[0], -acPi, acPi)
	ns[1] = wrap(ns[1], -acPi, acPi)
	ns[2] = bound(ns[2], -acMaxVel1, acMaxVel1)
	ns[3] = bound(ns[3], -acMaxVel2, acMaxVel2)
	a.state = [4]float64{ns[0], ns[1], ns[2], ns[3]}

	terminated := -math.Cos(a.state[0])-math.Cos(a.state[1]+a.state[0]) > 1.0
	reward := -1.0
	if terminated {
		reward = 0
	}
	a.observe(obs)
	return env.StepResult{Reward: reward, Terminated: terminated, Truncated: a.ep.finish(terminated)}, nil
}

func (a *Acrobot) observe(obs []float32) {
	s := a.state
	obs[0] = float32(math.Cos(s[0]))
	obs[1] = float32(math.Sin(s[0]))
	obs[2] = float32(math.Cos(s[1]))
	obs[3] = float32(math.Sin(s[1]))
	obs[4] = float32(s[2])
	obs[5] = float32(s[3])
}

// rk4 is gymnasium's rk4 over t = [0, dt]: one classical Runge-Kutta step of dsdt from y0.
func rk4(y0 *[5]float64) [5]float64 {
	var y [5]float64
	k1 := dsdt(y0)
	for i := range y {
		y[i] = y0[i] + acRK4Half*k1[i]
	}
	k2 := dsdt(&y)
	for i := range y {
		y[i] = y0[i] + acRK4Half*k2[i]
	}
	k3 := dsdt(&y)
	for i := range y {
		y[i] = y0[i] + acDt*k3[i]
	}
	k4 := dsdt(&y)
	for i := range y {
		y[i] = y0[i] + acRK4Sixth*(k1[i]+2*k2[i]+2*k3[i]+k4[i])
	}
	return y
}

// dsdt is AcrobotEnv._dsdt ("book" dynamics), term by term in gymnasium's order.
func dsdt(sa *[5]float64) [5]float64 {
	m1, m2, l1, lc1, lc2, I1, I2, g := acM1, acM2, acL1, acLc1, acLc2, acMOI, acMOI, acG
	a := sa[4]
	theta1, theta2, dtheta1, dtheta2 := sa[0], sa[1], sa[2], sa[3]
	cos2, sin2 := math.Cos(theta2), math.Sin(theta2)
	d1 := m1*(lc1*lc1) + m2*((l1*l1)+(lc2*lc2)+2*l1*lc2*cos2) + I1 + I2
	d2 := m2*((lc2*lc2)+l1*lc2*cos2) + I2
	phi2 := m2 * lc2 * g * math.Cos(theta1+theta2-acPi/2.0)
	phi1 := -m2*l1*lc2*(dtheta2*dtheta2)*sin2 -
		2*m2*l1*lc2*dtheta2*dtheta1*sin2 +
		(m1*lc1+m2*l1)*g*math.Cos(theta1-acPi/2) +
		phi2
	ddtheta2 := (a + d2/d1*phi1 - m2*l1*lc2*(dtheta1*dtheta1)*sin2 - phi2) /
		(m2*(lc2*lc2) + I2 - (d2*d2)/d1)
	ddtheta1 := -(d2*ddtheta2 + phi1) / d1
	return [5]float64{dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0}
}

// wrap is gymnasium's wrap: x shifted by multiples of M-m into [m, M].
func wrap(x, m, M float64) float64 {
	diff := M - m
	for x > M {
		x = x - diff
	}
	for x < m {
		x = x + diff
	}
	return x
}

// bound is gymnasium's bound: min(max(x, m), M) with Python's min and max.
func bound(x, m, M float64) float64 {
	if m > x {
		x = m
	}
	if M < x {
		x = M
	}
	return x
}

// State returns a copy of the state [theta1, theta2, dtheta1, dtheta2].
func (a *Acrobot) State() []float64 { return append([]float64(nil), a.state[:]...) }

// SetState replaces the state with s ([theta1, theta2, dtheta1, dtheta2]); the step count
// and whether the episode needs a Reset are unchanged.
func (a *Acrobot) SetState(s []float64) error { return setState("Acrobot-v1", a.state[:], s) }

// ElapsedSteps returns the number of steps since the last Reset.
func (a *Acrobot) ElapsedSteps() int { return a.ep.elapsed }

// Render returns a one-line text description of the state.
func (a *Acrobot) Render() (any, error) {
	s := a.state
	return fmt.Sprintf("Acrobot-v1 step=%d theta1=%+.4f theta2=%+.4f dtheta1=%+.4f dtheta2=%+.4f",
		a.ep.elapsed, s[0], s[1], s[2], s[3]), nil
}
