package classic

import (
	"fmt"
	"math"
	"testing"

	"github.com/onnxrl/sampler/env"
	"github.com/stretchr/testify/require"
)

// The reference models below are written straight from gymnasium's classic_control sources,
// independently of the package code (plain float64, math.Pow, no shared helpers), and drive
// the environments from fixed states with fixed action sequences. Where gymnasium mixes
// float32 values in, the references stay in float64, so those environments are compared at
// 1e-6; the others agree to the last bits.

type refModel struct {
	name  string
	state []float64
	limit int
	// step advances s in place for action a and returns reward and terminated.
	step func(s []float64, a float32) (float64, bool)
	// obs writes the observation of s.
	obs     func(s []float64) []float64
	actions func(t int, s []float64) float32
	tol     float64
	// wantLen and wantTerm: the episode must end on step wantLen, terminated or truncated.
	wantLen  int
	wantTerm bool
}

func refCartPole(s []float64, a float32) (float64, bool) {
	gravity, masscart, masspole, length, forceMag, tau := 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
	totalMass := masspole + masscart
	polemassLength := masspole * length
	thetaThreshold := 12 * 2 * math.Pi / 360
	x, xDot, theta, thetaDot := s[0], s[1], s[2], s[3]
	force := -forceMag
	if a == 1 {
		force = forceMag
	}
	ct, st := math.Cos(theta), math.Sin(theta)
	temp := (force + polemassLength*math.Pow(thetaDot, 2)*st) / totalMass
	thetaacc := (gravity*st - ct*temp) / (length * (4.0/3.0 - masspole*math.Pow(ct, 2)/totalMass))
	xacc := temp - polemassLength*thetaacc*ct/totalMass
	s[0], s[1], s[2], s[3] = x+tau*xDot, xDot+tau*xacc, theta+tau*thetaDot, thetaDot+tau*thetaacc
	term := s[0] < -2.4 || s[0] > 2.4 || s[2] < -thetaThreshold || s[2] > thetaThreshold
	return 1, term
}

func refPendulum(s []float64, a float32) (float64, bool) {
	g, m, l, dt := 10.0, 1.0, 1.0, 0.05
	u := math.Max(-2, math.Min(2, float64(a)))
	th, thdot := s[0], s[1]
	norm := th + math.Pi - 2*math.Pi*math.Floor((th+math.Pi)/(2*math.Pi)) - math.Pi
	costs := math.Pow(norm, 2) + 0.1*math.Pow(thdot, 2) + 0.001*math.Pow(u, 2)
	newthdot := thdot + (3*g/(2*l)*math.Sin(th)+3.0/(m*math.Pow(l, 2))*u)*dt
	newthdot = math.Max(-8, math.Min(8, newthdot))
	s[0], s[1] = th+newthdot*dt, newthdot
	return -costs, false
}

func refMountainCar(s []float64, a float32) (float64, bool) {
	p, v := s[0], s[1]
	v += (float64(a)-1)*0.001 + math.Cos(3*p)*(-0.0025)
	v = math.Max(-0.07, math.Min(0.07, v))
	p += v
	p = math.Max(-1.2, math.Min(0.6, p))
	if p == -1.2 && v < 0 {
		v = 0
	}
	s[0], s[1] = p, v
	return -1, p >= 0.5 && v >= 0
}

func refMountainCarContinuous(s []float64, a float32) (float64, bool) {
	p, v := s[0], s[1]
	force := math.Min(math.Max(float64(a), -1), 1)
	v += force*0.0015 - 0.0025*math.Cos(3*p)
	v = math.Max(-0.07, math.Min(0.07, v))
	p += v
	p = math.Max(-1.2, math.Min(0.6, p))
	if p == -1.2 && v < 0 {
		v = 0
	}
	term := p >= 0.45 && v >= 0
	r := 0.0
	if term {
		r = 100
	}
	r -= math.Pow(float64(a), 2) * 0.1
	s[0], s[1] = float64(float32(p)), float64(float32(v)) // gymnasium keeps a float32 state
	return r, term
}

// refAcrobotDeriv is AcrobotEnv._dsdt ("book") for y = [theta1, theta2, dtheta1, dtheta2, torque].
func refAcrobotDeriv(y []float64) []float64 {
	m1, m2, l1, lc1, lc2, i1, i2, g := 1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 9.8
	a, t1, t2, dt1, dt2 := y[4], y[0], y[1], y[2], y[3]
	d1 := m1*math.Pow(lc1, 2) + m2*(math.Pow(l1, 2)+math.Pow(lc2, 2)+2*l1*lc2*math.Cos(t2)) + i1 + i2
	d2 := m2*(math.Pow(lc2, 2)+l1*lc2*math.Cos(t2)) + i2
	phi2 := m2 * lc2 * g * math.Cos(t1+t2-math.Pi/2)
	phi1 := -m2*l1*lc2*math.Pow(dt2, 2)*math.Sin(t2) - 2*m2*l1*lc2*dt2*dt1*math.Sin(t2) +
		(m1*lc1+m2*l1)*g*math.Cos(t1-math.Pi/2) + phi2
	ddt2 := (a + d2/d1*phi1 - m2*l1*lc2*math.Pow(dt1, 2)*math.Sin(t2) - phi2) / (m2*math.Pow(lc2, 2) + i2 - math.Pow(d2, 2)/d1)
	ddt1 := -(d2*ddt2 + phi1) / d1
	return []float64{dt1, dt2, ddt1, ddt2, 0}
}

func refAcrobot(s []float64, a float32) (float64, bool) {
	y0 := []float64{s[0], s[1], s[2], s[3], []float64{-1, 0, 1}[int(a)]}
	h := 0.2
	at := func(k []float64, c float64) []float64 {
		y := make([]float64, 5)
		for i := range y {
			y[i] = y0[i] + c*k[i]
		}
		return y
	}
	k1 := refAcrobotDeriv(y0)
	k2 := refAcrobotDeriv(at(k1, h/2))
	k3 := refAcrobotDeriv(at(k2, h/2))
	k4 := refAcrobotDeriv(at(k3, h))
	for i := range 4 {
		s[i] = y0[i] + h/6*(k1[i]+2*k2[i]+2*k3[i]+k4[i])
	}
	for i := range 2 {
		for s[i] > math.Pi {
			s[i] -= 2 * math.Pi
		}
		for s[i] < -math.Pi {
			s[i] += 2 * math.Pi
		}
	}
	s[2] = math.Max(-4*math.Pi, math.Min(4*math.Pi, s[2]))
	s[3] = math.Max(-9*math.Pi, math.Min(9*math.Pi, s[3]))
	term := -math.Cos(s[0])-math.Cos(s[1]+s[0]) > 1
	if term {
		return 0, true
	}
	return -1, false
}

func sgn(x float64) float32 {
	if x >= 0 {
		return 1
	}
	return -1
}

func cartPoleObs(s []float64) []float64 { return s }
func pendulumObs(s []float64) []float64 {
	return []float64{math.Cos(s[0]), math.Sin(s[0]), s[1]}
}
func acrobotObs(s []float64) []float64 {
	return []float64{math.Cos(s[0]), math.Sin(s[0]), math.Cos(s[1]), math.Sin(s[1]), s[2], s[3]}
}

var refModels = []refModel{
	{name: "CartPole-v1", state: []float64{0.02, 0.1, -0.03, -0.2}, limit: 500, step: refCartPole, obs: cartPoleObs,
		actions: func(t int, s []float64) float32 { return 1 }, tol: 1e-12, wantLen: 8, wantTerm: true},
	{name: "CartPole-v1", state: []float64{0.02, 0.1, -0.03, -0.2}, limit: 40, step: refCartPole, obs: cartPoleObs,
		actions: func(t int, s []float64) float32 {
			if s[2]+0.3*s[3] > 0 {
				return 1
			}
			return 0
		}, tol: 1e-12, wantLen: 40},
	{name: "Pendulum-v1", state: []float64{-2.9, -0.7}, limit: 30, step: refPendulum, obs: pendulumObs,
		actions: func(t int, s []float64) float32 { return []float32{1.5, -2, 2.5, -0.25, 0, -9}[t%6] },
		tol:     1e-6, wantLen: 30},
	{name: "MountainCar-v0", state: []float64{-0.45, 0.01}, limit: 200, step: refMountainCar, obs: cartPoleObs,
		actions: func(t int, s []float64) float32 { return 1 + sgn(s[1]) }, tol: 1e-12, wantLen: 107, wantTerm: true},
	{name: "MountainCar-v0", state: []float64{-1.1, -0.04}, limit: 25, step: refMountainCar, obs: cartPoleObs,
		actions: func(t int, s []float64) float32 { return float32(t % 3) }, tol: 1e-12, wantLen: 25},
	{name: "MountainCarContinuous-v0", state: []float64{-0.55, 0.0}, limit: 999, step: refMountainCarContinuous, obs: cartPoleObs,
		actions: func(t int, s []float64) float32 { return 1.25 * sgn(s[1]) }, tol: 1e-6, wantLen: 107, wantTerm: true},
	{name: "MountainCarContinuous-v0", state: []float64{-0.55, 0.0}, limit: 21, step: refMountainCarContinuous, obs: cartPoleObs,
		actions: func(t int, s []float64) float32 { return 0.4 * sgn(s[1]) }, tol: 1e-6, wantLen: 21},
	{name: "Acrobot-v1", state: []float64{0.1, -0.1, 0.3, -0.2}, limit: 500, step: refAcrobot, obs: acrobotObs,
		actions: func(t int, s []float64) float32 { return 1 + sgn(s[3]) }, tol: 1e-9, wantLen: 98, wantTerm: true},
	{name: "Acrobot-v1", state: []float64{0.1, -0.1, 0.3, -0.2}, limit: 20, step: refAcrobot, obs: acrobotObs,
		actions: func(t int, s []float64) float32 { return float32(t % 3) }, tol: 1e-9, wantLen: 20},
}

func TestReferenceTrajectories(t *testing.T) {
	for i, m := range refModels {
		t.Run(fmt.Sprintf("%s/%d", m.name, i), func(t *testing.T) {
			made, err := env.Make(m.name, env.Config{"max_episode_steps": m.limit})
			require.NoError(t, err)
			e := made.Value().(stateful)
			obs := make([]float32, e.ObservationSpace().Size())
			_, err = e.Reset(env.WithSeed(42), obs)
			require.NoError(t, err)
			require.NoError(t, e.SetState(m.state))
			ref := append([]float64(nil), m.state...)
			for step := 1; ; step++ {
				a := m.actions(step-1, ref)
				wantR, wantTerm := m.step(ref, a)
				wantTrunc := step >= m.limit
				res, err := e.Step([]float32{a}, obs)
				require.NoError(t, err)
				got := e.State()
				for k := range ref {
					require.InDelta(t, ref[k], got[k], m.tol, "step %d state[%d]", step, k)
				}
				for k, v := range m.obs(ref) {
					require.InDelta(t, float32(v), obs[k], m.tol+1e-7*math.Max(1, math.Abs(v)), "step %d obs[%d]", step, k)
				}
				require.InDelta(t, wantR, res.Reward, m.tol*math.Max(1, math.Abs(wantR)), "step %d reward", step)
				require.Equal(t, wantTerm, res.Terminated, "step %d terminated", step)
				require.Equal(t, wantTrunc, res.Truncated, "step %d truncated", step)
				if wantTerm || wantTrunc {
					require.Equal(t, m.wantLen, step, "episode length")
					require.Equal(t, m.wantTerm, wantTerm)
					break
				}
				require.Less(t, step, 1000)
			}
		})
	}
}

// TestHandComputedSteps checks the first steps of CartPole-v1, MountainCar-v0 and
// Pendulum-v1 against values worked out by hand from gymnasium's equations.
func TestHandComputedSteps(t *testing.T) {
	t.Run("CartPole-v1", func(t *testing.T) {
		c, err := NewCartPole(nil)
		require.NoError(t, err)
		obs := make([]float32, 4)
		_, err = c.Reset(env.Seed{}, obs)
		require.NoError(t, err)
		// From rest, upright, push right: theta = 0, so sin = 0, cos = 1;
		// temp = 10/1.1; thetaacc = -temp / (0.5 * (4/3 - 0.1/1.1));
		// xacc = temp - 0.05*thetaacc/1.1. Euler: positions do not move on the first step.
		require.NoError(t, c.SetState([]float64{0, 0, 0, 0}))
		res, err := c.Step([]float32{1}, obs)
		require.NoError(t, err)
		temp := 10 / 1.1
		thetaacc := -temp / (0.5 * (4.0/3.0 - 0.1/1.1))
		xacc := temp - 0.05*thetaacc/1.1
		require.InDeltaSlice(t, []float64{0, 0.02 * xacc, 0, 0.02 * thetaacc}, c.State(), 1e-15)
		require.InDelta(t, 0.19512195, c.State()[1], 1e-8)  // 0.02 * 9.7560976
		require.InDelta(t, -0.29268293, c.State()[3], 1e-8) // 0.02 * -14.634146
		require.Equal(t, 1.0, res.Reward)
	})
	t.Run("MountainCar-v0", func(t *testing.T) {
		m, err := NewMountainCar(nil)
		require.NoError(t, err)
		obs := make([]float32, 2)
		_, err = m.Reset(env.Seed{}, obs)
		require.NoError(t, err)
		// At the bottom of the valley (3x = -pi/2, cos = 0) only the engine acts.
		require.NoError(t, m.SetState([]float64{-math.Pi / 6, 0}))
		_, err = m.Step([]float32{2}, obs)
		require.NoError(t, err)
		require.InDeltaSlice(t, []float64{-math.Pi/6 + 0.001, 0.001}, m.State(), 1e-15)
	})
	t.Run("Pendulum-v1", func(t *testing.T) {
		p, err := NewPendulum(nil)
		require.NoError(t, err)
		obs := make([]float32, 3)
		_, err = p.Reset(env.Seed{}, obs)
		require.NoError(t, err)
		// Hanging down at rest (theta = pi): cost = pi^2 + 0.001*u^2, sin(pi) ~ 0, so
		// thdot = 3*u*0.05.
		require.NoError(t, p.SetState([]float64{math.Pi, 0}))
		res, err := p.Step([]float32{1}, obs)
		require.NoError(t, err)
		// 0.001*u^2 is float32 arithmetic (NumPy 2): float32(0.001) = 0.0010000000475.
		require.InDelta(t, -(math.Pi*math.Pi + 0.001), res.Reward, 1e-10)
		require.Equal(t, -(math.Pi*math.Pi + float64(float32(0.001))), res.Reward)
		require.InDelta(t, 0.15, p.State()[1], 1e-12)
		require.InDelta(t, math.Pi+0.0075, p.State()[0], 1e-12)
		require.InDeltaSlice(t, []float32{float32(math.Cos(math.Pi + 0.0075)), float32(math.Sin(math.Pi + 0.0075)), 0.15}, obs, 1e-7)
	})
}
