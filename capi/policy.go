package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// policy is an onnxrl_policy: batch inference on a pool of sessions (server.PolicyActor),
// safe for concurrent use.
type policy struct {
	actor    *server.PolicyActor
	obsSpace spaces.Space
	actSpace spaces.Space
	obsSize  int
	actSize  int
}

// loadPolicy loads model (a path or a bundled name, a regular file of at most maxBytes) with
// the runtime, with the status of what went wrong.
func loadPolicy(model string, maxBytes int64) (*models.Policy, error) {
	if err := inference.Init(); err != nil {
		return nil, withStatus(statusNotFound, err)
	}
	p, err := models.OpenLimit(model, maxBytes)
	var se *inference.FileSizeError
	if errors.As(err, &se) {
		return nil, withStatus(statusLimit, fmt.Errorf("onnxrl: %w (raise the limit with the option \"max_model_bytes\")", err))
	}
	if err != nil {
		if s := statusOf(err); s == statusNotFound {
			return nil, withStatus(s, err)
		}
		return nil, withStatus(statusModel, err)
	}
	return p, nil
}

// openPolicy opens model with the options JSON.
func openPolicy(model string, optionsJSON []byte) (*policy, error) {
	o := defaultPolicyOptions()
	if err := readOptions(optionsJSON, &o); err != nil {
		return nil, err
	}
	p, err := loadPolicy(model, o.MaxModelBytes)
	if err != nil {
		return nil, err
	}
	if n := len(p.Spec.State); n > 0 {
		return nil, withStatus(statusModel, fmt.Errorf("onnxrl: %s is recurrent (%d state inputs): batch inference is stateless; use the episode API (onnxrl_env_open), which keeps each episode's state", model, n))
	}
	a, err := server.NewPolicyActor(server.PolicyOptions{Policy: p, Workers: o.Workers, Seed: o.Seed,
		Action:  connectors.ActionConfig{NormalizeActions: o.NormalizeActions, ClipActions: o.ClipActions},
		Session: inference.Options{Device: o.Device, IntraOpThreads: o.Threads, InterOpThreads: 1}})
	if err != nil {
		return nil, withStatus(openStatus(err), fmt.Errorf("onnxrl: %s: %w", model, err))
	}
	return &policy{actor: a, obsSpace: p.Spec.ObservationSpace, actSpace: p.Spec.ActionSpace, obsSize: a.ObservationSize(), actSize: a.ActionSize()}, nil
}

// act computes the actions (and log-probabilities and values, when not nil) of the
// len(obs)/obsSize observations; the slices are sized by the caller for n rows.
func (p *policy) act(obs []float32, n int, explore bool, out server.ActOutputs) error {
	for i := range n {
		if row := obs[i*p.obsSize : (i+1)*p.obsSize]; !p.obsSpace.Contains(row) {
			return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: observation %d %v is outside the observation space %s", i, row, spaces.String(p.obsSpace)))
		}
	}
	e := server.ExploreOff
	if explore {
		e = server.ExploreOn
	}
	err := p.actor.ActInto(context.Background(), out, obs, n, e)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, server.ErrNoValueOutput):
		return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: values asked for, but %w (pass NULL)", err))
	case errors.Is(err, inference.ErrClosed):
		return withStatus(statusState, fmt.Errorf("%w (closed during the call)", errReleased))
	}
	return withStatus(statusModel, fmt.Errorf("onnxrl: inference: %w", err))
}

func (p *policy) close() error { return p.actor.Close() }
