package classic

import (
	"fmt"
	"math"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// CartPole constants, as gymnasium's CartPoleEnv sets them. They are variables, not Go
// constants, so that the derived values are rounded as Python rounds them (Go evaluates
// constant expressions exactly).
var (
	cpGravity  = 9.8
	cpMassCart = 1.0
	cpMassPole = 0.1
	cpLength   = 0.5 // half the pole's length
	cpForceMag = 10.0
	cpTau      = 0.02
	cpXThresh  = 2.4
	cpPi       = math.Pi

	cpTotalMass      = cpMassPole + cpMassCart
	cpPoleMassLength = cpMassPole * cpLength
	cpThetaThresh    = 12 * 2 * cpPi / 360 // 12 degrees
)

// CartPole is gymnasium's CartPole-v1 (and, built with NewStatelessCartPole, RLlib's
// StatelessCartPole).
//
// State: [x, x_dot, theta, theta_dot] (float64). Observation: the state as float32, in
// Box(-high, high) with high = [4.8, +Inf, 0.41887903, +Inf]; StatelessCartPole observes
// [x, theta] only, in Box with high = [4.8, 0.41887903]. Action: Discrete(2), 0 pushes left
// and 1 pushes right with force 10. Euler integration with tau = 0.02; the episode terminates
// when |x| > 2.4 or |theta| > 12 degrees; the reward is 1 on every step, the terminating one
// included (with config sutton_barto_reward=true: 0, and -1 on the terminating step). Reset
// draws each state variable uniformly from [-0.05, 0.05).
//
// Config keys: max_episode_steps (default 500), sutton_barto_reward (default false).
type CartPole struct {
	name        string
	stateless   bool
	suttonBarto bool
	state       [4]float64
	src         source
	ep          episode
	obsSpace    *spaces.Box
	actSpace    *spaces.Discrete
	obsN        int // obsSpace.Size(), kept here: a step reads no other object
}

// NewCartPole returns a CartPole-v1.
func NewCartPole(cfg env.Config) (*CartPole, error) {
	return newCartPole("CartPole-v1", false, cfg)
}

// NewStatelessCartPole returns RLlib's StatelessCartPole: CartPole-v1 observing [x, theta]
// (the velocities removed), with the time limit of CartPole-v1 (500 steps).
func NewStatelessCartPole(cfg env.Config) (*CartPole, error) {
	return newCartPole("StatelessCartPole", true, cfg)
}

func newCartPole(name string, stateless bool, cfg env.Config) (*CartPole, error) {
	if err := cfg.Check("max_episode_steps", "sutton_barto_reward"); err != nil {
		return nil, err
	}
	limit, err := maxEpisodeSteps(cfg, 500)
	if err != nil {
		return nil, err
	}
	sb, err := cfg.Bool("sutton_barto_reward", false)
	if err != nil {
		return nil, err
	}
	c := &CartPole{name: name, stateless: stateless, suttonBarto: sb, ep: episode{limit: limit}}
	c.src.init(DefaultSeed)
	var high []float32
	if stateless {
		high = f32s(cpXThresh*2, cpThetaThresh*2)
	} else {
		high = f32s(cpXThresh*2, math.Inf(1), cpThetaThresh*2, math.Inf(1))
	}
	c.obsSpace = spaces.NewBoxBounds(neg(high), high)
	c.obsN = len(high)
	c.actSpace = &spaces.Discrete{N: 2}
	return c, nil
}

// ObservationSpace returns the observation space (a *spaces.Box).
func (c *CartPole) ObservationSpace() spaces.Space { return c.obsSpace }

// ActionSpace returns Discrete(2).
func (c *CartPole) ActionSpace() spaces.Space { return c.actSpace }

// Reset starts an episode from a state drawn uniformly from [-0.05, 0.05)^4.
func (c *CartPole) Reset(seed env.Seed, obs []float32) (env.Info, error) {
	checkObs(c.name, obs, c.obsN)
	c.src.reset(seed)
	for i := range c.state {
		c.state[i] = c.src.uniform(-0.05, 0.05)
	}
	c.ep.start()
	c.observe(obs)
	return nil, nil
}

// Step applies action (0: push left, 1: push right) for one Euler step of 0.02 s.
func (c *CartPole) Step(action []float32, obs []float32) (env.StepResult, error) {
	checkObs(c.name, obs, c.obsN)
	if err := c.ep.check(); err != nil {
		return env.StepResult{}, err
	}
	// The action space is Discrete(2): the action is 0 or 1 (as its Contains says, without
	// reading the space).
	if len(action) != 1 || (action[0] != 0 && action[0] != 1) {
		return env.StepResult{}, actionError("", action, c.actSpace)
	}
	terminated := c.advance(int(action[0]))
	reward := 1.0
	if c.suttonBarto {
		reward = 0
		if terminated {
			reward = -1
		}
	}
	c.observe(obs)
	return env.StepResult{Reward: reward, Terminated: terminated, Truncated: c.ep.finish(terminated)}, nil
}

// advance is CartPoleEnv.step's physics; it reports termination.
func (c *CartPole) advance(action int) bool {
	x, xDot, theta, thetaDot := c.state[0], c.state[1], c.state[2], c.state[3]
	force := cpForceMag
	if action != 1 {
		force = -cpForceMag
	}
	costheta := math.Cos(theta)
	sintheta := math.Sin(theta)
	temp := (force + cpPoleMassLength*(thetaDot*thetaDot)*sintheta) / cpTotalMass
	thetaacc := (cpGravity*sintheta - costheta*temp) /
		(cpLength * (4.0/3.0 - cpMassPole*(costheta*costheta)/cpTotalMass))
	xacc := temp - cpPoleMassLength*thetaacc*costheta/cpTotalMass

	x = x + cpTau*xDot
	xDot = xDot + cpTau*xacc
	theta = theta + cpTau*thetaDot
	thetaDot = thetaDot + cpTau*thetaacc
	c.state = [4]float64{x, xDot, theta, thetaDot}

	return x < -cpXThresh || x > cpXThresh || theta < -cpThetaThresh || theta > cpThetaThresh
}

func (c *CartPole) observe(obs []float32) {
	if c.stateless {
		obs[0], obs[1] = float32(c.state[0]), float32(c.state[2])
		return
	}
	for i, v := range c.state {
		obs[i] = float32(v)
	}
}

// State returns a copy of the state [x, x_dot, theta, theta_dot].
func (c *CartPole) State() []float64 { return append([]float64(nil), c.state[:]...) }

// SetState replaces the state with s ([x, x_dot, theta, theta_dot]), as assigning
// env.unwrapped.state does in gymnasium: the episode's step count and whether it needs a
// Reset are unchanged.
func (c *CartPole) SetState(s []float64) error { return setState(c.name, c.state[:], s) }

// ElapsedSteps returns the number of steps since the last Reset.
func (c *CartPole) ElapsedSteps() int { return c.ep.elapsed }

// Render returns a one-line text description of the state.
func (c *CartPole) Render() (any, error) {
	s := c.state
	return fmt.Sprintf("%s step=%d x=%+.4f x_dot=%+.4f theta=%+.4f theta_dot=%+.4f",
		c.name, c.ep.elapsed, s[0], s[1], s[2], s[3]), nil
}
