package envrunner

import (
	"math"
	"reflect"
	"testing"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	_ "github.com/onnxrl/sampler/env/classic" // registers the environments
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// pollOnly hides an environment's columns, so that the runner polls it.
type pollOnly struct{ env.BaseEnv }

// TestTrajectoryRowsFullyWritten checks the invariant newRow relies on: every value of a
// trajectory row is written before a batch reads it. Before each step, the free storage of
// every record is filled with a poison value; the batches must be those of the same run
// without it.
func TestTrajectoryRowsFullyWritten(t *testing.T) {
	type tc struct {
		name    string
		envName string
		cfg     env.Config
		policy  string // bundled model, or "" for a random policy
		poll    bool
		mode    string
	}
	cases := []tc{
		{name: "random/columns", envName: "CartPole-v1", cfg: env.Config{"max_episode_steps": 9}},
		{name: "random/multiagent", envName: "MultiAgentCartPole", cfg: env.Config{"num_agents": 3, "max_episode_steps": 7}},
		{name: "mlp/columns", envName: "CartPole-v1", cfg: env.Config{"max_episode_steps": 9}, policy: "cartpole_mlp"},
		{name: "mlp/columns/complete", envName: "CartPole-v1", cfg: env.Config{"max_episode_steps": 9}, policy: "cartpole_mlp",
			mode: CompleteEpisodes},
		{name: "mlp/poll/complete", envName: "CartPole-v1", cfg: env.Config{"max_episode_steps": 9}, policy: "cartpole_mlp",
			poll: true, mode: CompleteEpisodes},
		{name: "mlp/multiagent", envName: "MultiAgentCartPole", cfg: env.Config{"num_agents": 3, "max_episode_steps": 7},
			policy: "cartpole_mlp"},
		{name: "lstm/columns", envName: "StatelessCartPole", cfg: env.Config{"max_episode_steps": 9}, policy: "lstm_policy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pc PolicyConfig
			if c.policy == "" {
				pc = PolicyConfig{Random: true, ObservationSpace: spaces.NewBox(-math.MaxFloat32, math.MaxFloat32, 4),
					ActionSpace: &spaces.Discrete{N: 2}}
			} else {
				if err := inference.Init(); err != nil {
					t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
				}
				p, err := models.Bundled(c.policy)
				if err != nil {
					t.Fatal(err)
				}
				pc = PolicyConfig{Policy: p, Action: connectors.ActionConfig{Explore: true}}
			}
			run := func(poison bool, with float32) []*MultiAgentBatch {
				be, err := env.ToBaseEnv(func(int) (any, error) { return env.Make(c.envName, c.cfg) },
					env.BaseEnvOptions{NumEnvs: 4, Seed: env.WithSeed(3)})
				if c.envName != "MultiAgentCartPole" { // a VectorEnv: the runner takes its columns
					var v env.VectorEnv
					v, err = env.NewVectorEnv(func(int) (env.Env, error) {
						e, err := env.Make(c.envName, c.cfg)
						if err != nil {
							return nil, err
						}
						return e.Env(), nil
					}, 4)
					if err == nil {
						be, err = env.NewVectorBaseEnv(v, env.BaseEnvOptions{Seed: env.WithSeed(3)})
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if c.poll {
					be = pollOnly{be}
				}
				r, err := New(Config{Env: be, NumEnvs: 4, Seed: 5, FragmentLength: 6, BatchMode: c.mode,
					Policies: map[PolicyID]PolicyConfig{DefaultPolicyID: pc}, GAE: &GAE{Gamma: 0.9, Lambda: 0.8}})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				_, columnar := r.proto.(*columnProtocol)
				if columnar == (c.poll || c.envName == "MultiAgentCartPole") {
					t.Fatalf("columnar runner: %v", columnar)
				}
				var out []*MultiAgentBatch
				for range 60 {
					if poison {
						poisonTrajectories(r, with)
					}
					if err := r.Step(); err != nil {
						t.Fatal(err)
					}
					if r.Ready() {
						dst := new(MultiAgentBatch)
						r.Take(dst)
						out = append(out, dst)
					}
				}
				return out
			}
			want := run(false, 0)
			if len(want) == 0 || want[0].Rows() == 0 {
				t.Fatal("no rows sampled")
			}
			// NaN shows in the float columns (and differs from itself); 7 sets every done
			// flag.
			for _, with := range []float32{float32(math.NaN()), 7} {
				if got := run(true, with); !reflect.DeepEqual(got, want) {
					t.Errorf("with the free trajectory storage filled with %v, the batches differ: "+
						"a trajectory value was read before it was written", with)
				}
			}
		})
	}
}

// poisonTrajectories fills the storage past the end of every record's trajectory with v.
func poisonTrajectories(r *Runner, v float32) {
	poison := func(a *agentRec) {
		if a == nil {
			return
		}
		free := a.tr[len(a.tr):cap(a.tr)]
		for i := range free {
			free[i] = v
		}
	}
	for _, a := range r.frag.listed {
		poison(a)
	}
	for _, ep := range r.eps.byEnv {
		if ep != nil {
			for _, a := range ep.agents {
				poison(a)
			}
		}
	}
	for _, p := range r.policies {
		for _, a := range p.pool {
			poison(a)
		}
	}
}
