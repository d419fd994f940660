package externalenv_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/env/classic"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// maAgent is one agent of a multi-agent simulator episode: a CartPole of its own.
type maAgent struct {
	cp       *classic.CartPole
	obs      []float32
	last     string // key of its last transition
	done     bool   // marked done: it leaves with the next call
	final    bool   // ... reporting its final observation (otherwise its last one is repeated)
	steps    int
	removed  bool
	leaveAt  int // leaves after this many steps (0: never)
	withObs  bool
	factor   float64
	actShift int
}

// maThread runs multi-agent episodes: agents "a" and "b" from the start, "c" joining at
// step 2; "c" leaves after 4 steps without a final observation, "b" after 6 steps with
// one; an agent whose CartPole terminates leaves with its final observation; the episode
// ends when "a" terminates (EndEpisode) or at step 12 (EndEpisodeTruncated). Every fourth
// step the simulator acts itself (LogAction); rewards are logged per agent in two parts.
func (s *simulator) maThread(ctx context.Context, e *externalenv.ExternalMultiAgentEnv, k int) error {
	const limit = 12
	for ep := 0; ; ep++ {
		training := ep%3 != 2
		id, err := e.StartEpisode(fmt.Sprintf("t%d-e%d", k, ep), training)
		if err != nil {
			return err
		}
		agents := map[env.AgentID]*maAgent{}
		join := func(name env.AgentID, leaveAt int, withObs bool, factor float64, shift int) error {
			cp, err := classic.NewCartPole(env.Config{"max_episode_steps": 1000})
			if err != nil {
				return err
			}
			a := &maAgent{cp: cp, obs: make([]float32, 4), leaveAt: leaveAt, withObs: withObs, factor: factor, actShift: shift}
			if _, err := cp.Reset(env.WithSeed(uint64(k*100000+ep*10+len(agents))), a.obs); err != nil {
				return err
			}
			agents[name] = a
			return nil
		}
		if err := join("a", 0, true, 1, 0); err != nil {
			return err
		}
		if err := join("b", 6, true, 2, 1); err != nil {
			return err
		}
		for t := 0; ; t++ {
			if t == 2 {
				if err := join("c", 4, false, 3, 0); err != nil {
					return err
				}
			}
			obs := map[env.AgentID][]float32{}
			live := 0
			for name, a := range agents {
				switch {
				case a.removed:
				case !a.done:
					obs[name] = append([]float32(nil), a.obs...)
					live++
				default: // its last call
					if a.final {
						obs[name] = append([]float32(nil), a.obs...)
					}
					a.removed = true
				}
			}
			if agents["a"].done || t == limit {
				end, mark := e.EndEpisode, func(tr *transition) { tr.term = true }
				if !agents["a"].done {
					end, mark = e.EndEpisodeTruncated, func(tr *transition) { tr.trunc = true }
				}
				s.mu.Lock()
				for name, a := range agents {
					if _, ok := obs[name]; ok && !a.done && a.last != "" {
						tr := s.steps[a.last]
						mark(&tr)
						s.steps[a.last] = tr
					}
				}
				s.mu.Unlock()
				if err := end(id, obs); err != nil {
					return err
				}
				break
			}
			if live == 0 {
				return errors.New("no agent left before the end")
			}
			logged := t%4 == 3
			acts := map[env.AgentID][]float32{}
			if logged {
				for name, a := range agents {
					if _, ok := obs[name]; ok && !a.done {
						acts[name] = []float32{float32((t + a.actShift) % 2)}
					}
				}
				err = e.LogAction(id, obs, acts)
			} else {
				var got map[env.AgentID][]float32
				got, err = e.GetAction(ctx, id, obs)
				for name, act := range got {
					acts[name] = append([]float32(nil), act...) // got is the episode's own
				}
			}
			if err != nil {
				return err
			}
			rewards1, rewards2, dones := map[env.AgentID]float64{}, map[env.AgentID]float64{}, map[env.AgentID]bool{}
			for name, act := range acts {
				a := agents[name]
				next := make([]float32, 4)
				res, err := a.cp.Step(act, next)
				if err != nil {
					return err
				}
				a.steps++
				r1, r2 := 0.5*res.Reward*a.factor, 0.5*res.Reward*a.factor+float64(t%3)
				rewards1[name], rewards2[name] = r1, r2
				tr := transition{action: act[0], reward: float32(r1 + r2), newObs: next, training: training, logged: logged}
				switch {
				case res.Terminated:
					a.done, a.final, tr.term = true, true, true
				case a.leaveAt > 0 && a.steps == a.leaveAt:
					a.done, a.final, tr.term = true, a.withObs, true
					if !a.withObs {
						tr.newObs = a.obs // the env repeats its last observation
					}
				}
				if a.done {
					dones[name] = true
				}
				a.last = key(a.obs)
				s.record(a.obs, tr)
				a.obs = next
			}
			if err := e.LogReturns(id, rewards1, nil, nil); err != nil {
				return err
			}
			if err := e.LogReturns(id, rewards2, dones, nil); err != nil {
				return err
			}
		}
	}
}

// TestRunnerDrivesExternalMultiAgentEnv: an envrunner.Runner with the bundled cartpole_mlp
// (every agent maps to it) drives an ExternalMultiAgentEnv while simulator goroutines run
// multi-agent CartPole episodes: agents joining late, leaving with and without a final
// observation, logged actions, per-agent rewards, time-limit truncation. The batches hold
// exactly the transitions the simulator saw, per agent; training-disabled episodes leave no
// rows.
func TestRunnerDrivesExternalMultiAgentEnv(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	policy, err := models.Bundled("cartpole_mlp")
	require.NoError(t, err)
	cp, err := classic.NewCartPole(nil)
	require.NoError(t, err)
	const threads = 4
	e := newMAEnv(t, externalenv.MultiAgentOptions{ObservationSpace: cp.ObservationSpace(), ActionSpace: cp.ActionSpace(),
		MaxConcurrentEpisodes: threads})
	sim := &simulator{steps: map[string]transition{}}
	runDone := make(chan struct{})
	e.Start(context.Background(), func(ctx context.Context, e *externalenv.ExternalMultiAgentEnv) error {
		defer close(runDone)
		errs := make([]error, threads)
		for k := range threads {
			sim.wg.Add(1)
			go func() {
				defer sim.wg.Done()
				errs[k] = sim.maThread(ctx, e, k)
			}()
		}
		sim.wg.Wait()
		for _, err := range errs {
			if !errors.Is(err, externalenv.ErrStopped) {
				return err
			}
		}
		return nil
	})
	r, err := envrunner.New(envrunner.Config{
		Env: e, NumEnvs: e.NumEnvs(), FragmentLength: 40, Seed: 5,
		Policies: map[envrunner.PolicyID]envrunner.PolicyConfig{
			envrunner.DefaultPolicyID: {Policy: policy, Action: connectors.ActionConfig{Explore: true},
				Session: inference.Options{IntraOpThreads: 1}},
		},
	})
	require.NoError(t, err)
	var batches []*envrunner.MultiAgentBatch
	for range 4 {
		b := &envrunner.MultiAgentBatch{}
		require.NoError(t, r.Sample(b))
		batches = append(batches, b)
	}
	require.NoError(t, r.Close()) // stops the env: the simulator threads end
	<-runDone

	sim.mu.Lock()
	defer sim.mu.Unlock()
	var rows, logged, terms, truncs, repeated int
	agentIdx := map[int32]bool{}
	for _, mb := range batches {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		require.NoError(t, b.Validate())
		for i := range b.Count {
			obs := envrunner.Row(b.Obs, 4, i)
			tr, ok := sim.steps[key(obs)]
			require.True(t, ok, "row %d: obs %v was never seen by the simulator", i, obs)
			require.True(t, tr.training, "row %d: from a training-disabled episode", i)
			assert.Equal(t, tr.action, b.Actions[i], "row %d: action", i)
			assert.Equal(t, tr.reward, b.Rewards[i], "row %d: reward", i)
			assert.Equal(t, tr.newObs, envrunner.Row(b.NewObs, 4, i), "row %d: new_obs", i)
			assert.Equal(t, tr.term, b.Terminateds[i], "row %d: terminated", i)
			assert.Equal(t, tr.trunc, b.Truncateds[i], "row %d: truncated", i)
			rows++
			agentIdx[b.AgentIndex[i]] = true
			if tr.logged {
				logged++
			}
			if tr.term {
				terms++
			}
			if tr.trunc {
				truncs++
			}
			if key(tr.newObs) == key(obs) {
				repeated++
			}
		}
	}
	assert.Positive(t, rows)
	assert.Positive(t, logged, "no off-policy rows")
	assert.Positive(t, terms, "no agent left")
	assert.Positive(t, truncs, "no episode reached the time limit")
	assert.Positive(t, repeated, "no agent left without a final observation")
	assert.Len(t, agentIdx, 3, "agents a, b and c")
}
