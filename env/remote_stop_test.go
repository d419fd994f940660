package env

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// gateEnv is a RandomEnv whose steps block while its gate is closed (a hung simulator), and
// which counts its Close calls.
type gateEnv struct {
	*RandomEnv
	gate   chan struct{} // nil: never blocks
	closed atomic.Int32
}

func (e *gateEnv) Step(action, obs []float32) (StepResult, error) {
	if e.gate != nil {
		<-e.gate
	}
	return e.RandomEnv.Step(action, obs)
}

func (e *gateEnv) Close() error {
	e.closed.Add(1)
	return nil
}

// newGateEnvs makes n gateEnvs; those listed in hung block in Step until release is closed.
func newGateEnvs(t *testing.T, n int, release chan struct{}, hung ...int) []*gateEnv {
	t.Helper()
	envs := make([]*gateEnv, n)
	for i := range envs {
		r, err := NewRandomEnv(RandomEnvConfig{EpisodeLen: 1000})
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = &gateEnv{RandomEnv: r}
	}
	for _, i := range hung {
		envs[i].gate = release
	}
	return envs
}

// actionsFor returns action 0 for every agent of batch that is not done.
func actionsFor(batch *Batch) []Action {
	var acts []Action
	for _, a := range batch.Agents {
		if !a.Terminated && !a.Truncated {
			acts = append(acts, Action{Env: a.Env, Agent: a.Agent, Action: []float32{0}})
		}
	}
	return acts
}

// TestRemoteVectorEnvStopDoesNotBlockOnHungSubEnv steps a sub-environment whose Step never
// returns: Stop must return after StopWait, name it, close the others, and leave the hung
// one to its goroutine, which closes it and ends once its Step returns.
func TestRemoteVectorEnvStopDoesNotBlockOnHungSubEnv(t *testing.T) {
	before := runtime.NumGoroutine()
	release := make(chan struct{})
	envs := newGateEnvs(t, 3, release, 1)
	const stopWait = 50 * time.Millisecond
	r, err := NewRemoteVectorEnv(func(i int) (any, error) { return envs[i], nil },
		RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 3}, BatchWait: WaitAll, StopWait: stopWait})
	if err != nil {
		t.Fatal(err)
	}
	var batch Batch
	if err := r.Poll(&batch); err != nil || len(batch.Agents) != 3 {
		t.Fatalf("first Poll: %v, %d agents", err, len(batch.Agents))
	}
	if err := r.SendActions(actionsFor(&batch)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = r.Stop()
	took := time.Since(start)
	var te *StopTimeoutError
	if !errors.As(err, &te) || len(te.Envs) != 1 || te.Envs[0] != 1 || te.Wait != stopWait {
		t.Fatalf("Stop with sub-environment 1 hung: %v, want a *StopTimeoutError naming it", err)
	}
	if took < stopWait || took > stopWait+2*time.Second {
		t.Fatalf("Stop took %v with StopWait %v", took, stopWait)
	}
	if got := r.Running(); got != 1 {
		t.Fatalf("Running after Stop: %d, want the hung one", got)
	}
	if envs[0].closed.Load() != 1 || envs[2].closed.Load() != 1 || envs[1].closed.Load() != 0 {
		t.Fatalf("closed after Stop: %d %d %d, want 1 0 1", envs[0].closed.Load(), envs[1].closed.Load(), envs[2].closed.Load())
	}
	if subs := r.SubEnvironments(); subs[1] != nil || subs[0] == nil {
		t.Fatalf("SubEnvironments after Stop hands out the hung one: %v", subs)
	}
	if _, err := r.TryRender(1); err == nil {
		t.Fatal("TryRender of the hung sub-environment succeeded")
	}
	if err := r.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	close(release) // the hung Step returns: its goroutine closes the env and ends
	deadline := time.Now().Add(5 * time.Second)
	for r.Running() > 0 || envs[1].closed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the hung Step returned: Running %d, closed %d", r.Running(), envs[1].closed.Load())
		}
		time.Sleep(time.Millisecond)
	}
	waitGoroutines(t, before, runtime.NumGoroutine)
}

// TestRemoteVectorEnvStopWaitsForStepsInFlight: within StopWait, Stop waits for the steps in
// flight and returns nil with every goroutine ended; a negative StopWait does not wait.
func TestRemoteVectorEnvStopWaitsForStepsInFlight(t *testing.T) {
	for _, tc := range []struct {
		stopWait time.Duration
		hung     bool // the step is still running when Stop returns
	}{{0, false}, {-1, true}} {
		before := runtime.NumGoroutine()
		release := make(chan struct{})
		envs := newGateEnvs(t, 2, release, 0)
		r, err := NewRemoteVectorEnv(func(i int) (any, error) { return envs[i], nil },
			RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 2}, BatchWait: WaitAll, StopWait: tc.stopWait})
		if err != nil {
			t.Fatal(err)
		}
		var batch Batch
		if err := r.Poll(&batch); err != nil {
			t.Fatal(err)
		}
		if err := r.SendActions(actionsFor(&batch)); err != nil {
			t.Fatal(err)
		}
		for len(r.done) == 0 { // sub-environment 1's result (0 waits for its gate), not polled
			time.Sleep(time.Millisecond)
		}
		time.AfterFunc(20*time.Millisecond, func() { close(release) })
		err = r.Stop()
		var te *StopTimeoutError
		if got := errors.As(err, &te); got != tc.hung || got && (len(te.Envs) != 1 || te.Envs[0] != 0) {
			t.Fatalf("StopWait %v: Stop returned %v, want the stepping sub-environment 0 named: %v", tc.stopWait, err, tc.hung)
		}
		if envs[1].closed.Load() != 1 {
			t.Fatalf("StopWait %v: the idle sub-environment 1 was not closed by Stop", tc.stopWait)
		}
		if !tc.hung && (r.Running() != 0 || envs[0].closed.Load() != 1) {
			t.Fatalf("StopWait %v: Running %d, closed %d after Stop", tc.stopWait, r.Running(), envs[0].closed.Load())
		}
		// The hung step's goroutine closes its sub-environment once the step returns; the
		// goroutine count alone can reach its old value first (other goroutines end too).
		deadline := time.Now().Add(5 * time.Second)
		for r.Running() > 0 || envs[0].closed.Load() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("StopWait %v: Running %d, closed %d after the step returned", tc.stopWait, r.Running(), envs[0].closed.Load())
			}
			time.Sleep(time.Millisecond)
		}
		waitGoroutines(t, before, runtime.NumGoroutine)
		if envs[0].closed.Load() != 1 || envs[1].closed.Load() != 1 {
			t.Fatalf("StopWait %v: closed %d %d, want each once", tc.stopWait, envs[0].closed.Load(), envs[1].closed.Load())
		}
	}
}

// TestRemoteVectorEnvPollAfterSkippedActions is what a runner whose inference failed does:
// Poll, no SendActions, Poll again. The second Poll must fail with ErrNothingInFlight instead
// of returning nothing forever, and Stop must release every sub-environment's goroutine.
func TestRemoteVectorEnvPollAfterSkippedActions(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Millisecond, WaitAll} {
		before := runtime.NumGoroutine()
		envs := newGateEnvs(t, 4, nil)
		r, err := NewRemoteVectorEnv(func(i int) (any, error) { return envs[i], nil },
			RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 4}, BatchWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		var batch Batch
		for polled := 0; polled < 4; {
			batch.Clear()
			if err := r.Poll(&batch); err != nil {
				t.Fatal(err)
			}
			polled += len(batch.Envs)
		}
		start := time.Now()
		err = r.Poll(&batch)
		if !errors.Is(err, ErrNothingInFlight) || time.Since(start) > time.Second {
			t.Fatalf("BatchWait %v: Poll with every sub-environment waiting for actions: %v after %v", wait, err, time.Since(start))
		}
		t.Log(err)
		if err := r.Stop(); err != nil {
			t.Fatalf("BatchWait %v: Stop: %v", wait, err)
		}
		if r.Running() != 0 {
			t.Fatalf("BatchWait %v: Running %d after Stop", wait, r.Running())
		}
		waitGoroutines(t, before, runtime.NumGoroutine)
	}
}
