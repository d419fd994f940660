package env

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/spaces"
)

// adapterKinds are the BaseEnv adapters of this package, each over n sub-environments of
// RandomEnv (or RandomMultiAgentEnv with multi) with episodes of 1000 steps.
var adapterKinds = []struct {
	name  string
	multi bool
	make  func(n int) (BaseEnv, error)
}{
	{"BaseEnv", false, func(n int) (BaseEnv, error) {
		return NewBaseEnv(randomMaker(RandomEnvConfig{EpisodeLen: 1000}), BaseEnvOptions{NumEnvs: n})
	}},
	{"MultiAgentBaseEnv", true, func(n int) (BaseEnv, error) {
		return NewMultiAgentBaseEnv(func(int) (MultiAgentEnv, error) {
			return NewRandomMultiAgentEnv(RandomMultiAgentEnvConfig{RandomEnvConfig: RandomEnvConfig{EpisodeLen: 1000}})
		}, BaseEnvOptions{NumEnvs: n})
	}},
	{"VectorBaseEnv", false, func(n int) (BaseEnv, error) {
		v, err := NewVectorEnv(randomMaker(RandomEnvConfig{EpisodeLen: 1000}), n)
		if err != nil {
			return nil, err
		}
		return NewVectorBaseEnv(v, BaseEnvOptions{})
	}},
	{"RemoteVectorEnv", false, func(n int) (BaseEnv, error) {
		return NewRemoteVectorEnv(func(int) (any, error) { return NewRandomEnv(RandomEnvConfig{EpisodeLen: 1000}) },
			RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: n}, BatchWait: WaitAll})
	}},
	{"RemoteVectorEnv/multi-agent", true, func(n int) (BaseEnv, error) {
		return NewRemoteVectorEnv(func(int) (any, error) {
			return NewRandomMultiAgentEnv(RandomMultiAgentEnvConfig{RandomEnvConfig: RandomEnvConfig{EpisodeLen: 1000}})
		}, RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: n}, BatchWait: WaitAll})
	}},
}

// resetAll calls TryResetAll and returns what it reported, collecting an asynchronous
// reset with a Poll.
func resetAll(t *testing.T, b BaseEnv, seed Seed) *Batch {
	t.Helper()
	ar, ok := b.(AllResetter)
	if !ok {
		t.Fatalf("%T does not implement AllResetter", b)
	}
	var batch Batch
	async, err := ar.TryResetAll(seed, &batch)
	if err != nil {
		t.Fatal(err)
	}
	if async {
		if len(batch.Agents) != 0 {
			t.Fatalf("asynchronous TryResetAll appended %d agents", len(batch.Agents))
		}
		if err := b.Poll(&batch); err != nil {
			t.Fatal(err)
		}
	}
	return &batch
}

// TestTryResetAllResetsEverySubEnv (RLlib's try_reset(env_id=None)): in the middle of their
// episodes, every sub-environment of every adapter reports the first observations of a new
// episode, seeded with seed+i, and then takes actions again.
func TestTryResetAllResetsEverySubEnv(t *testing.T) {
	const n = 3
	for _, k := range adapterKinds {
		t.Run(k.name, func(t *testing.T) {
			b, err := k.make(n)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Stop()
			var batch Batch
			if err := b.Poll(&batch); err != nil {
				t.Fatal(err)
			}
			if err := b.SendActions(actionsFor(&batch)); err != nil {
				t.Fatal(err)
			}
			batch.Clear()
			if err := b.Poll(&batch); err != nil { // mid-episode, every sub-environment waits for actions
				t.Fatal(err)
			}
			var obs [2][][]float32
			for round := range obs {
				got := resetAll(t, b, WithSeed(40))
				envs := make([]EnvID, 0, n)
				for _, st := range got.Envs {
					if !st.Reset || st.Terminated || st.Truncated || st.Err != nil {
						t.Fatalf("round %d: status %+v after TryResetAll", round, st)
					}
					envs = append(envs, st.Env)
				}
				slices.Sort(envs)
				if !slices.Equal(envs, []EnvID{0, 1, 2}) {
					t.Fatalf("round %d: TryResetAll reported sub-environments %v", round, envs)
				}
				obs[round] = make([][]float32, n)
				for _, a := range got.Agents {
					if a.Agent == DefaultAgentID || a.Agent == "agent0" {
						obs[round][a.Env] = slices.Clone(a.Obs)
					}
				}
				if err := b.SendActions(actionsFor(got)); err != nil {
					t.Fatalf("round %d: SendActions after TryResetAll: %v", round, err)
				}
				batch.Clear()
				if err := b.Poll(&batch); err != nil || len(batch.Envs) != n {
					t.Fatalf("round %d: Poll after the reset step: %v, %d sub-environments", round, err, len(batch.Envs))
				}
			}
			for i := range n {
				if !slices.Equal(obs[0][i], obs[1][i]) {
					t.Errorf("sub-environment %d: first observation %v, then %v with the same seed", i, obs[0][i], obs[1][i])
				}
			}
			if slices.Equal(obs[0][0], obs[0][1]) {
				t.Errorf("sub-environments 0 and 1 have the same first observation %v: seeds not seed+i", obs[0][0])
			}
			if err := b.Stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := b.(AllResetter).TryResetAll(Seed{}, &batch); !errors.Is(err, ErrStopped) {
				t.Fatalf("TryResetAll after Stop: %v", err)
			}
		})
	}
}

// TestTryRenderAllRendersEverySubEnv: every adapter renders each of its sub-environments.
func TestTryRenderAllRendersEverySubEnv(t *testing.T) {
	for _, k := range adapterKinds {
		t.Run(k.name, func(t *testing.T) {
			b, err := k.make(2)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Stop()
			var batch Batch
			if err := b.Poll(&batch); err != nil {
				t.Fatal(err)
			}
			out, err := b.(AllRenderer).TryRenderAll()
			if err != nil || len(out) != 2 {
				t.Fatalf("TryRenderAll: %v, %d results", err, len(out))
			}
			for i, v := range out {
				if s, ok := v.(string); !ok || !strings.HasPrefix(s, "Random") {
					t.Fatalf("TryRenderAll[%d] = %v", i, v)
				}
			}
		})
	}
}

// TestTryRenderAllNamesFailures: a sub-environment that cannot render leaves a nil entry
// and its error; the others are rendered.
func TestTryRenderAllNamesFailures(t *testing.T) {
	b, err := NewBaseEnv(func(i int) (Env, error) {
		if i == 1 {
			return newZeroEnv(), nil // no Render
		}
		return NewRandomEnv(RandomEnvConfig{})
	}, BaseEnvOptions{NumEnvs: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	out, err := b.(AllRenderer).TryRenderAll()
	if err == nil || !strings.Contains(err.Error(), "sub-environment 1") || out[1] != nil || out[0] == nil || out[2] == nil {
		t.Fatalf("TryRenderAll with sub-environment 1 unable to render: %v %v", out, err)
	}
}

// TestRemoteTryResetAllRefusedWhileStepping: nothing is reset while a sub-environment steps.
func TestRemoteTryResetAllRefusedWhileStepping(t *testing.T) {
	release := make(chan struct{})
	envs := newGateEnvs(t, 2, release, 1)
	r, err := NewRemoteVectorEnv(func(i int) (any, error) { return envs[i], nil },
		RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 2}, BatchWait: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	var batch Batch
	for batch.Envs = nil; len(batch.Envs) < 2; {
		if err := r.Poll(&batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SendActions(actionsFor(&batch)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.TryResetAll(Seed{}, &batch); err == nil || !strings.Contains(err.Error(), "still stepping") {
		t.Fatalf("TryResetAll with sub-environments in flight: %v", err)
	}
	close(release)
}

// TestSpacesOfEveryAdapter (RLlib's BaseEnv.observation_space, action_space,
// get_agent_ids): every adapter tells its agents' spaces.
func TestSpacesOfEveryAdapter(t *testing.T) {
	box := spaces.NewBox(-1, 1, 4)
	for _, k := range adapterKinds {
		t.Run(k.name, func(t *testing.T) {
			b, err := k.make(2)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Stop()
			want := []AgentID{DefaultAgentID}
			if k.multi {
				want = []AgentID{"agent0", "agent1"}
			}
			if got := b.(Spaceser).PossibleAgents(); !slices.Equal(got, want) {
				t.Fatalf("PossibleAgents: %q, want %q", got, want)
			}
			for _, id := range want {
				obs, act, err := SpacesOf(b, id)
				if err != nil {
					t.Fatal(err)
				}
				if !spaces.Equal(obs, box) || !spaces.Equal(act, &spaces.Discrete{N: 2}) {
					t.Fatalf("agent %q: spaces %s, %s", id, spaces.String(obs), spaces.String(act))
				}
			}
			if _, _, err := SpacesOf(b, "nobody"); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
				t.Fatalf("SpacesOf an unknown agent: %v", err)
			}
		})
	}
	if _, _, err := SpacesOf(struct{ BaseEnv }{}, DefaultAgentID); err == nil || !strings.Contains(err.Error(), "Spaceser") {
		t.Fatalf("SpacesOf a BaseEnv without spaces: %v", err)
	}
}
