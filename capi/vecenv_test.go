package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

var updateVecGolden = flag.Bool("update-vec-golden", false, "rewrite python/tests/testdata/vec_env_trajectories.json")

// vecBufs are the caller's buffers of one vector env.
type vecBufs struct {
	obs        []float32
	rewards    []float64
	term, trun []uint8
	actions    []float32
}

func newVecBufs(v *vecEnv) *vecBufs {
	n := len(v.envs)
	return &vecBufs{obs: make([]float32, n*v.obsN), rewards: make([]float64, n), term: make([]uint8, n),
		trun: make([]uint8, n), actions: make([]float32, n*v.actN)}
}

func (b *vecBufs) step(t testing.TB, v *vecEnv) {
	t.Helper()
	if _, err := v.step(b.actions, b.obs, b.rewards, b.term, b.trun); err != nil {
		t.Fatal(err)
	}
}

func mustOpenVec(t testing.TB, name, cfg string, n int, seed uint64) *vecEnv {
	t.Helper()
	v, err := openVecEnv(name, []byte(cfg), int64(n), seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.close() })
	return v
}

// actionAt is the deterministic action of sub-environment i on step k of the tests: every
// Discrete value in turn, Box values across the whole range and beyond it (clipped).
func actionAt(act spaces.Space, i, k int, dst []float32) {
	switch s := act.(type) {
	case *spaces.Discrete:
		dst[0] = float32(s.Start + int64((i*7+k*3+k/5)%int(s.N)))
	default:
		for j := range dst {
			dst[j] = float32(math.Sin(float64(i*13+k*7+j))) * 2.5
		}
	}
}

// referenceTrajectory steps n sub-environments made directly from the registry, one at a
// time, as gymnasium's SyncVectorEnv steps them with next-step autoreset: it is what the
// vector env must reproduce, bit for bit. It returns each step's observations (the reset's
// first), rewards and flags.
type trajectory struct {
	Obs        [][]float32 `json:"obs"`
	Rewards    [][]float64 `json:"rewards"`
	Terminated [][]bool    `json:"terminated"`
	Truncated  [][]bool    `json:"truncated"`
	Actions    [][]float32 `json:"actions"`
}

func referenceTrajectory(t testing.TB, name string, cfg env.Config, n int, seed uint64, steps int) trajectory {
	t.Helper()
	envs := make([]env.Env, n)
	var act spaces.Space
	var obsN, actN int
	for i := range envs {
		raw, err := env.Make(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = raw.Env()
		act, obsN, actN = envs[i].ActionSpace(), envs[i].ObservationSpace().Size(), envs[i].ActionSpace().Size()
	}
	var tr trajectory
	obs := make([]float32, n*obsN)
	for i, e := range envs {
		if _, err := e.Reset(env.WithSeed(seed+uint64(i)), obs[i*obsN:(i+1)*obsN]); err != nil {
			t.Fatal(err)
		}
	}
	tr.Obs = append(tr.Obs, slices.Clone(obs))
	ended := make([]bool, n)
	for k := range steps {
		acts := make([]float32, n*actN)
		rew := make([]float64, n)
		term, trunc := make([]bool, n), make([]bool, n)
		for i, e := range envs {
			a, o := acts[i*actN:(i+1)*actN], obs[i*obsN:(i+1)*obsN]
			actionAt(act, i, k, a)
			if ended[i] {
				if _, err := e.Reset(env.Seed{}, o); err != nil {
					t.Fatal(err)
				}
				ended[i] = false
				continue
			}
			r, err := e.Step(a, o)
			if err != nil {
				t.Fatal(err)
			}
			rew[i], term[i], trunc[i] = r.Reward, r.Terminated, r.Truncated
			ended[i] = r.Terminated || r.Truncated
		}
		tr.Obs = append(tr.Obs, slices.Clone(obs))
		tr.Rewards, tr.Terminated, tr.Truncated = append(tr.Rewards, rew), append(tr.Terminated, term), append(tr.Truncated, trunc)
		tr.Actions = append(tr.Actions, acts)
	}
	return tr
}

// runVec runs the vector env through the reference's actions and returns its trajectory.
func runVec(t testing.TB, v *vecEnv, actions [][]float32) trajectory {
	t.Helper()
	b := newVecBufs(v)
	if _, err := v.resetAll(nil, b.obs); err != nil {
		t.Fatal(err)
	}
	tr := trajectory{Obs: [][]float32{slices.Clone(b.obs)}}
	for _, a := range actions {
		copy(b.actions, a)
		b.step(t, v)
		term, trunc := make([]bool, len(b.term)), make([]bool, len(b.trun))
		for i := range term {
			term[i], trunc[i] = b.term[i] == 1, b.trun[i] == 1
		}
		tr.Obs = append(tr.Obs, slices.Clone(b.obs))
		tr.Rewards = append(tr.Rewards, slices.Clone(b.rewards))
		tr.Terminated, tr.Truncated = append(tr.Terminated, term), append(tr.Truncated, trunc)
		tr.Actions = append(tr.Actions, slices.Clone(a))
	}
	return tr
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func compareTrajectories(t *testing.T, got, want trajectory) {
	t.Helper()
	for k := range want.Obs {
		if !sameBits(got.Obs[k], want.Obs[k]) {
			t.Fatalf("step %d: obs\n got %v\nwant %v", k, got.Obs[k], want.Obs[k])
		}
	}
	for k := range want.Rewards {
		if !slices.Equal(got.Rewards[k], want.Rewards[k]) || !slices.Equal(got.Terminated[k], want.Terminated[k]) ||
			!slices.Equal(got.Truncated[k], want.Truncated[k]) {
			t.Fatalf("step %d: rewards/flags\n got %v %v %v\nwant %v %v %v", k+1, got.Rewards[k], got.Terminated[k],
				got.Truncated[k], want.Rewards[k], want.Terminated[k], want.Truncated[k])
		}
	}
}

// vecCases are the environments whose trajectories the Python tests replay too
// (python/tests/testdata/vec_env_trajectories.json).
var vecCases = []struct {
	name   string
	config string
	n      int
	seed   uint64
	steps  int
}{
	{"CartPole-v1", ``, 4, 7, 120},
	{"CartPole-v1", `{"max_episode_steps": 5}`, 3, 100, 14},
	{"Pendulum-v1", ``, 2, 1, 30},
	{"Pendulum-v1", `{"max_episode_steps": 40}`, 2, 8, 90},
	{"MountainCar-v0", `{"max_episode_steps": 30}`, 2, 42, 70},
	{"MountainCarContinuous-v0", `{"max_episode_steps": 15}`, 2, 3, 40},
	{"Acrobot-v1", `{"max_episode_steps": 20}`, 2, 9, 45},
}

// TestVecEnvTrajectories: the vector env gives, bit for bit, the trajectories of the same
// environments made from the registry and stepped one by one with next-step autoreset
// (episodes end by termination and by time limits in these runs).
func TestVecEnvTrajectories(t *testing.T) {
	var golden [][]byte
	for _, c := range vecCases {
		t.Run(fmt.Sprintf("%s/n=%d", c.name, c.n), func(t *testing.T) {
			cfg, err := env.ParseConfig(c.config)
			if err != nil {
				t.Fatal(err)
			}
			want := referenceTrajectory(t, c.name, cfg, c.n, c.seed, c.steps)
			v := mustOpenVec(t, c.name, c.config, c.n, c.seed)
			got := runVec(t, v, want.Actions)
			compareTrajectories(t, got, want)
			ends := 0
			for k := range want.Terminated {
				for i := range want.Terminated[k] {
					if want.Terminated[k][i] || want.Truncated[k][i] {
						ends++
					}
				}
			}
			if ends == 0 && c.config != "" {
				t.Errorf("no episode ended in %d steps: the run does not test autoreset", c.steps)
			}
			g, err := json.Marshal(map[string]any{"env": c.name, "config": c.config, "num_envs": c.n, "seed": c.seed,
				"obs_space": json.RawMessage(v.obsJSON), "action_space": json.RawMessage(v.actJSON), "trajectory": bitsOf(want)})
			if err != nil {
				t.Fatal(err)
			}
			golden = append(golden, g)
		})
	}
	path := filepath.Join("..", "python", "tests", "testdata", "vec_env_trajectories.json")
	if t.Failed() {
		return
	}
	b := append(append([]byte("[\n"), bytes.Join(golden, []byte(",\n"))...), "\n]\n"...) // a case a line
	if *updateVecGolden {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./capi -run TestVecEnvTrajectories -update-vec-golden writes it)", err)
	}
	if string(old) != string(b) {
		t.Errorf("%s is out of date: rerun with -update-vec-golden", path)
	}
}

// bitsOf gives float32 observations and actions as their bit patterns and float64 rewards as
// theirs (hexadecimal strings), so the Python tests compare bits, not decimal renderings.
func bitsOf(tr trajectory) map[string]any {
	f32 := func(rows [][]float32) [][]string {
		out := make([][]string, len(rows))
		for k, r := range rows {
			for _, x := range r {
				out[k] = append(out[k], fmt.Sprintf("%08x", math.Float32bits(x)))
			}
		}
		return out
	}
	f64 := func(rows [][]float64) [][]string {
		out := make([][]string, len(rows))
		for k, r := range rows {
			for _, x := range r {
				out[k] = append(out[k], fmt.Sprintf("%016x", math.Float64bits(x)))
			}
		}
		return out
	}
	return map[string]any{"obs_bits": f32(tr.Obs), "action_bits": f32(tr.Actions), "reward_bits": f64(tr.Rewards),
		"terminated": tr.Terminated, "truncated": tr.Truncated}
}

// TestVecEnvAutoreset: next-step autoreset in detail. The step that ends an episode reports
// its last observation and flags; the next step reports the new episode's first observation
// (the environment's stream continued, as gymnasium's reset() without a seed), reward 0 and
// no flags, whatever the action was.
func TestVecEnvAutoreset(t *testing.T) {
	v := mustOpenVec(t, "CartPole-v1", `{"max_episode_steps": 3}`, 2, 5)
	b := newVecBufs(v)
	if _, err := v.resetAll(nil, b.obs); err != nil {
		t.Fatal(err)
	}
	twin, _ := env.Make("CartPole-v1", env.Config{"max_episode_steps": 3})
	e := twin.Env()
	obs := make([]float32, 4)
	e.Reset(env.WithSeed(6), obs) // sub-environment 1: seed 5+1
	for k := 1; k <= 3; k++ {
		b.actions[0], b.actions[1] = 1, 0
		b.step(t, v)
		r, _ := e.Step([]float32{0}, obs)
		if !sameBits(b.obs[4:], obs) || b.rewards[1] != r.Reward || (b.trun[1] == 1) != r.Truncated {
			t.Fatalf("step %d: got %v %v %v, want %v %+v", k, b.obs[4:], b.rewards[1], b.trun[1], obs, r)
		}
	}
	if b.trun[0] != 1 || b.trun[1] != 1 || b.term[0] != 0 {
		t.Fatalf("step 3: truncated %v terminated %v, want both truncated", b.trun, b.term)
	}
	b.actions[0], b.actions[1] = 0, 1
	b.step(t, v)
	e.Reset(env.Seed{}, obs)
	if !sameBits(b.obs[4:], obs) || b.rewards[0] != 0 || b.rewards[1] != 0 || b.term[1] != 0 || b.trun[1] != 0 || b.trun[0] != 0 {
		t.Fatalf("autoreset step: obs %v rewards %v flags %v %v; want obs %v, 0 and no flags", b.obs[4:], b.rewards, b.term, b.trun, obs)
	}
	b.step(t, v)
	e.Step([]float32{1}, obs)
	if !sameBits(b.obs[4:], obs) || b.rewards[1] != 1 {
		t.Fatalf("after the autoreset: %v %v, want %v 1", b.obs[4:], b.rewards[1], obs)
	}
	// A reset in the middle clears pending autoresets.
	b.step(t, v)
	b.step(t, v) // truncated (3 steps)
	if b.trun[1] != 1 {
		t.Fatal("episode 2 did not end at step 3")
	}
	if _, err := v.resetAll([]uint64{6}, b.obs); err != nil {
		t.Fatal(err)
	}
	e.Reset(env.WithSeed(7), obs)
	if !sameBits(b.obs[4:], obs) {
		t.Fatalf("reset with seed 6: sub-environment 1 %v, want seed 7's %v", b.obs[4:], obs)
	}
	b.step(t, v)
	if b.rewards[0] != 1 || b.rewards[1] != 1 {
		t.Fatalf("first step after reset: rewards %v, want stepping (1, 1), not an autoreset", b.rewards)
	}
}

// TestVecEnvSeeds: one seed seeds sub-environment i with seed+i, num_envs seeds one each, no
// seed continues the streams (the first reset: the open seed + i).
func TestVecEnvSeeds(t *testing.T) {
	first := func(seed uint64) []float32 {
		raw, _ := env.Make("CartPole-v1", nil)
		o := make([]float32, 4)
		raw.Env().Reset(env.WithSeed(seed), o)
		return o
	}
	v := mustOpenVec(t, "CartPole-v1", "", 3, 10)
	b := newVecBufs(v)
	check := func(what string, seeds ...uint64) {
		t.Helper()
		for i, s := range seeds {
			if !sameBits(b.obs[4*i:4*i+4], first(s)) {
				t.Errorf("%s: sub-environment %d: %v, want seed %d's %v", what, i, b.obs[4*i:4*i+4], s, first(s))
			}
		}
	}
	v.resetAll(nil, b.obs)
	check("first reset", 10, 11, 12)
	v.resetAll([]uint64{3}, b.obs)
	check("seed 3", 3, 4, 5)
	v.resetAll([]uint64{9, 1, 9}, b.obs)
	check("seeds 9 1 9", 9, 1, 9)
	before := slices.Clone(b.obs)
	v.resetAll(nil, b.obs)
	if sameBits(before, b.obs) {
		t.Error("reset without seeds repeated the last episode's start: the streams did not continue")
	}
	if _, err := v.resetAll([]uint64{1, 2}, b.obs); statusOf(err) != statusInvalidArgument {
		t.Errorf("2 seeds for 3 envs: %v (status %d), want invalid argument", err, statusOf(err))
	}
}

// TestVecEnvBadActions: a bad action row is refused before anything steps; the env goes on
// as if the call had not happened.
func TestVecEnvBadActions(t *testing.T) {
	for _, c := range []struct {
		name string
		bad  float32
	}{{"CartPole-v1", 2}, {"CartPole-v1", -1}, {"CartPole-v1", 0.5}, {"CartPole-v1", float32(math.NaN())},
		{"Pendulum-v1", float32(math.NaN())}, {"MountainCar-v0", 3}} {
		t.Run(fmt.Sprintf("%s/%v", c.name, c.bad), func(t *testing.T) {
			v, w := mustOpenVec(t, c.name, "", 3, 1), mustOpenVec(t, c.name, "", 3, 1)
			bv, bw := newVecBufs(v), newVecBufs(w)
			v.resetAll(nil, bv.obs)
			w.resetAll(nil, bw.obs)
			bv.actions[2] = c.bad
			obsBefore := slices.Clone(bv.obs)
			_, err := v.step(bv.actions, bv.obs, bv.rewards, bv.term, bv.trun)
			if statusOf(err) != statusInvalidArgument || !strings.Contains(err.Error(), "actions[2]") {
				t.Fatalf("got %v (status %d), want invalid argument naming actions[2]", err, statusOf(err))
			}
			if !sameBits(obsBefore, bv.obs) {
				t.Fatal("a refused step wrote observations")
			}
			bv.actions[2] = 0
			for range 5 {
				bv.step(t, v)
				bw.step(t, w)
				if !sameBits(bv.obs, bw.obs) {
					t.Fatalf("after the refused step: %v, an untouched twin %v", bv.obs, bw.obs)
				}
			}
		})
	}
}

func TestVecEnvOpenErrors(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		n         int64
		status    int
		text      string
	}{
		{"NoSuchEnv-v0", "", 1, statusNotFound, "unknown environment"},
		{"CartPole-v1", "", 0, statusInvalidArgument, "num_envs = 0"},
		{"CartPole-v1", "", maxVecEnvs + 1, statusInvalidArgument, "num_envs"},
		{"CartPole-v1", `{"max_episode_steps": -1}`, 1, statusInvalidArgument, "max_episode_steps"},
		{"CartPole-v1", `{"no_such_key": 1}`, 1, statusInvalidArgument, "no_such_key"},
		{"CartPole-v1", `max_episode_steps=3`, 1, statusInvalidArgument, "JSON object"},
		{"CartPole-v1", `{"max_episode_steps": `, 1, statusInvalidArgument, "JSON"},
		{"MultiAgentCartPole", "", 1, statusInvalidArgument, "single-agent"},
	} {
		_, err := openVecEnv(c.name, []byte(c.cfg), c.n, 0)
		if statusOf(err) != c.status || err == nil || !strings.Contains(err.Error(), c.text) {
			t.Errorf("open(%s, %q, %d): %v (status %d), want status %d mentioning %q", c.name, c.cfg, c.n, err, statusOf(err), c.status, c.text)
		}
	}
	v := mustOpenVec(t, "Pendulum-v1", " ", 2, 0)
	b := newVecBufs(v)
	if _, err := v.step(b.actions, b.obs, b.rewards, b.term, b.trun); statusOf(err) != statusState || !errors.Is(err, errVecNotReset) {
		t.Errorf("step before reset: %v, want %v", err, errVecNotReset)
	}
	if s, _ := v.spaceJSON(1); string(s) != `{"type":"Box","low":[-2],"high":[2],"shape":[1],"dtype":"float32"}` {
		if sp, err := spaces.Unmarshal(s); err != nil || !spaces.Equal(sp, v.actSpace) {
			t.Errorf("action space JSON %s does not read back (%v)", s, err)
		}
	}
	if _, err := v.spaceJSON(2); statusOf(err) != statusInvalidArgument {
		t.Errorf("space 2: %v", err)
	}
	v.close()
	if _, err := v.resetAll(nil, b.obs); statusOf(err) != statusState {
		t.Errorf("reset after close: %v, want a state error", err)
	}
}

// infoEnv reports an info on some steps and panics on request; its episodes last 2 steps.
type infoEnv struct {
	steps int
	panic bool
}

func (e *infoEnv) ObservationSpace() spaces.Space { return spaces.NewBox(-10, 10, 1) }
func (e *infoEnv) ActionSpace() spaces.Space      { return &spaces.Discrete{N: 3} }
func (e *infoEnv) Reset(seed env.Seed, obs []float32) (env.Info, error) {
	e.steps = 0
	obs[0] = 0
	return env.Info{"reset": true}, nil
}
func (e *infoEnv) Step(a []float32, obs []float32) (env.StepResult, error) {
	if a[0] == 2 {
		panic("infoEnv: action 2")
	}
	e.steps++
	obs[0] = float32(e.steps)
	r := env.StepResult{Reward: float64(a[0]), Terminated: e.steps == 2}
	if a[0] == 1 {
		r.Info = env.Info{"pushed": e.steps}
	}
	return r, nil
}

func init() {
	env.Register("capi-test-InfoEnv", func(env.Config) (any, error) { return &infoEnv{}, nil })
}

// TestVecEnvInfosAndFaults: infos in gymnasium's vector layout, the reset's on the autoreset
// step; a sub-environment that panics fails the call with an internal error naming it, the
// others step, and it is reset on the next step.
func TestVecEnvInfosAndFaults(t *testing.T) {
	v := mustOpenVec(t, "capi-test-InfoEnv", "", 3, 0)
	b := newVecBufs(v)
	infos := func() string {
		var s string
		v.withInfos(func(b []byte) error { s = string(b); return nil })
		return s
	}
	if n, err := v.resetAll(nil, b.obs); err != nil || n == 0 || infos() != `{"_reset":[true,true,true],"reset":[true,true,true]}` {
		t.Fatalf("reset: %d %v %s", n, err, infos())
	}
	copy(b.actions, []float32{1, 0, 0})
	if n, err := v.step(b.actions, b.obs, b.rewards, b.term, b.trun); err != nil || n != len(infos()) ||
		infos() != `{"_pushed":[true,false,false],"pushed":[1,null,null]}` {
		t.Fatalf("step: %d %v %s", n, err, infos())
	}
	copy(b.actions, []float32{0, 0, 2})
	_, err := v.step(b.actions, b.obs, b.rewards, b.term, b.trun)
	if statusOf(err) != statusInternal || !strings.Contains(err.Error(), "sub-environment 2") {
		t.Fatalf("panicking sub-environment: %v (status %d)", err, statusOf(err))
	}
	if b.obs[0] != 2 || b.obs[1] != 2 || b.term[0] != 1 || b.term[1] != 1 || b.term[2] != 0 || b.rewards[2] != 0 {
		t.Fatalf("after the fault: obs %v terminated %v rewards %v", b.obs, b.term, b.rewards)
	}
	copy(b.actions, []float32{0, 0, 0})
	if n, err := v.step(b.actions, b.obs, b.rewards, b.term, b.trun); err != nil || n == 0 ||
		!slices.Equal(b.obs, []float32{0, 0, 0}) || infos() != `{"_reset":[true,true,true],"reset":[true,true,true]}` {
		t.Fatalf("autoreset of all three: %v %v %s", err, b.obs, infos())
	}
	if n, err := v.step(b.actions, b.obs, b.rewards, b.term, b.trun); err != nil || n != 0 || infos() != "" {
		t.Fatalf("a step without infos: %d %v %q", n, err, infos())
	}
}

// BenchmarkVecEnvStep: one step of 256 or 4096 CartPoles with random actions through the
// C API's Go side; it must allocate nothing.
func BenchmarkVecEnvStep(b *testing.B) {
	for _, n := range []int{256, 4096} {
		b.Run(fmt.Sprintf("envs=%d", n), func(b *testing.B) {
			v := mustOpenVec(b, "CartPole-v1", "", n, 0)
			bufs := newVecBufs(v)
			if _, err := v.resetAll(nil, bufs.obs); err != nil {
				b.Fatal(err)
			}
			for i := range bufs.actions {
				bufs.actions[i] = float32(i * 7 % 2)
			}
			h := table.add(kindVecEnv, v)
			defer table.remove(h, kindVecEnv)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				x, err := table.get(h, kindVecEnv)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := x.(*vecEnv).step(bufs.actions, bufs.obs, bufs.rewards, bufs.term, bufs.trun); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
