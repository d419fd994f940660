package classic

import (
	"fmt"
	"math"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// Pendulum constants, as gymnasium's PendulumEnv sets them.
var (
	pdMaxSpeed  = 8.0
	pdMaxTorque = float32(2.0)
	pdDt        = 0.05
	pdM         = 1.0
	pdL         = 1.0
)

// Pendulum is gymnasium's Pendulum-v1.
//
// State: [theta, theta_dot] (float64; theta 0 is upright). Observation: [cos theta,
// sin theta, theta_dot] in Box(-high, high), high = [1, 1, 8]. Action: the torque, in
// Box(-2, 2, (1,)); like gymnasium, Step clips it to [-2, 2] rather than rejecting it (NaN and
// a wrong length are errors). The reward is -(angle_normalize(theta)^2 + 0.1 theta_dot^2 +
// 0.001 u^2); the episode never terminates. Reset draws theta from [-pi, pi) and theta_dot
// from [-1, 1).
//
// Config keys: g (gravity, default 10.0), max_episode_steps (default 200).
type Pendulum struct {
	g        float64
	gCoef    float64 // 3 * g / (2 * l)
	uCoef    float32 // 3.0 / (m * l**2)
	state    [2]float64
	lastU    float32
	src      source
	ep       episode
	obsSpace *spaces.Box
	actSpace *spaces.Box
}

// NewPendulum returns a Pendulum-v1.
func NewPendulum(cfg env.Config) (*Pendulum, error) {
	if err := cfg.Check("g", "max_episode_steps"); err != nil {
		return nil, err
	}
	limit, err := maxEpisodeSteps(cfg, 200)
	if err != nil {
		return nil, err
	}
	g, err := finiteFloat(cfg, "g", 10.0)
	if err != nil {
		return nil, err
	}
	p := &Pendulum{
		g:     g,
		gCoef: 3 * g / (2 * pdL),
		uCoef: float32(3.0 / (pdM * pdL * pdL)),
		ep:    episode{limit: limit},
	}
	p.src.init(DefaultSeed)
	high := f32s(1, 1, pdMaxSpeed)
	p.obsSpace = spaces.NewBoxBounds(neg(high), high)
	p.actSpace = spaces.NewBox(-pdMaxTorque, pdMaxTorque, 1)
	return p, nil
}

// ObservationSpace returns the observation space (a *spaces.Box).
func (p *Pendulum) ObservationSpace() spaces.Space { return p.obsSpace }

// ActionSpace returns Box(-2, 2, (1,)).
func (p *Pendulum) ActionSpace() spaces.Space { return p.actSpace }

// Reset starts an episode with theta uniform in [-pi, pi) and theta_dot uniform in [-1, 1).
func (p *Pendulum) Reset(seed env.Seed, obs []float32) (env.Info, error) {
	checkObs("Pendulum-v1", obs, 3)
	p.src.reset(seed)
	p.state[0] = p.src.uniform(-math.Pi, math.Pi)
	p.state[1] = p.src.uniform(-1, 1)
	p.lastU = 0
	p.ep.start()
	p.observe(obs)
	return nil, nil
}

// Step applies the torque action[0], clipped to [-2, 2].
//
// The float32 torque enters gymnasium's float64 arithmetic as a NumPy float32 scalar; as
// NumPy 2 does, u^2, 0.001*u^2 and 3.0*u are computed in float32.
func (p *Pendulum) Step(action []float32, obs []float32) (env.StepResult, error) {
	checkObs("Pendulum-v1", obs, 3)
	if err := p.ep.check(); err != nil {
		return env.StepResult{}, err
	}
	if len(action) != 1 || action[0] != action[0] {
		return env.StepResult{}, actionError("", action, p.actSpace)
	}
	u := min(max(action[0], -pdMaxTorque), pdMaxTorque)
	p.lastU = u
	th, thdot := p.state[0], p.state[1]

	an := angleNormalize(th)
	costs := an*an + 0.1*(thdot*thdot) + float64(float32(0.001)*(u*u))

	newthdot := thdot + (p.gCoef*math.Sin(th)+float64(p.uCoef*u))*pdDt
	newthdot = min(max(newthdot, -pdMaxSpeed), pdMaxSpeed)
	newth := th + newthdot*pdDt
	p.state = [2]float64{newth, newthdot}

	p.observe(obs)
	return env.StepResult{Reward: -costs, Truncated: p.ep.finish(false)}, nil
}

func (p *Pendulum) observe(obs []float32) {
	obs[0] = float32(math.Cos(p.state[0]))
	obs[1] = float32(math.Sin(p.state[0]))
	obs[2] = float32(p.state[1])
}

// angleNormalize is gymnasium's angle_normalize: ((x + pi) % (2 pi)) - pi with Python's
// (NumPy's) floored modulo.
func angleNormalize(x float64) float64 {
	return pyMod(x+math.Pi, 2*math.Pi) - math.Pi
}

// pyMod is NumPy's float remainder (npy_divmod): the result has the sign of b.
func pyMod(a, b float64) float64 {
	m := math.Mod(a, b)
	if m != 0 {
		if (b < 0) != (m < 0) {
			m += b
		}
	} else {
		m = math.Copysign(0, b)
	}
	return m
}

// State returns a copy of the state [theta, theta_dot].
func (p *Pendulum) State() []float64 { return append([]float64(nil), p.state[:]...) }

// SetState replaces the state with s ([theta, theta_dot]); the step count and whether the
// episode needs a Reset are unchanged.
func (p *Pendulum) SetState(s []float64) error { return setState("Pendulum-v1", p.state[:], s) }

// ElapsedSteps returns the number of steps since the last Reset.
func (p *Pendulum) ElapsedSteps() int { return p.ep.elapsed }

// Render returns a one-line text description of the state.
func (p *Pendulum) Render() (any, error) {
	return fmt.Sprintf("Pendulum-v1 step=%d theta=%+.4f theta_dot=%+.4f torque=%+.4f",
		p.ep.elapsed, p.state[0], p.state[1], p.lastU), nil
}
