package runspec

import (
	"errors"
	"fmt"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// OpenPolicy loads a model by path, or by bundled name when no such file exists, from a
// regular file of at most maxBytes (0: inference.DefaultMaxModelBytes); a larger file's
// error says which flag raises the limit (--max-model-size). What every command that reads
// a model calls (sample run, serve, inspect, infer, publish-policy, worker).
func OpenPolicy(name string, maxBytes int64) (*models.Policy, error) {
	if name == "" {
		return nil, specErrorf("no model given")
	}
	if maxBytes <= 0 {
		maxBytes = inference.DefaultMaxModelBytes
	}
	p, err := models.OpenLimit(name, maxBytes)
	var se *inference.FileSizeError
	if errors.As(err, &se) {
		return nil, fmt.Errorf("%w (raise the limit with --max-model-size)", err)
	}
	return p, err
}

// PolicySpec is one policy as the commands take it: a model and how its actions are made
// and inferred.
type PolicySpec struct {
	// Model is an .onnx path, a bundled model name, or "random" (uniform random actions).
	Model string
	// ObservationSpace and ActionSpace are what the policy is bound to (an environment's);
	// nil takes the model's. A random policy needs both.
	ObservationSpace, ActionSpace spaces.Space
	Action                        connectors.ActionConfig // --explore, --normalize-actions, --clip-actions
	Device                        string                  // --device; "" is "cpu"
	Threads                       int                     // --threads: intra-op threads per session
	// Open loads the model; nil: OpenPolicy with the default size limit.
	Open func(name string) (*models.Policy, error)
}

// BindPolicy loads the model of ps (initializing the runtime) and returns the runner's
// policy config: the model, the spaces and the session settings, or a random policy.
func BindPolicy(ps PolicySpec) (envrunner.PolicyConfig, error) {
	pc := envrunner.PolicyConfig{ObservationSpace: ps.ObservationSpace, ActionSpace: ps.ActionSpace, Action: ps.Action}
	if ps.Model == "random" {
		if pc.ObservationSpace == nil || pc.ActionSpace == nil {
			return pc, specErrorf("--model random needs --obs-space and --action-space")
		}
		pc.Random = true
		return pc, nil
	}
	if err := inference.Init(); err != nil {
		return pc, err
	}
	open := ps.Open
	if open == nil {
		open = func(name string) (*models.Policy, error) { return OpenPolicy(name, 0) }
	}
	p, err := open(ps.Model)
	if err != nil {
		return pc, err
	}
	if pc.ObservationSpace == nil {
		pc.ObservationSpace = p.Spec.ObservationSpace
	}
	if pc.ActionSpace == nil {
		pc.ActionSpace = p.Spec.ActionSpace
	}
	device := ps.Device
	if device == "" {
		device = "cpu"
	}
	pc.Policy = p
	pc.Session = inference.Options{Device: device, IntraOpThreads: ps.Threads, InterOpThreads: 1}
	return pc, nil
}
