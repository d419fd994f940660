package env

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestRemoteVectorEnvSlowSubEnv(t *testing.T) {
	before := runtime.NumGoroutine()
	const fast, slow = time.Millisecond, 50 * time.Millisecond
	cfg := RandomEnvConfig{MinEpisodeLen: 1, MaxEpisodeLen: 20, RewardIsStep: true}
	r, err := NewRemoteVectorEnv(func(i int) (any, error) {
		c := cfg
		c.StepDelay = fast
		if i == 0 {
			c.StepDelay = slow
		}
		return NewRandomEnv(c)
	}, RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 4, Seed: WithSeed(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.NumGoroutine() < before+4 {
		t.Fatalf("goroutines: %d, want at least %d", runtime.NumGoroutine(), before+4)
	}
	d := newDriver(t, r, 4)
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		d.round()
	}
	d.drain()
	subs := r.SubEnvironments()
	if got := envSteps(t, subs); got != int64(d.steps) {
		t.Fatalf("env side %d steps, poll side %d", got, d.steps)
	}
	for i, s := range subs {
		if got := s.(*RandomEnv).Steps(); got != int64(d.perEnv[i]) {
			t.Fatalf("env %d: env side %d steps, poll side %d", i, got, d.perEnv[i])
		}
	}
	t.Logf("steps per env %v, partial polls %d, async resets %d", d.perEnv, d.partial, d.asyncs)
	if d.partial == 0 {
		t.Fatal("no partial batch with BatchWait 0")
	}
	if d.asyncs == 0 || d.episodes == 0 {
		t.Fatalf("async resets %d, episodes %d", d.asyncs, d.episodes)
	}
	for i := 1; i < 4; i++ {
		if d.perEnv[i] < 5*d.perEnv[0] {
			t.Fatalf("fast env %d made %d steps, the slow one %d: the slow env stalls the fast ones", i, d.perEnv[i], d.perEnv[0])
		}
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := r.Poll(&d.batch); !errors.Is(err, ErrStopped) {
		t.Fatalf("Poll after Stop: %v", err)
	}
	waitGoroutines(t, before, runtime.NumGoroutine)
}

func TestRemoteVectorEnvWaitAll(t *testing.T) {
	for _, wait := range []time.Duration{WaitAll, 5 * time.Second} {
		r, err := NewRemoteVectorEnv(func(i int) (any, error) {
			return NewRandomEnv(RandomEnvConfig{EpisodeLen: 7, RewardIsStep: true, StepDelay: time.Duration(i) * time.Millisecond})
		}, RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 3}, BatchWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		d := newDriver(t, r, 3)
		for range 50 {
			d.round()
			if len(d.batch.Envs) != 3 {
				t.Fatalf("BatchWait %v: Poll returned %d envs, want all 3", wait, len(d.batch.Envs))
			}
		}
		d.drain()
		if got := envSteps(t, r.SubEnvironments()); got != int64(d.steps) {
			t.Fatalf("env side %d steps, poll side %d", got, d.steps)
		}
		r.Stop()
	}
}

// TestRemoteVectorEnvPollOrder: a Poll reports its sub-environments in index order, whatever
// order their goroutines finish in (here the last finishes first), so that WaitAll gives the
// same batches in every run.
func TestRemoteVectorEnvPollOrder(t *testing.T) {
	const n = 4
	r, err := NewRemoteVectorEnv(func(i int) (any, error) {
		return NewRandomEnv(RandomEnvConfig{EpisodeLen: 5, RewardIsStep: true, StepDelay: time.Duration(n-i) * 2 * time.Millisecond})
	}, RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: n}, BatchWait: WaitAll})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	d := newDriver(t, r, n)
	for range 20 {
		d.round()
		for k := 1; k < len(d.batch.Envs); k++ {
			if a, b := d.batch.Envs[k-1].Env, d.batch.Envs[k].Env; a >= b {
				t.Fatalf("Poll reported sub-environment %d before %d: want index order", a, b)
			}
		}
	}
}

func TestRemoteVectorEnvProtocol(t *testing.T) {
	before := runtime.NumGoroutine()
	r, err := NewRemoteVectorEnv(func(i int) (any, error) {
		if i == 1 {
			return NewRandomMultiAgentEnv(RandomMultiAgentEnvConfig{NumAgents: 2, RandomEnvConfig: RandomEnvConfig{EpisodeLen: 3, StepDelay: 100 * time.Millisecond}})
		}
		return NewRandomEnv(RandomEnvConfig{EpisodeLen: 3})
	}, RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 2}, BatchWait: WaitAll})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		r.Stop()
		waitGoroutines(t, before, runtime.NumGoroutine)
	}()
	var batch Batch
	if err := r.Poll(&batch); err != nil || len(batch.Agents) != 3 {
		t.Fatalf("first Poll: %v %+v", err, batch.Agents)
	}
	// Step only env 1 (slow): that is a missing action for env 0.
	if err := r.SendActions([]Action{{Env: 1, Agent: "agent0", Action: []float32{0}}, {Env: 1, Agent: "agent1", Action: []float32{1}}}); !errors.Is(err, ErrBadActions) {
		t.Fatalf("missing env 0: %v", err)
	}
	acts := []Action{{Env: 0, Agent: DefaultAgentID, Action: []float32{1}}, {Env: 1, Agent: "agent0", Action: []float32{0}}, {Env: 1, Agent: "agent1", Action: []float32{1}}}
	if err := r.SendActions(acts); err != nil {
		t.Fatal(err)
	}
	if err := r.SendActions(acts); !errors.Is(err, ErrBadActions) || !strings.Contains(err.Error(), "not returned by the last Poll") {
		t.Fatalf("actions for envs in flight: %v", err)
	}
	if _, err := r.TryReset(1, Seed{}, &batch); err == nil {
		t.Fatal("TryReset of an env in flight succeeded")
	}
	if _, err := r.TryRender(1); err == nil {
		t.Fatal("TryRender of an env in flight succeeded")
	}
	batch.Clear()
	if err := r.Poll(&batch); err != nil || len(batch.Agents) != 3 {
		t.Fatalf("Poll: %v %+v", err, batch.Agents)
	}
	if s, err := r.TryRender(1); err != nil || !strings.HasPrefix(s.(string), "RandomMultiAgentEnv") {
		t.Fatalf("TryRender: %v %v", s, err)
	}
	// Async reset of env 0 in the middle of its episode.
	batch.Clear()
	if async, err := r.TryReset(0, WithSeed(3), &batch); err != nil || !async || len(batch.Agents) != 0 {
		t.Fatalf("TryReset: %v %v %+v", async, err, batch)
	}
	if err := r.SendActions(acts[1:]); err != nil {
		t.Fatal(err)
	}
	batch.Clear()
	if err := r.Poll(&batch); err != nil {
		t.Fatal(err)
	}
	var reset bool
	for _, st := range batch.Envs {
		if st.Env == 0 {
			reset = st.Reset
		}
	}
	if !reset || len(batch.Agents) != 3 {
		t.Fatalf("after async reset: %+v %+v", batch.Envs, batch.Agents)
	}
	// Nothing in flight: Poll fails at once with nothing (RLlib's ray.wait over no pending
	// results raises), instead of returning nothing forever.
	batch.Clear()
	start := time.Now()
	if err := r.Poll(&batch); !errors.Is(err, ErrNothingInFlight) || len(batch.Envs) != 0 || time.Since(start) > 50*time.Millisecond {
		t.Fatalf("idle Poll: %v %+v %v", err, batch, time.Since(start))
	}
}
