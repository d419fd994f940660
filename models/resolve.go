package models

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/spaces"
)

// Decision records how one role of the spec was decided.
type Decision struct {
	Role   string // "observation_input", "action_output", ..., "state[0]"
	Value  string // the decided name or value ("" when the role is absent)
	Reason string
}

// Policy is a model with its resolved spec.
type Policy struct {
	Model *inference.Model
	Spec  Spec
	// Source says where the explicit part of the spec came from: a sidecar path,
	// "metadata onnxrl.policy", or "none" when everything was auto-detected.
	Source    string
	Decisions []Decision
}

// Common export names, in order of preference.
var (
	observationNames = []string{"obs", "observation", "observations", "obs_flat", "input", "inputs", "x", "state_obs"}
	actionNames      = []string{"action_dist_inputs", "logits", "action_logits", "dist_inputs", "action_mean", "mean", "mu",
		"output", "outputs", "output_0", "pi", "actions", "action"}
	valueNames  = []string{"vf_preds", "value", "values", "vf", "state_value", "state_values", "value_out", "v", "critic"}
	logStdNames = []string{"log_std", "logstd", "action_log_std", "log_stds"}
)

// Resolve completes spec (which may be nil or partial) for model m by auto-detection, checks
// it against the model, and explains every decision. source names where spec came from.
func Resolve(m *inference.Model, spec *Spec, source string) (*Policy, error) {
	p := &Policy{Model: m, Source: source}
	if spec != nil {
		p.Spec = *spec
	}
	r := &resolver{m: m, p: p, s: &p.Spec}
	for _, step := range []func() error{r.checkNames, r.states, r.observationInput, r.outputs, r.spacesAndDistribution} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(p.Decisions, func(i, j int) bool { return roleRank(p.Decisions[i].Role) < roleRank(p.Decisions[j].Role) })
	return p, nil
}

// resolver holds one Resolve's state; its steps run in order, each deciding some roles.
type resolver struct {
	m *inference.Model
	p *Policy
	s *Spec // &p.Spec
	// stateIn and stateOut are the RNN states' input and output names (after states).
	stateIn, stateOut map[string]bool
}

func (r *resolver) errf(field, format string, args ...any) error {
	return &SpecError{Source: r.p.Source, Field: field, Err: fmt.Errorf(format, args...)}
}

func (r *resolver) given(role, v string) {
	r.decide(role, v, "given by the spec ("+r.p.Source+")")
}

func (r *resolver) decide(role, v, reason string) {
	r.p.Decisions = append(r.p.Decisions, Decision{Role: role, Value: v, Reason: reason})
}

// checkNames checks that every name the spec gives exists in the model.
func (r *resolver) checkNames() error {
	s := r.s
	for _, c := range []struct {
		field, name string
		in          bool
	}{{"observation_input", s.ObservationInput, true}, {"action_output", s.ActionOutput, false},
		{"value_output", s.ValueOutput, false}, {"log_std_output", s.LogStdOutput, false}} {
		if c.name == "" {
			continue
		}
		check := r.checkOut
		if c.in {
			check = r.checkIn
		}
		if err := check(c.field, c.name); err != nil {
			return err
		}
	}
	for i, sp := range s.State {
		if err := r.checkIn(fmt.Sprintf("state[%d].input", i), sp.Input); err != nil {
			return err
		}
		if err := r.checkOut(fmt.Sprintf("state[%d].output", i), sp.Output); err != nil {
			return err
		}
	}
	return nil
}

func (r *resolver) checkIn(field, name string) error {
	if _, ok := r.m.Input(name); !ok {
		return r.errf(field, "the model has no input %q (inputs: %s)", name, strings.Join(names(r.m.Inputs), ", "))
	}
	return nil
}

func (r *resolver) checkOut(field, name string) error {
	if _, ok := r.m.Output(name); !ok {
		return r.errf(field, "the model has no output %q (outputs: %s)", name, strings.Join(names(r.m.Outputs), ", "))
	}
	return nil
}

// states decides the RNN states and fills stateIn and stateOut.
func (r *resolver) states() error {
	s := r.s
	if s.StateSet {
		for i, sp := range s.State {
			r.given(fmt.Sprintf("state[%d]", i), sp.Input+" -> "+sp.Output)
		}
		if len(s.State) == 0 {
			r.given("state", "none")
		}
	} else {
		s.State = detectStates(r.m, s.ObservationInput, r.p)
		s.StateSet = true
		if len(s.State) == 0 {
			r.decide("state", "none", "no input pairs with an output by name (state_in_N/state_out_N, *_in/*_out, h/c, hidden) or by shape")
		}
	}
	r.stateIn, r.stateOut = map[string]bool{}, map[string]bool{}
	for _, sp := range s.State {
		r.stateIn[sp.Input], r.stateOut[sp.Output] = true, true
	}
	return nil
}

// observationInput decides the observation input among the inputs that are not states.
func (r *resolver) observationInput() error {
	s := r.s
	if s.ObservationInput != "" {
		r.given("observation_input", s.ObservationInput)
	} else {
		var rest []string
		for _, in := range r.m.Inputs {
			if !r.stateIn[in.Name] {
				rest = append(rest, in.Name)
			}
		}
		switch name, ok := firstKnown(rest, observationNames); {
		case ok:
			s.ObservationInput = name
			r.decide("observation_input", name, "common export name")
		case len(rest) == 1:
			s.ObservationInput = rest[0]
			r.decide("observation_input", rest[0], "the only input that is not an RNN state")
		case len(rest) == 0:
			return r.errf("observation_input", "every input of the model is an RNN state; name the observation input in the spec")
		default:
			return r.errf("observation_input", "cannot tell which of the inputs %s is the observation; name it in the spec", strings.Join(rest, ", "))
		}
	}
	if r.stateIn[s.ObservationInput] {
		return r.errf("observation_input", "%q is also an RNN state input", s.ObservationInput)
	}
	return nil
}

// outputs decides the value and log_std outputs, then the action output among the rest.
func (r *resolver) outputs() error {
	s := r.s
	var rest []string
	for _, out := range r.m.Outputs {
		if !r.stateOut[out.Name] {
			rest = append(rest, out.Name)
		}
	}
	if s.ValueOutput != "" {
		r.given("value_output", s.ValueOutput)
	} else if name, ok := firstKnown(without(rest, s.ActionOutput, s.LogStdOutput), valueNames); ok {
		s.ValueOutput = name
		r.decide("value_output", name, "common export name")
	} else {
		r.decide("value_output", "", "no output has a common value name (value, vf, vf_preds, state_value, ...)")
	}
	if s.LogStdOutput != "" {
		r.given("log_std_output", s.LogStdOutput)
	} else if name, ok := firstKnown(without(rest, s.ActionOutput, s.ValueOutput), logStdNames); ok && (s.Distribution == "" || s.Distribution == DiagGaussian) {
		s.LogStdOutput = name
		r.decide("log_std_output", name, "common export name for a separate log_std output")
	}
	if err := r.actionOutput(without(rest, s.ValueOutput, s.LogStdOutput)); err != nil {
		return err
	}
	for _, c := range []struct{ field, name string }{{"value_output", s.ValueOutput}, {"log_std_output", s.LogStdOutput}} {
		if c.name != "" && (c.name == s.ActionOutput || r.stateOut[c.name]) {
			return r.errf(c.field, "%q is already used as the action output or an RNN state output", c.name)
		}
	}
	return nil
}

// actionOutput decides the action output among cands (the outputs that are neither states
// nor the value or log_std).
func (r *resolver) actionOutput(cands []string) error {
	s := r.s
	if s.ActionOutput != "" {
		r.given("action_output", s.ActionOutput)
		return nil
	}
	switch name, ok := firstKnown(cands, actionNames); {
	case ok:
		s.ActionOutput = name
		r.decide("action_output", name, "common export name")
	case len(cands) >= 1:
		s.ActionOutput = cands[0]
		r.decide("action_output", cands[0], "the first output that is not the value or an RNN state")
	default:
		return r.errf("action_output", "no output is left for the action (outputs: %s)", strings.Join(names(r.m.Outputs), ", "))
	}
	return nil
}

// spacesAndDistribution decides the observation space, the distribution and the action
// space, and checks the widths they imply against the model.
func (r *resolver) spacesAndDistribution() error {
	s := r.s
	actInfo, _ := r.m.Output(s.ActionOutput)
	width := rowWidth(actInfo)
	if width == tooWide {
		return r.errf("action_output", "the action output %s has more than %d values per row", actInfo, spaces.MaxElements)
	}
	if err := r.observationSpace(); err != nil {
		return err
	}
	if s.Distribution != "" {
		r.given("distribution", s.Distribution)
	} else {
		d, why := detectDistribution(s, actInfo, width)
		s.Distribution = d
		r.decide("distribution", d, why)
	}
	if s.ActionSpace != nil {
		r.given("action_space", spaces.String(s.ActionSpace))
	} else {
		as, err := detectActionSpace(s, actInfo, width)
		if err != nil {
			return r.errf("action_space", "%v", err)
		}
		s.ActionSpace = as
		r.decide("action_space", spaces.String(as), "from the distribution and the width of the action output")
	}
	if err := checkWidths(s, r.m, width); err != nil {
		return &SpecError{Source: r.p.Source, Err: err}
	}
	return nil
}

// observationSpace decides the observation space: given, or an unbounded Box of the
// observation input's row shape.
func (r *resolver) observationSpace() error {
	s := r.s
	if s.ObservationSpace != nil {
		r.given("observation_space", spaces.String(s.ObservationSpace))
		return nil
	}
	obsInfo, _ := r.m.Input(s.ObservationInput)
	shape := rowShape(obsInfo)
	if shape == nil {
		return r.errf("observation_space", "the observation input %s has dynamic feature dimensions; give observation_space in the spec", obsInfo)
	}
	if _, err := spaces.CheckedSize(shape...); err != nil {
		return r.errf("observation_space", "the observation input %s is too large for a space: %v", obsInfo, err)
	}
	inf := float32(math.Inf(1))
	s.ObservationSpace = spaces.NewBox(-inf, inf, shape...)
	r.decide("observation_space", spaces.String(s.ObservationSpace), "unbounded Box of the observation input's shape without its batch axis")
	return nil
}

var roleOrder = []string{"observation_input", "action_output", "value_output", "log_std_output", "state",
	"distribution", "observation_space", "action_space"}

// roleRank orders decisions as the spec's fields are ordered.
func roleRank(role string) int {
	base, _, _ := strings.Cut(role, "[")
	if i := slices.Index(roleOrder, base); i >= 0 {
		return i
	}
	return len(roleOrder)
}

func names(vs []inference.ValueInfo) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

func without(list []string, drop ...string) []string {
	var out []string
	for _, x := range list {
		if x != "" && !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// firstKnown returns the candidate that comes first in the preference list (case-insensitive).
func firstKnown(cands, preferred []string) (string, bool) {
	for _, want := range preferred {
		for _, c := range cands {
			if strings.EqualFold(c, want) {
				return c, true
			}
		}
	}
	return "", false
}

// batchAxis is the first dynamic dimension, or 0 for a model with a fixed batch.
func batchAxis(v inference.ValueInfo) int {
	for i, d := range v.Shape {
		if d < 0 {
			return i
		}
	}
	return 0
}

// rowShape is the shape without the batch axis, or nil if another dimension is dynamic.
func rowShape(v inference.ValueInfo) []int {
	ax := batchAxis(v)
	var shape []int
	for i, d := range v.Shape {
		if i == ax {
			continue
		}
		if d < 0 {
			return nil
		}
		shape = append(shape, int(min(d, math.MaxInt32))) // CheckedSize refuses it
	}
	if shape == nil {
		shape = []int{}
	}
	return shape
}

// tooWide is rowWidth's answer for a row of more than spaces.MaxElements values.
const tooWide = -2

// rowWidth is the number of elements per batch row, -1 when unknown, or tooWide (checked
// before the product can overflow).
func rowWidth(v inference.ValueInfo) int {
	shape := rowShape(v)
	if shape == nil {
		return -1
	}
	n, err := spaces.CheckedSize(shape...)
	if err != nil {
		return tooWide
	}
	return n
}

// statePartners lists the output names an RNN state input is paired with by name.
func statePartners(in string) []string {
	lower := strings.ToLower(in)
	var out []string
	if rest, ok := strings.CutPrefix(lower, "state_in"); ok {
		out = append(out, "state_out"+rest)
	}
	if base, ok := strings.CutSuffix(lower, "_in"); ok {
		out = append(out, base+"_out", base+"_n", "next_"+base)
	}
	if base, ok := strings.CutSuffix(lower, "in"); ok && base != "" {
		out = append(out, base+"out")
	}
	switch lower {
	case "h", "c", "hidden", "h0", "c0", "hx", "cx", "hidden_state", "cell_state", "state", "memory":
		base := strings.TrimSuffix(lower, "0")
		out = append(out, base+"_out", base+"n", base+"_n", "next_"+base, "new_"+base, base+"1")
	}
	return out
}

// detectStates pairs RNN state inputs with outputs: first by name, then by identical shape
// among the remaining inputs and outputs that have a dynamic dimension not at axis 0 or the
// same rank-3 shape (PyTorch's [layers, batch, hidden]).
func detectStates(m *inference.Model, obs string, p *Policy) []StatePair {
	var pairs []StatePair
	usedOut := map[string]bool{}
	var unpaired []inference.ValueInfo
	for _, in := range m.Inputs {
		if in.Name == obs {
			continue
		}
		found := false
		for _, cand := range statePartners(in.Name) {
			for _, out := range m.Outputs {
				if !usedOut[out.Name] && strings.EqualFold(out.Name, cand) {
					pairs = append(pairs, StatePair{Input: in.Name, Output: out.Name})
					usedOut[out.Name] = true
					p.Decisions = append(p.Decisions, Decision{Role: fmt.Sprintf("state[%d]", len(pairs)-1),
						Value: in.Name + " -> " + out.Name, Reason: "input and output names pair up as an RNN state"})
					found = true
					break
				}
			}
			if found {
				break
			}
		}
		if !found {
			unpaired = append(unpaired, in)
		}
	}
	if len(unpaired) < 2 && (len(unpaired) == 0 || obs == "") {
		return pairs
	}
	for _, in := range unpaired {
		if in.Name == obs || batchAxis(in) == 0 || slices.Contains(observationNames, strings.ToLower(in.Name)) {
			continue // a state by shape has its batch axis inside (PyTorch RNN state layout)
		}
		for _, out := range m.Outputs {
			if usedOut[out.Name] || !slices.Equal(out.Shape, in.Shape) || out.ElemType != in.ElemType {
				continue
			}
			pairs = append(pairs, StatePair{Input: in.Name, Output: out.Name})
			usedOut[out.Name] = true
			p.Decisions = append(p.Decisions, Decision{Role: fmt.Sprintf("state[%d]", len(pairs)-1),
				Value: in.Name + " -> " + out.Name, Reason: "input and output have the same shape " + in.ShapeString() + " with the batch axis inside"})
			break
		}
	}
	return pairs
}

func detectDistribution(s *Spec, act inference.ValueInfo, width int) (string, string) {
	if act.ElemType == inference.ElemInt64 || act.ElemType == inference.ElemInt32 {
		return Deterministic, "the action output holds integers: it is the action itself"
	}
	switch as := s.ActionSpace.(type) {
	case *spaces.Discrete:
		return Categorical, "the action space is Discrete"
	case *spaces.MultiDiscrete:
		return MultiCategorical, "the action space is MultiDiscrete"
	case *spaces.Box:
		n := as.Size()
		switch {
		case s.LogStdOutput != "":
			return DiagGaussian, "the action space is a Box and the model has a separate log_std output"
		case width == 2*n:
			return DiagGaussian, fmt.Sprintf("the action space is a Box of %d and the action output has %d = mean and log_std halves", n, width)
		case width == n:
			return Deterministic, fmt.Sprintf("the action space is a Box of %d and the action output has the same width: it is the action", n)
		}
	}
	lower := strings.ToLower(act.Name)
	switch {
	case s.LogStdOutput != "":
		return DiagGaussian, "the model has a separate log_std output"
	case lower == "actions" || lower == "action":
		return Deterministic, "the action output is named " + act.Name
	case strings.Contains(lower, "mean") || lower == "mu":
		return Deterministic, "the action output is a mean without log_std: the greedy action"
	}
	return Categorical, "the action output looks like logits (no action space, no log_std): categorical over its width"
}

func detectActionSpace(s *Spec, act inference.ValueInfo, width int) (spaces.Space, error) {
	if width <= 0 {
		return nil, fmt.Errorf("the action output %s has dynamic feature dimensions; give action_space in the spec", act)
	}
	inf := float32(math.Inf(1))
	switch s.Distribution {
	case Categorical:
		return &spaces.Discrete{N: int64(width)}, nil
	case DiagGaussian:
		if s.LogStdOutput != "" {
			return spaces.NewBox(-inf, inf, width), nil
		}
		if width%2 != 0 {
			return nil, fmt.Errorf("diag_gaussian needs mean and log_std halves, but the action output %s has odd width %d", act, width)
		}
		return spaces.NewBox(-inf, inf, width/2), nil
	case Deterministic:
		return spaces.NewBox(-inf, inf, width), nil
	}
	return nil, errors.New("multi_categorical needs an action_space (MultiDiscrete) in the spec")
}

// checkWidths checks the action output's width against the distribution and action space.
func checkWidths(s *Spec, m *inference.Model, width int) error {
	if width < 0 {
		return nil // decided at run time by the connectors
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("action_output %q has %d values per row, but "+format, append([]any{s.ActionOutput, width}, args...)...)
	}
	as := s.ActionSpace
	switch s.Distribution {
	case Categorical:
		d, ok := as.(*spaces.Discrete)
		if !ok {
			return fmt.Errorf("distribution categorical needs a Discrete action space, got %s", spaces.String(as))
		}
		if int64(width) != d.N {
			return fail("the action space %s needs %d logits", spaces.String(as), d.N)
		}
	case MultiCategorical:
		md, ok := as.(*spaces.MultiDiscrete)
		if !ok {
			return fmt.Errorf("distribution multi_categorical needs a MultiDiscrete action space, got %s", spaces.String(as))
		}
		sum := int64(0)
		for _, n := range md.Nvec {
			sum += n
		}
		if int64(width) != sum {
			return fail("the action space %s needs %d logits", spaces.String(as), sum)
		}
	case DiagGaussian:
		b, ok := as.(*spaces.Box)
		if !ok {
			return fmt.Errorf("distribution diag_gaussian needs a Box action space, got %s", spaces.String(as))
		}
		want := 2 * b.Size()
		if s.LogStdOutput != "" {
			want = b.Size()
			ls, _ := m.Output(s.LogStdOutput)
			if w := rowWidth(ls); w >= 0 && w != b.Size() && len(ls.Shape) > 0 {
				return fmt.Errorf("log_std_output %q has %d values per row, but the action space %s needs %d", s.LogStdOutput, w, spaces.String(as), b.Size())
			}
		}
		if width != want {
			return fail("the action space %s needs %d (mean and log_std)", spaces.String(as), want)
		}
	case Deterministic:
		if width != as.Size() {
			return fail("the action space %s holds %d values", spaces.String(as), as.Size())
		}
	}
	return nil
}
