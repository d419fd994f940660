package env

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/onnxrl/sampler/spaces"
)

// driver runs the poll / send / reset protocol over a BaseEnv like a sampler would, with
// random Discrete(2) actions, and checks what it sees against RandomEnv's RewardIsStep
// rewards: the first observation of an episode (or of an agent) has reward 0, each later
// one the agent's step number, so a lost or repeated step shows as a gap or a repeat.
type driver struct {
	t         testing.TB
	b         BaseEnv
	batch     Batch
	rbatch    Batch
	actions   []Action
	rng       *rand.Rand
	last      map[int]map[AgentID]float64 // per env: agent -> last reward this episode
	running   map[int]bool                // env inside an episode
	gone      map[int]map[AgentID]bool    // agents that left this episode
	steps     int                         // agent steps seen (observations after an action)
	perEnv    map[int]int                 // agent steps per env
	episodes  int                         // episodes ended (terminated or truncated)
	resets    int                         // Reset statuses seen
	faults    int                         // EnvStatus.Err seen
	faultErrs []error
	partial   int // polls that returned fewer envs than the BaseEnv has
	numEnvs   int
	asyncs    int
}

func newDriver(t testing.TB, b BaseEnv, numEnvs int) *driver {
	return &driver{t: t, b: b, rng: rand.New(rand.NewPCG(1, 2)), numEnvs: numEnvs,
		last: map[int]map[AgentID]float64{}, running: map[int]bool{}, gone: map[int]map[AgentID]bool{}, perEnv: map[int]int{}}
}

// check verifies the entries of batch and returns the envs that ended.
func (d *driver) check(batch *Batch) (ended []int) {
	d.t.Helper()
	for _, st := range batch.Envs {
		switch {
		case st.Err != nil:
			d.faults++
			d.faultErrs = append(d.faultErrs, st.Err)
			d.running[st.Env] = false
			ended = append(ended, st.Env)
		case st.Reset:
			d.resets++
			d.running[st.Env] = true
			d.last[st.Env] = map[AgentID]float64{}
			d.gone[st.Env] = map[AgentID]bool{}
		}
	}
	for _, a := range batch.Agents {
		if !d.running[a.Env] {
			d.t.Fatalf("env %d agent %q reported outside an episode", a.Env, a.Agent)
		}
		if d.gone[a.Env][a.Agent] {
			d.t.Fatalf("env %d agent %q reported after it was done", a.Env, a.Agent)
		}
		prev, seen := d.last[a.Env][a.Agent]
		want := prev + 1
		if !seen {
			want = 0
		} else {
			d.steps++
			d.perEnv[a.Env]++
		}
		if a.Reward != want {
			d.t.Fatalf("env %d agent %q: reward %v, want %v (lost or repeated step)", a.Env, a.Agent, a.Reward, want)
		}
		d.last[a.Env][a.Agent] = a.Reward
		if a.Terminated || a.Truncated {
			d.gone[a.Env][a.Agent] = true
		}
	}
	for _, st := range batch.Envs {
		if st.Err == nil && (st.Terminated || st.Truncated) {
			d.episodes++
			d.running[st.Env] = false
			ended = append(ended, st.Env)
		}
	}
	return ended
}

func (d *driver) addActions(batch *Batch) {
	for _, a := range batch.Agents {
		if !a.Terminated && !a.Truncated {
			d.actions = append(d.actions, Action{Env: a.Env, Agent: a.Agent, Action: []float32{float32(d.rng.IntN(2))}})
		}
	}
}

// round does one Poll, resets what ended, and sends actions for every ready agent.
func (d *driver) round() {
	d.t.Helper()
	if err := d.roundErr(); err != nil {
		d.t.Fatal(err)
	}
}

func (d *driver) roundErr() error {
	d.t.Helper()
	d.batch.Clear()
	if err := d.b.Poll(&d.batch); err != nil {
		return fmt.Errorf("Poll: %w", err)
	}
	if envs := len(d.batch.Envs); envs > 0 && envs < d.numEnvs {
		d.partial++
	}
	ended := d.check(&d.batch)
	d.actions = d.actions[:0]
	d.addActions(&d.batch)
	for _, e := range ended {
		d.rbatch.Clear()
		async, err := d.b.TryReset(e, Seed{}, &d.rbatch)
		if err != nil {
			return fmt.Errorf("TryReset(%d): %w", e, err)
		}
		if async {
			d.asyncs++
			continue
		}
		for _, again := range d.check(&d.rbatch) { // a restarted failure of the reset itself
			d.rbatch.Clear()
			if _, err := d.b.TryReset(again, Seed{}, &d.rbatch); err != nil {
				return fmt.Errorf("TryReset(%d) after a failed reset: %w", again, err)
			}
			d.check(&d.rbatch)
		}
		d.addActions(&d.rbatch)
	}
	if err := d.b.SendActions(d.actions); err != nil {
		return fmt.Errorf("SendActions: %w", err)
	}
	return nil
}

// drain polls without sending actions until nothing more arrives (for RemoteVectorEnv:
// every step in flight is collected, and the next Poll reports ErrNothingInFlight).
func (d *driver) drain() {
	d.t.Helper()
	for {
		d.batch.Clear()
		err := d.b.Poll(&d.batch)
		if errors.Is(err, ErrNothingInFlight) {
			return
		}
		if err != nil {
			d.t.Fatalf("Poll: %v", err)
		}
		if len(d.batch.Envs) == 0 {
			return
		}
		d.check(&d.batch)
	}
}

func randomMaker(cfg RandomEnvConfig) func(int) (Env, error) {
	return func(i int) (Env, error) { return NewRandomEnv(cfg) }
}

func envSteps(t testing.TB, subs []any) (total int64) {
	for _, s := range subs {
		switch e := s.(type) {
		case *RandomEnv:
			total += e.Steps()
		case *RandomMultiAgentEnv:
			total += e.Steps()
		default:
			t.Fatalf("unexpected sub-environment %T", s)
		}
	}
	return total
}

// zeroEnv is a trivial Env for benchmarks: zero observations, episodes of 1000 steps.
type zeroEnv struct {
	obs, act spaces.Space
	t        int
}

func newZeroEnv() *zeroEnv {
	return &zeroEnv{obs: spaces.NewBox(-1, 1, 4), act: &spaces.Discrete{N: 2}}
}

func (e *zeroEnv) ObservationSpace() spaces.Space { return e.obs }
func (e *zeroEnv) ActionSpace() spaces.Space      { return e.act }
func (e *zeroEnv) Reset(_ Seed, obs []float32) (Info, error) {
	e.t = 0
	clear(obs)
	return nil, nil
}
func (e *zeroEnv) Step(action, obs []float32) (StepResult, error) {
	if e.t >= 1000 {
		return StepResult{}, ErrNeedsReset
	}
	if !e.act.Contains(action) {
		return StepResult{}, errors.New("bad action")
	}
	e.t++
	clear(obs)
	return StepResult{Reward: 1, Truncated: e.t >= 1000}, nil
}

// waitGoroutines waits until the goroutine count is at most want, or fails.
func waitGoroutines(t *testing.T, want int, numGoroutine func() int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for numGoroutine() > want {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines: %d after Stop, want at most %d", numGoroutine(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
