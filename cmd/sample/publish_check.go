package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/onnxrl/sampler/envrunner/runspec"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// publishCheck is what publish-policy checks a model against before publishing it: workers
// skip a model they cannot bind, so a fleet went on with an older version than the operator
// thought (issue 35: /etc/passwd and models with lying or huge shapes were published).
type publishCheck struct {
	env, envConfig string
	maxModel       modelSizeFlag
}

func (c *publishCheck) register(fs *flag.FlagSet) {
	fs.StringVar(&c.env, "env", "", "check the model against this registered environment's spaces, as the workers' sample run --env binds it (default: the spaces of its policy spec)")
	fs.StringVar(&c.envConfig, "env-config", "", "with --env: the environment's config, as sample run takes it")
	c.maxModel.register(fs)
}

// model loads the model at path the way `sample run --model path` does (its sidecar spec, or
// the spec in its metadata, or auto-detection), binds it as a runner would (against --env's
// spaces when given) and returns the bytes to publish: the file's own, or, when the spec came
// from a sidecar, the model with that spec in its metadata (workers receive the .onnx alone).
// note says what was done to it ("" when nothing).
func (c *publishCheck) model(path string) (data []byte, note string, err error) {
	if err := c.maxModel.parse(); err != nil {
		return nil, "", err
	}
	if c.envConfig != "" && c.env == "" {
		return nil, "", usagef("--env-config needs --env")
	}
	if err := inference.Init(); err != nil {
		return nil, "", err
	}
	p, err := runspec.OpenPolicy(path, c.maxModel.limit())
	if err != nil {
		return nil, "", fmt.Errorf("not published: %w", err)
	}
	m := p.Model
	if p.Source == models.SidecarPath(path) {
		spec, err := json.Marshal(&p.Spec)
		if err != nil {
			return nil, "", err
		}
		if m, err = m.WithMetadata(models.MetadataKey, string(spec)); err != nil {
			return nil, "", err
		}
		note = "the spec of " + p.Source + " in its metadata"
	}
	// What the workers will load: these bytes, without a sidecar.
	if p, err = models.LoadModel(m, ""); err != nil {
		return nil, "", fmt.Errorf("not published: %s: %w", path, err)
	}
	if err := c.bind(path, p); err != nil {
		return nil, "", err
	}
	return m.Bytes(), note, nil
}

// bind binds p as a worker's runner would (against --env's spaces when given, else its
// spec's), refusing what would not bind.
func (c *publishCheck) bind(path string, p *models.Policy) error {
	ps := runspec.PolicySpec{Model: path, Device: "cpu", Threads: 1,
		Open: func(string) (*models.Policy, error) { return p, nil }} // these bytes, loaded already
	where := ""
	if c.env != "" {
		cfg, err := env.ParseConfig(c.envConfig)
		if err != nil {
			return usagef("--env-config: %v", err)
		}
		info, err := runspec.ProbeEnv(c.env, cfg)
		if err != nil {
			return err
		}
		ps.ObservationSpace, ps.ActionSpace = info.Obs, info.Act
		where = " against " + c.env
	}
	pc, err := runspec.BindPolicy(ps)
	if err != nil {
		return err
	}
	if err := envrunner.CheckPolicy(envrunner.DefaultPolicyID, pc); err != nil {
		if u := errors.Unwrap(err); u != nil {
			err = u // without "envrunner: policy ...": the model is the subject here
		}
		return fmt.Errorf("not published: %s does not bind%s as sample run would: %w", path, where, err)
	}
	return nil
}
