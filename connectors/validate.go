package connectors

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// ShapeError reports that the environment's side and the model's side of a connection do not
// fit: it names both shapes.
type ShapeError struct {
	What string // "observation row vs input \"obs\"", ...
	Want string // the model's side
	Got  string // the environment's side
}

func (e *ShapeError) Error() string {
	return fmt.Sprintf("connectors: %s: the model wants %s, the environment gives %s", e.What, e.Want, e.Got)
}

// rowInfo returns the number of elements per batch row of v (the batch axis is the first
// dynamic dimension, or 0), or -1 when another dimension is dynamic. A row beyond
// inference.MaxTensorElements gives math.MaxInt (checked before the product can overflow
// and wrap to a width that fits).
func rowInfo(v inference.ValueInfo) int {
	ax := -1
	for i, d := range v.Shape {
		if d < 0 {
			ax = i
			break
		}
	}
	if ax < 0 {
		ax = 0
	}
	n, zero := int64(1), false
	for i, d := range v.Shape {
		switch {
		case i == ax:
		case d < 0:
			return -1
		case d == 0:
			zero = true
		case n <= inference.MaxTensorElements:
			n *= min(d, inference.MaxTensorElements+1) // stays below 2^58: no overflow
		}
	}
	switch {
	case zero:
		return 0
	case n > inference.MaxTensorElements:
		return math.MaxInt
	}
	return int(n)
}

// Connectors holds what one policy of a runner needs: the agent pipeline, the RNN state
// buffer (nil for a model without state) and the action pipeline, checked against each other
// and against the model.
type Connectors struct {
	Agent  *AgentPipeline
	State  *StateBuffer
	Action *ActionPipeline
	Policy *models.Policy
}

// Config configures New.
type Config struct {
	// Policy is the model with its resolved spec.
	Policy *models.Policy
	// ObservationSpace and ActionSpace are the environment's (per agent of this policy).
	// Nil means: the spec's.
	ObservationSpace, ActionSpace spaces.Space
	// Agent are the agent connectors after the default Flatten of the observation space.
	// With NoFlatten the rows start as raw observations.
	Agent     []AgentConnector
	NoFlatten bool
	// Action configures the action side.
	Action ActionConfig
	// Capacity is the largest batch (the session's capacity).
	Capacity int
}

// New builds and checks the connectors of one policy: the observation row width against the
// model's observation input, the action space against the distribution and the width of the
// action output (and log_std output), and the RNN state inputs. A mismatch is a *ShapeError
// naming both shapes.
func New(cfg Config) (*Connectors, error) {
	p := cfg.Policy
	if p == nil {
		return nil, fmt.Errorf("connectors: no policy")
	}
	spec := &p.Spec
	obs, act := cfg.ObservationSpace, cfg.ActionSpace
	if obs == nil {
		obs = spec.ObservationSpace
	}
	if act == nil {
		act = spec.ActionSpace
	}
	if obs == nil || act == nil {
		return nil, fmt.Errorf("connectors: the environment's observation and action spaces are needed (the spec has none)")
	}
	conns := cfg.Agent
	if !cfg.NoFlatten {
		conns = append([]AgentConnector{NewFlatten(obs)}, conns...)
	}
	agent, err := NewAgentPipeline(obs, conns...)
	if err != nil {
		return nil, err
	}
	in, ok := p.Model.Input(spec.ObservationInput)
	if !ok {
		return nil, fmt.Errorf("connectors: the model has no observation input %q", spec.ObservationInput)
	}
	if w := rowInfo(in); w >= 0 && w != agent.Width() {
		return nil, &ShapeError{What: fmt.Sprintf("observation row vs input %q", in.Name),
			Want: fmt.Sprintf("%s (%d values per row)", in.ShapeString(), w),
			Got:  fmt.Sprintf("%s through %d connectors (%d values per row)", spaces.String(obs), len(conns), agent.Width())}
	}
	if err := checkAction(spec, p.Model, act); err != nil {
		return nil, err
	}
	dist, err := NewDistribution(spec.Distribution, act)
	if err != nil {
		return nil, err
	}
	capacity := max(cfg.Capacity, 1)
	action, err := NewActionPipeline(dist, act, cfg.Action, capacity)
	if err != nil {
		return nil, err
	}
	c := &Connectors{Agent: agent, Action: action, Policy: p}
	if len(spec.State) > 0 {
		if c.State, err = NewStateBuffer(p); err != nil {
			return nil, err
		}
		agent.AlsoReset(c.State)
	}
	return c, nil
}

// checkAction checks the action space against the distribution and the action output.
func checkAction(spec *models.Spec, m *inference.Model, act spaces.Space) error {
	out, ok := m.Output(spec.ActionOutput)
	if !ok {
		return fmt.Errorf("connectors: the model has no action output %q", spec.ActionOutput)
	}
	dist, err := NewDistribution(spec.Distribution, act)
	if err != nil {
		return &ShapeError{What: fmt.Sprintf("action space vs distribution %s of output %q", spec.Distribution, out.Name),
			Want: distWants(spec.Distribution), Got: spaces.String(act)}
	}
	want := dist.InputSize()
	if spec.LogStdOutput != "" {
		if _, ok := dist.(*DiagGaussian); !ok {
			return fmt.Errorf("connectors: log_std_output %q needs distribution diag_gaussian, got %s", spec.LogStdOutput, dist.Name())
		}
		want = dist.ActionSize()
		ls, ok := m.Output(spec.LogStdOutput)
		if !ok {
			return fmt.Errorf("connectors: the model has no log_std output %q", spec.LogStdOutput)
		}
		if w := rowInfo(ls); w >= 0 && w != want {
			return &ShapeError{What: fmt.Sprintf("action space vs log_std output %q", ls.Name),
				Want: fmt.Sprintf("%s (%d values per row)", ls.ShapeString(), w),
				Got:  fmt.Sprintf("%s (%d log_std values)", spaces.String(act), want)}
		}
	}
	if w := rowInfo(out); w >= 0 && w != want {
		return &ShapeError{What: fmt.Sprintf("action space vs output %q (%s)", out.Name, dist.Name()),
			Want: fmt.Sprintf("%s (%d values per row)", out.ShapeString(), w),
			Got:  fmt.Sprintf("%s (%d distribution inputs)", spaces.String(act), want)}
	}
	return nil
}

func distWants(name string) string {
	switch name {
	case models.Categorical:
		return "a Discrete action space"
	case models.MultiCategorical:
		return "a MultiDiscrete action space"
	case models.DiagGaussian:
		return "a Box action space"
	}
	return "any action space"
}

// Bind binds the session's tensors (state inputs and outputs, action and log_std outputs) once
// for Gather, Scatter and ComputeSession.
func (c *Connectors) Bind(sess *inference.Session) error {
	if c.State != nil {
		if err := c.State.Bind(sess); err != nil {
			return err
		}
	}
	return c.Action.BindSession(sess, c.Policy.Spec.ActionOutput, c.Policy.Spec.LogStdOutput)
}

// AfterRun reads the actions of the session's last Run (sampling from rng when exploring)
// and scatters the RNN states back to the agents in slots (one per batch row).
func (c *Connectors) AfterRun(rng *rand.Rand, sess *inference.Session, slots []int) {
	c.Action.ComputeSession(rng, sess)
	if c.State != nil {
		c.State.Scatter(slots[:sess.Batch()])
	}
}
