package runspec

import (
	"time"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
)

// ExternalSpec is a served run (`sample serve`): an ExternalEnv whose episodes clients run,
// and the runner that answers their observations with one batched inference per step and
// records their sample batches. Field by field the flags of `sample serve`.
type ExternalSpec struct {
	Policy     PolicySpec // --model, --obs-space, --action-space, ...
	MultiAgent bool       // --multi-agent: an ExternalMultiAgentEnv
	// MaxEpisodes (--max-episodes), Timeout (--timeout), MaxBatch (--max-batch), MaxWait
	// (--max-wait) and MaxAgents (--max-agents, multi-agent) are the env's options.
	MaxEpisodes      int
	Timeout, MaxWait time.Duration
	MaxBatch         int
	MaxAgents        int
	Seed             uint64 // --seed: of the action sampling
	FragmentLength   int    // --fragment-length
	Record           bool   // build sample batches (--out); false: the runner keeps none
	// IdlePoll makes an idle env's Poll return at this interval (with --out: the flush
	// interval, so that the steps served before the clients went quiet are written then).
	IdlePoll time.Duration
	// ObservePolls wraps the env the runner polls (the server's metrics); nil: none.
	ObservePolls func(env.BaseEnv) env.BaseEnv
}

// External is a built served run.
type External struct {
	Policy envrunner.PolicyConfig // bound: the model (nil: random) and the spaces
	// Env is the single-agent env, MultiAgentEnv the multi-agent one (the other nil).
	Env           *externalenv.ExternalEnv
	MultiAgentEnv *externalenv.ExternalMultiAgentEnv
	Runner        *envrunner.Runner
}

// Stop stops the env: requests waiting for an action are answered (ErrStopped) now.
func (x *External) Stop() {
	if x.Env != nil {
		x.Env.Stop()
	} else {
		x.MultiAgentEnv.Stop()
	}
}

// Close closes the runner (its sessions) and stops the env.
func (x *External) Close() error {
	if x == nil {
		return nil
	}
	var err error
	if x.Runner != nil {
		err = x.Runner.Close()
	}
	x.Stop()
	return err
}

// BuildExternal binds the policy, makes the env with the policy's spaces and the runner
// over it, one episode slot a sub-environment. The run id is envrunner.PoliciesRunID of the
// policy.
func BuildExternal(s ExternalSpec) (_ *External, err error) {
	pc, err := BindPolicy(s.Policy)
	if err != nil {
		return nil, err
	}
	x := &External{Policy: pc}
	var be env.BaseEnv
	var numEnvs int
	if s.MultiAgent {
		e, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: pc.ObservationSpace, ActionSpace: pc.ActionSpace,
			MaxConcurrentEpisodes: s.MaxEpisodes, Timeout: s.Timeout, MaxBatch: s.MaxBatch, MaxWait: s.MaxWait, IdlePoll: s.IdlePoll,
			MaxAgents: s.MaxAgents})
		if err != nil {
			return nil, err
		}
		x.MultiAgentEnv, be, numEnvs = e, e, e.NumEnvs()
	} else {
		e, err := externalenv.New(externalenv.Options{ObservationSpace: pc.ObservationSpace, ActionSpace: pc.ActionSpace,
			MaxConcurrentEpisodes: s.MaxEpisodes, Timeout: s.Timeout, MaxBatch: s.MaxBatch, MaxWait: s.MaxWait, IdlePoll: s.IdlePoll})
		if err != nil {
			return nil, err
		}
		x.Env, be, numEnvs = e, e, e.NumEnvs()
	}
	defer func() {
		if err != nil {
			x.Stop()
		}
	}()
	polled := be
	if s.ObservePolls != nil {
		polled = s.ObservePolls(be)
	}
	pols := map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: pc}
	x.Runner, err = envrunner.New(envrunner.Config{Env: polled, NumEnvs: numEnvs, Seed: s.Seed, RunID: envrunner.PoliciesRunID(pols),
		FragmentLength: s.FragmentLength, NoSamples: !s.Record, Policies: pols})
	if err != nil {
		return nil, err
	}
	return x, nil
}
