package runspec

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers the classic environments
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// DefaultModels maps environments to their bundled default policy (Spec.Model "").
var DefaultModels = map[string]string{
	"CartPole-v1":        "cartpole_mlp",
	"MultiAgentCartPole": "cartpole_mlp",
	"StatelessCartPole":  "lstm_policy",
	"Pendulum-v1":        "pendulum_gaussian",
}

// Spec is a sampling run, field by field the flags of `sample run` (named in the comments).
type Spec struct {
	Env       string // --env: a registered environment name
	EnvConfig string // --env-config: a JSON object, or key=value,key=value
	NumEnvs   int    // --num-envs: sub-environments in all, split over the workers
	Workers   int    // --workers: runners working in parallel

	// Model is the one policy (--model): an .onnx path, a bundled model name, or "random";
	// "" takes the environment's bundled policy (DefaultModels).
	Model string
	// Policies are ID=MODEL pairs (--policy), instead of Model; PolicyMap AGENT=ID rules
	// (--policy-map), globs over agent ids, the first that matches wins.
	Policies, PolicyMap []string
	// OpenModel loads a model by name; nil: models.OpenLimit with MaxModelBytes.
	OpenModel     func(name string) (*models.Policy, error)
	MaxModelBytes int64 // 0: inference.DefaultMaxModelBytes

	Explore          bool // --explore
	NormalizeActions bool // --normalize-actions
	ClipActions      bool // --clip-actions
	// Seed (--seed): sub-environment i is seeded with Seed+i, runner w's actions with (Seed, w).
	Seed           uint64
	FragmentLength int    // --fragment-length
	BatchMode      string // --batch-mode: envrunner.TruncateEpisodes or CompleteEpisodes
	CountStepsBy   string // --count-steps-by: envrunner.EnvSteps or AgentSteps
	GAE            bool   // --gae, with Gamma (--gamma) and Lambda (--lambda)
	Gamma, Lambda  float64
	Device         string // --device; "" is "cpu"
	Threads        int    // --threads: intra-op threads per session (0: the runtime's default)

	// MaxSeqLen (--max-seq-len) is a recurrent policy's longest sequence, 0: 20 (RLlib's
	// max_seq_len); StatePerSequence (--state-in per-sequence) gives its batches RLlib's
	// state_in layout, a row per sequence (envrunner.Config.StatePerSequence).
	MaxSeqLen        int
	StatePerSequence bool

	Remote        bool          // --remote: a RemoteVectorEnv
	BatchWait     time.Duration // --remote-wait (env.WaitAll: every sub-environment)
	RestartFailed bool          // --restart-failed

	// MaxEnvSteps and MaxEpisodes (--steps, --episodes) end the run, split over the workers;
	// 0 and 0: it runs until stopped. With either set every episode's metrics are kept
	// (Config.MaxMetrics -1) for the caller to take.
	MaxEnvSteps, MaxEpisodes int64
}

// SpecError is a spec that cannot be built as given (a usage error of `sample run`).
type SpecError struct{ Msg string }

func (e *SpecError) Error() string { return e.Msg }

func specErrorf(format string, args ...any) error {
	return &SpecError{fmt.Sprintf(format, args...)}
}

// Check refuses the values that Build cannot build, with *SpecError values naming their
// flags (sample run calls it before it builds anything; Build calls it again).
func (s *Spec) Check() error {
	if err := s.checkSizes(); err != nil {
		return err
	}
	switch {
	case s.BatchMode != envrunner.TruncateEpisodes && s.BatchMode != envrunner.CompleteEpisodes:
		return specErrorf("--batch-mode %q: want truncate_episodes or complete_episodes", s.BatchMode)
	case s.CountStepsBy != envrunner.EnvSteps && s.CountStepsBy != envrunner.AgentSteps:
		return specErrorf("--count-steps-by %q: want env_steps or agent_steps", s.CountStepsBy)
	case s.GAE && (!(s.Gamma >= 0 && s.Gamma <= 1) || !(s.Lambda >= 0 && s.Lambda <= 1)):
		return specErrorf("--gamma and --lambda must be in [0, 1]")
	}
	return nil
}

// checkSizes refuses counts and lengths out of range.
func (s *Spec) checkSizes() error {
	switch {
	case s.NumEnvs < 1:
		return specErrorf("--num-envs %d: want >= 1", s.NumEnvs)
	case s.Workers < 1:
		return specErrorf("--workers %d: want >= 1", s.Workers)
	case s.Workers > s.NumEnvs:
		return specErrorf("--workers %d is more than --num-envs %d: every worker needs a sub-environment", s.Workers, s.NumEnvs)
	case s.FragmentLength < 1:
		return specErrorf("--fragment-length %d: want >= 1", s.FragmentLength)
	case s.Threads < 0:
		return specErrorf("--threads %d: want >= 0", s.Threads)
	case s.MaxSeqLen < 0:
		return specErrorf("--max-seq-len %d: want >= 1 (or 0 for 20)", s.MaxSeqLen)
	case s.MaxEnvSteps < 0 || s.MaxEpisodes < 0:
		return specErrorf("--steps and --episodes must not be negative")
	}
	return nil
}

// EnvInfo is what a run learns from the environment's first instance.
type EnvInfo struct {
	Agents   []env.AgentID // nil for single-agent kinds
	Obs, Act spaces.Space
	Single   bool // an env.Env
}

// ProbeEnv makes the environment once and reads its spaces; every agent of a multi-agent
// environment must share them (one policy serves them all).
func ProbeEnv(name string, cfg env.Config) (*EnvInfo, error) {
	made, err := env.Make(name, cfg)
	if err != nil {
		return nil, err
	}
	raw := made.Value()
	if c, ok := raw.(io.Closer); ok {
		defer c.Close()
	}
	info := &EnvInfo{}
	switch e := raw.(type) {
	case env.Env:
		info.Obs, info.Act = e.ObservationSpace(), e.ActionSpace()
		info.Single = true
	case env.VectorEnv:
		info.Obs, info.Act = e.ObservationSpace(), e.ActionSpace()
	case env.MultiAgentEnv:
		info.Agents = e.PossibleAgents()
		if len(info.Agents) == 0 {
			return nil, fmt.Errorf("environment %s has no agents", name)
		}
		info.Obs, info.Act = e.ObservationSpace(info.Agents[0]), e.ActionSpace(info.Agents[0])
		for _, a := range info.Agents[1:] {
			if !spaces.Equal(e.ObservationSpace(a), info.Obs) || !spaces.Equal(e.ActionSpace(a), info.Act) {
				return nil, fmt.Errorf("environment %s: agent %q has other spaces than agent %q; sample run maps every agent to one policy", name, a, info.Agents[0])
			}
		}
	default:
		return nil, fmt.Errorf("environment %s is a %T; sample run needs an Env, VectorEnv or MultiAgentEnv", name, raw)
	}
	if info.Obs == nil || info.Act == nil {
		return nil, fmt.Errorf("environment %s has no observation or action space", name)
	}
	return info, nil
}

// Run is a built run: its runners in a Group, ready to Run (or, one runner, to Sample).
type Run struct {
	Spec Spec
	Info *EnvInfo
	// Model describes the models for a summary ("cartpole_mlp", "a=random,b=x.onnx").
	Model string
	// Policy is the one ONNX policy, for an output's metadata (nil: random, or several).
	Policy *models.Policy
	// Policies are the policies' ids, sorted.
	Policies []envrunner.PolicyID
	Group    *envrunner.Group
}

// Close closes the runners (and so their environments and sessions).
func (r *Run) Close() error {
	if r == nil || r.Group == nil {
		return nil
	}
	return r.Group.Close()
}

// Build makes the environments, loads the policies and builds one runner per worker, each
// with its share of the sub-environments (sub-environment i is seeded with Seed+i whatever
// the worker).
func Build(s Spec) (_ *Run, err error) {
	if s.Device == "" {
		s.Device = "cpu"
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	run := &Run{Spec: s}
	cfg, err := env.ParseConfig(s.EnvConfig)
	if err != nil {
		return nil, specErrorf("--env-config: %v", err)
	}
	if run.Info, err = ProbeEnv(s.Env, cfg); err != nil {
		return nil, err
	}
	if _, err := inference.ParseDevice(s.Device); err != nil {
		return nil, specErrorf("--device: %v", err)
	}
	pols, mapping, model, err := buildPolicies(&s, run.Info)
	if err != nil {
		return nil, err
	}
	run.Model = model
	for id, pc := range pols {
		run.Policies = append(run.Policies, id)
		if len(pols) == 1 {
			run.Policy = pc.Policy
		}
	}
	sortStrings(run.Policies)
	base := s.baseConfig(pols, mapping)
	runners := make([]*envrunner.Runner, 0, s.Workers)
	defer func() {
		if err != nil {
			for _, r := range runners {
				r.Close()
			}
		}
	}()
	first := 0
	for w := range s.Workers {
		n := s.NumEnvs / s.Workers
		if w < s.NumEnvs%s.Workers {
			n++
		}
		r, err := newWorker(&s, cfg, run.Info, base, w, first, n)
		if err != nil {
			return nil, err
		}
		runners = append(runners, r)
		first += n
	}
	run.Group = envrunner.NewGroup(runners)
	return run, nil
}

// baseConfig is what every worker's runner shares; newWorker adds its share of the
// sub-environments.
func (s *Spec) baseConfig(pols map[envrunner.PolicyID]envrunner.PolicyConfig, mapping func(env.AgentID, *envrunner.Episode) envrunner.PolicyID) envrunner.Config {
	base := envrunner.Config{Seed: s.Seed, RunID: runID(s, pols), Policies: pols, PolicyMapping: mapping,
		FragmentLength: s.FragmentLength, CountStepsBy: s.CountStepsBy, BatchMode: s.BatchMode,
		MaxSeqLen: s.MaxSeqLen, StatePerSequence: s.StatePerSequence}
	if s.GAE {
		base.GAE = &envrunner.GAE{Gamma: s.Gamma, Lambda: s.Lambda}
	}
	if s.MaxEnvSteps > 0 || s.MaxEpisodes > 0 {
		// Every episode's metrics reach the caller: a run of a number of episodes keeps
		// them until the end, any other takes them with each batch (sample run), so that
		// its runners hold a fragment's worth.
		base.MaxMetrics = -1
	}
	return base
}

// newWorker builds worker w's runner over its n sub-environments, the first of them
// sub-environment first of the run (seeded with Seed+first).
func newWorker(s *Spec, cfg env.Config, info *EnvInfo, base envrunner.Config, w, first, n int) (*envrunner.Runner, error) {
	opts := env.BaseEnvOptions{NumEnvs: n, Seed: env.WithSeed(s.Seed + uint64(first)), RestartFailedSubEnvironments: s.RestartFailed}
	be, err := makeBaseEnv(s, cfg, info, opts)
	if err != nil {
		return nil, err
	}
	rc := base
	rc.Env, rc.NumEnvs, rc.Worker = be, n, w
	rc.MaxEnvSteps, rc.MaxEpisodes = share(s.MaxEnvSteps, s.Workers, w), share(s.MaxEpisodes, s.Workers, w)
	r, err := envrunner.New(rc)
	if err != nil {
		be.Stop()
		return nil, err
	}
	return r, nil
}

// makeBaseEnv builds one worker's environment: a RemoteVectorEnv with Remote; single-agent
// environments as one VectorEnv (its adapter is the cheapest per step); others through
// env.ToBaseEnv.
func makeBaseEnv(s *Spec, cfg env.Config, info *EnvInfo, opts env.BaseEnvOptions) (env.BaseEnv, error) {
	mk := func(int) (any, error) { return env.Make(s.Env, cfg) }
	if s.Remote {
		return env.NewRemoteVectorEnv(mk, env.RemoteVectorEnvOptions{BaseEnvOptions: opts, BatchWait: s.BatchWait})
	}
	if info.Single {
		v, err := env.NewVectorEnv(func(int) (env.Env, error) {
			made, err := env.Make(s.Env, cfg)
			if err != nil {
				return nil, err
			}
			if made.Env() == nil {
				return nil, fmt.Errorf("environment %s made a %s, not an Env", s.Env, made.Kind())
			}
			return made.Env(), nil
		}, opts.NumEnvs)
		if err != nil {
			return nil, err
		}
		opts.NumEnvs = 0
		return env.NewVectorBaseEnv(v, opts)
	}
	return env.ToBaseEnv(mk, opts)
}

// share splits total over workers: worker w's part (the first total%workers get one more).
func share(total int64, workers, w int) int64 {
	if total <= 0 {
		return 0
	}
	n := total / int64(workers)
	if int64(w) < total%int64(workers) {
		n++
	}
	return n
}

// IsSpecError reports whether err is (or wraps) a *SpecError.
func IsSpecError(err error) bool {
	var se *SpecError
	return errors.As(err, &se)
}
