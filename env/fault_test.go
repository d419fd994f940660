package env

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// faultKinds are the adapters under fault tests: each makes a BaseEnv of 3 sub-environments
// where sub-environment 1 is configured by bad and the others by good.
var faultKinds = []struct {
	name string
	make func(good, bad RandomEnvConfig, opts BaseEnvOptions) (BaseEnv, error)
}{
	{"Env", func(good, bad RandomEnvConfig, opts BaseEnvOptions) (BaseEnv, error) {
		return NewBaseEnv(func(i int) (Env, error) { return NewRandomEnv(pick(i, good, bad)) }, opts)
	}},
	{"MultiAgentEnv", func(good, bad RandomEnvConfig, opts BaseEnvOptions) (BaseEnv, error) {
		return NewMultiAgentBaseEnv(func(i int) (MultiAgentEnv, error) {
			return NewRandomMultiAgentEnv(RandomMultiAgentEnvConfig{RandomEnvConfig: pick(i, good, bad), NumAgents: 2})
		}, opts)
	}},
	{"VectorEnv", func(good, bad RandomEnvConfig, opts BaseEnvOptions) (BaseEnv, error) {
		v, err := NewVectorEnv(func(i int) (Env, error) { return NewRandomEnv(pick(i, good, bad)) }, 3)
		if err != nil {
			return nil, err
		}
		return NewVectorBaseEnv(v, opts)
	}},
	{"Remote", func(good, bad RandomEnvConfig, opts BaseEnvOptions) (BaseEnv, error) {
		return NewRemoteVectorEnv(func(i int) (any, error) { return NewRandomEnv(pick(i, good, bad)) },
			RemoteVectorEnvOptions{BaseEnvOptions: opts})
	}},
}

func pick(i int, good, bad RandomEnvConfig) RandomEnvConfig {
	if i == 1 {
		return bad
	}
	return good
}

var faultCases = []struct {
	name  string
	bad   RandomEnvConfig
	op    string
	panic bool
}{
	{"step error", RandomEnvConfig{FailAtStep: 5}, "step", false},
	{"step panic", RandomEnvConfig{FailAtStep: 5, FailByPanic: true}, "step", true},
	{"reset error", RandomEnvConfig{FailAtReset: 2}, "reset", false},
	{"reset panic", RandomEnvConfig{FailAtReset: 2, FailByPanic: true}, "reset", true},
	{"random step errors", RandomEnvConfig{PError: 0.2, Seed: 5}, "step", false},
	{"random step panics", RandomEnvConfig{PPanic: 0.2, Seed: 5}, "step", true},
}

func checkFault(t *testing.T, err error, op string, isPanic bool) {
	t.Helper()
	var se *SubEnvError
	if !errors.As(err, &se) || se.Env != 1 || se.Op != op {
		t.Fatalf("fault %v: want a *SubEnvError for env 1 in %s", err, op)
	}
	if !strings.Contains(err.Error(), "sub-environment 1") || !errors.Is(err, ErrInjected) {
		t.Fatalf("fault %q does not name env 1 or wrap the cause", err)
	}
	var pe *PanicError
	if isPanic != errors.As(err, &pe) || isPanic != strings.Contains(err.Error(), "panic") {
		t.Fatalf("fault %q: panic=%v expected", err, isPanic)
	}
}

func TestFaultsRestart(t *testing.T) {
	good := RandomEnvConfig{MinEpisodeLen: 1, MaxEpisodeLen: 4, RewardIsStep: true}
	for _, k := range faultKinds {
		for _, c := range faultCases {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				before := runtime.NumGoroutine()
				bad := c.bad
				bad.EpisodeLen, bad.RewardIsStep = 3, true
				b, err := k.make(good, bad, BaseEnvOptions{NumEnvs: 3, Seed: WithSeed(1), RestartFailedSubEnvironments: true})
				if err != nil {
					t.Fatal(err)
				}
				d := newDriver(t, b, 3)
				for i := 0; i < 20000 && (i < 200 || d.perEnv[0] < 100 || d.perEnv[1] < 10 || d.perEnv[2] < 100); i++ {
					d.round()
				}
				d.drain()
				if d.faults == 0 {
					t.Fatal("no fault reported")
				}
				for _, e := range d.faultErrs {
					checkFault(t, e, c.op, c.panic)
				}
				if d.perEnv[0] < 100 || d.perEnv[2] < 100 || d.perEnv[1] == 0 {
					t.Fatalf("sampling did not go on: steps per env %v", d.perEnv)
				}
				if err := b.Stop(); err != nil {
					t.Fatal(err)
				}
				waitGoroutines(t, before, runtime.NumGoroutine)
			})
		}
	}
}

func TestFaultsNoRestart(t *testing.T) {
	good := RandomEnvConfig{MinEpisodeLen: 1, MaxEpisodeLen: 4, RewardIsStep: true}
	for _, k := range faultKinds {
		for _, c := range faultCases {
			t.Run(k.name+"/"+c.name, func(t *testing.T) {
				bad := c.bad
				bad.EpisodeLen, bad.RewardIsStep = 3, true
				b, err := k.make(good, bad, BaseEnvOptions{NumEnvs: 3})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Stop()
				d := newDriver(t, b, 3)
				var ferr error
				for range 20000 {
					if ferr = d.roundErr(); ferr != nil {
						break
					}
				}
				if ferr == nil {
					t.Fatal("no failure surfaced")
				}
				checkFault(t, ferr, c.op, c.panic)
				if d.faults != 0 {
					t.Fatalf("a fault was reported as restarted: %v", d.faultErrs)
				}
				// The BaseEnv is still usable: the failed env needs TryReset. (The round
				// stopped before SendActions: a RemoteVectorEnv with nothing left in flight
				// says so.)
				var batch Batch
				if err := b.Poll(&batch); err != nil && !errors.Is(err, ErrNothingInFlight) {
					t.Fatalf("Poll after the failure: %v", err)
				}
				if err := b.SendActions([]Action{{Env: 1, Agent: DefaultAgentID, Action: []float32{0}}}); err == nil {
					t.Fatal("acting on the failed env succeeded")
				}
			})
		}
	}
}

func TestRestartSeeds(t *testing.T) {
	// After its k-th restart, sub-environment i is seeded with Seed+i+k*NumEnvs.
	b, err := NewBaseEnv(func(i int) (Env, error) {
		return NewRandomEnv(RandomEnvConfig{EpisodeLen: 10, FailAtStep: map[bool]int{true: 1}[i == 1]})
	}, BaseEnvOptions{NumEnvs: 2, Seed: WithSeed(100), RestartFailedSubEnvironments: true})
	if err != nil {
		t.Fatal(err)
	}
	var batch Batch
	b.Poll(&batch)
	b.SendActions([]Action{{Env: 0, Agent: DefaultAgentID, Action: []float32{0}}, {Env: 1, Agent: DefaultAgentID, Action: []float32{0}}})
	batch.Clear()
	b.Poll(&batch)
	if len(batch.Envs) != 2 || batch.Envs[0].Err == nil || batch.Envs[0].Env != 1 {
		t.Fatalf("want the fault of env 1 first: %+v", batch.Envs)
	}
	batch.Clear()
	if _, err := b.TryReset(1, Seed{}, &batch); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 4)
	e, _ := NewRandomEnv(RandomEnvConfig{})
	e.Reset(WithSeed(100+1+1*2), want)
	if got := batch.Agents[0].Obs; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restarted env seeded differently: %v, want %v", got, want)
	}
}

func TestMakerFailures(t *testing.T) {
	if _, err := NewBaseEnv(func(i int) (Env, error) {
		if i == 2 {
			return nil, errors.New("boom")
		}
		return NewRandomEnv(RandomEnvConfig{})
	}, BaseEnvOptions{NumEnvs: 3}); err == nil || !strings.Contains(err.Error(), "sub-environment 2") {
		t.Fatalf("maker error: %v", err)
	}
	if _, err := NewRemoteVectorEnv(func(i int) (any, error) { panic("no") }, RemoteVectorEnvOptions{}); err == nil || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("maker panic: %v", err)
	}
	// A restart whose maker fails is an error naming the env.
	calls := 0
	b, _ := NewBaseEnv(func(i int) (Env, error) {
		calls++
		if calls > 1 {
			return nil, errors.New("no more")
		}
		return NewRandomEnv(RandomEnvConfig{FailAtStep: 1})
	}, BaseEnvOptions{RestartFailedSubEnvironments: true})
	var batch Batch
	b.Poll(&batch)
	err := b.SendActions([]Action{{Agent: DefaultAgentID, Action: []float32{0}}})
	var se *SubEnvError
	if !errors.As(err, &se) || se.Op != "restart" || !strings.Contains(err.Error(), "no more") {
		t.Fatalf("failed restart: %v", err)
	}
}
