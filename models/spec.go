// Package models holds the bundled ONNX policies and the Go side of the policy spec: the JSON
// that tells the sampler which model input is the observation, which outputs are the action
// distribution inputs, the value and the RNN states, which distribution to use, and the
// spaces the policy was trained on.
//
// A spec is found, in order, in a sidecar file next to the model (<model>.policy.json for
// <model>.onnx), in the model's metadata under the key "onnxrl.policy", and by auto-detection
// from common export names, shapes and dynamic axes. A spec may give only some fields; the
// others are auto-detected. Every decision carries its reason (see Policy.Decisions), which
// `sample inspect` shows.
//
// # Usage
//
//	p, err := models.Load("policy.onnx")      // or models.Bundled("cartpole_mlp")
//	if err != nil { ... }
//	fmt.Println(p.Spec.ObservationInput, p.Spec.Distribution)
//	sess, err := inference.NewSession(p.Model, inference.Options{Capacity: 256})
package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/onnxrl/sampler/spaces"
)

// MetadataKey is the ONNX metadata key that may hold the policy spec JSON.
const MetadataKey = "onnxrl.policy"

// The distributions a spec may name.
const (
	Categorical      = "categorical"
	MultiCategorical = "multi_categorical"
	DiagGaussian     = "diag_gaussian"
	Deterministic    = "deterministic"
)

// StatePair names an RNN state input and the output that carries its next value.
type StatePair struct {
	Input  string `json:"input"`
	Output string `json:"output"`
}

// Spec is the policy spec of DESIGN.md. Empty fields are auto-detected by Resolve.
type Spec struct {
	ObservationInput string      `json:"observation_input,omitempty"`
	ActionOutput     string      `json:"action_output,omitempty"`
	ValueOutput      string      `json:"value_output,omitempty"`
	LogStdOutput     string      `json:"log_std_output,omitempty"`
	State            []StatePair `json:"state,omitempty"`
	// StateSet records that the spec gave "state" (an empty list means: no state).
	StateSet         bool         `json:"-"`
	Distribution     string       `json:"distribution,omitempty"`
	ObservationSpace spaces.Space `json:"-"`
	ActionSpace      spaces.Space `json:"-"`
}

type specJSON struct {
	ObservationInput *string         `json:"observation_input"`
	ActionOutput     *string         `json:"action_output"`
	ValueOutput      *string         `json:"value_output"`
	LogStdOutput     *string         `json:"log_std_output"`
	State            *[]StatePair    `json:"state"`
	Distribution     *string         `json:"distribution"`
	ObservationSpace json.RawMessage `json:"observation_space"`
	ActionSpace      json.RawMessage `json:"action_space"`
}

// SpecError reports a policy spec that cannot be used.
type SpecError struct {
	Source string // where the spec came from: a file path, "metadata onnxrl.policy", ...
	Field  string // the JSON field at fault, or ""
	Err    error
}

func (e *SpecError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("models: policy spec %s: %s: %v", e.Source, e.Field, e.Err)
	}
	return fmt.Sprintf("models: policy spec %s: %v", e.Source, e.Err)
}

func (e *SpecError) Unwrap() error { return e.Err }

// ParseSpec parses policy spec JSON. Unknown fields, an unknown distribution and invalid
// spaces are errors naming the field; source names the spec in messages.
func ParseSpec(source string, data []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j specJSON
	if err := dec.Decode(&j); err != nil {
		return nil, &SpecError{Source: source, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &SpecError{Source: source, Err: errors.New("invalid JSON: data after the spec object")}
	}
	s := &Spec{}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	s.ObservationInput = str(j.ObservationInput)
	s.ActionOutput = str(j.ActionOutput)
	s.ValueOutput = str(j.ValueOutput)
	s.LogStdOutput = str(j.LogStdOutput)
	s.Distribution = str(j.Distribution)
	if j.State != nil {
		s.State, s.StateSet = *j.State, true
		for i, p := range s.State {
			if p.Input == "" || p.Output == "" {
				return nil, &SpecError{Source: source, Field: fmt.Sprintf("state[%d]", i), Err: errors.New("needs both input and output names")}
			}
		}
	}
	switch s.Distribution {
	case "", Categorical, MultiCategorical, DiagGaussian, Deterministic:
	default:
		return nil, &SpecError{Source: source, Field: "distribution", Err: fmt.Errorf("unknown distribution %q (want %s, %s, %s or %s)",
			s.Distribution, Categorical, MultiCategorical, DiagGaussian, Deterministic)}
	}
	var err error
	if len(j.ObservationSpace) > 0 && string(j.ObservationSpace) != "null" {
		if s.ObservationSpace, err = spaces.Unmarshal(j.ObservationSpace); err != nil {
			return nil, &SpecError{Source: source, Field: "observation_space", Err: err}
		}
	}
	if len(j.ActionSpace) > 0 && string(j.ActionSpace) != "null" {
		if s.ActionSpace, err = spaces.Unmarshal(j.ActionSpace); err != nil {
			return nil, &SpecError{Source: source, Field: "action_space", Err: err}
		}
	}
	return s, nil
}

// MarshalJSON writes the spec in the DESIGN.md form.
func (s *Spec) MarshalJSON() ([]byte, error) {
	type plain struct {
		ObservationInput string          `json:"observation_input,omitempty"`
		ActionOutput     string          `json:"action_output,omitempty"`
		ValueOutput      string          `json:"value_output,omitempty"`
		LogStdOutput     string          `json:"log_std_output,omitempty"`
		State            []StatePair     `json:"state"`
		Distribution     string          `json:"distribution,omitempty"`
		ObservationSpace json.RawMessage `json:"observation_space,omitempty"`
		ActionSpace      json.RawMessage `json:"action_space,omitempty"`
	}
	p := plain{ObservationInput: s.ObservationInput, ActionOutput: s.ActionOutput, ValueOutput: s.ValueOutput,
		LogStdOutput: s.LogStdOutput, State: s.State, Distribution: s.Distribution}
	if p.State == nil {
		p.State = []StatePair{}
	}
	var err error
	if s.ObservationSpace != nil {
		if p.ObservationSpace, err = s.ObservationSpace.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	if s.ActionSpace != nil {
		if p.ActionSpace, err = s.ActionSpace.MarshalJSON(); err != nil {
			return nil, err
		}
	}
	return json.Marshal(p)
}
