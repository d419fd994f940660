package externalenv_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// transition is what the simulator saw on one step.
type transition struct {
	action   float32
	reward   float32
	newObs   []float32
	training bool
	logged   bool
	term     bool
	trunc    bool
}

// simulator runs classic CartPole episodes on `threads` goroutines through the API and
// records every transition by its observation.
type simulator struct {
	mu    sync.Mutex
	steps map[string]transition
	wg    sync.WaitGroup
}

func key(obs []float32) string { return fmt.Sprint(obs) }

func (s *simulator) record(obs []float32, tr transition) {
	s.mu.Lock()
	s.steps[key(obs)] = tr
	s.mu.Unlock()
}

func (s *simulator) thread(ctx context.Context, e *externalenv.ExternalEnv, k int) error {
	// Short episodes (a time limit of 30 steps), so that every batch sees some end.
	cp, err := classic.NewCartPole(env.Config{"max_episode_steps": 30})
	if err != nil {
		return err
	}
	obs, next := make([]float32, 4), make([]float32, 4)
	for ep := 0; ; ep++ {
		training := ep%3 != 2
		id, err := e.StartEpisode(fmt.Sprintf("t%d-e%d", k, ep), training)
		if err != nil {
			return err
		}
		if _, err := cp.Reset(env.WithSeed(uint64(k*1000+ep)), obs); err != nil {
			return err
		}
		for t := 0; ; t++ {
			var act []float32
			logged := t%4 == 3
			if logged { // the simulator acts itself
				act = []float32{float32(t % 2)}
				err = e.LogAction(id, obs, act)
			} else {
				act, err = e.GetAction(ctx, id, obs)
			}
			if err != nil {
				return err
			}
			res, err := cp.Step(act, next)
			if err != nil {
				return err
			}
			// The reward is logged in two parts; the sampler must sum them.
			r1, r2 := 0.25*res.Reward, 0.75*res.Reward+float64(t%5)
			s.record(obs, transition{action: act[0], reward: float32(r1 + r2), newObs: append([]float32(nil), next...),
				training: training, logged: logged, term: res.Terminated, trunc: res.Truncated && !res.Terminated})
			if err := e.LogReturns(id, r1, nil); err != nil {
				return err
			}
			if err := e.LogReturns(id, r2, nil); err != nil {
				return err
			}
			obs, next = next, obs
			switch {
			case res.Terminated:
				err = e.EndEpisode(id, obs)
			case res.Truncated: // the time limit: the sampler bootstraps from the value
				err = e.EndEpisodeTruncated(id, obs)
			default:
				continue
			}
			if err != nil {
				return err
			}
			break
		}
	}
}

// TestRunnerDrivesExternalEnv: an envrunner.Runner with the bundled cartpole_mlp drives the
// ExternalEnv while simulator goroutines (as many as MaxConcurrentEpisodes, so all progress)
// run CartPole through GetAction/LogAction/LogReturns/EndEpisode(Truncated). The batches
// hold exactly the transitions the simulator saw: its observations, the actions it applied
// (logged ones included), the summed rewards, the next observations, terminations and
// truncations (the 30-step time limit); training-disabled episodes leave no rows.
func TestRunnerDrivesExternalEnv(t *testing.T) {
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	policy, err := models.Bundled("cartpole_mlp")
	require.NoError(t, err)
	const threads = 6
	e := newEnv(t, externalenv.Options{MaxConcurrentEpisodes: threads})
	sim := &simulator{steps: map[string]transition{}}
	runDone := make(chan struct{})
	e.Start(context.Background(), func(ctx context.Context, e *externalenv.ExternalEnv) error {
		defer close(runDone)
		errs := make([]error, threads)
		for k := range threads {
			sim.wg.Add(1)
			go func() {
				defer sim.wg.Done()
				errs[k] = sim.thread(ctx, e, k)
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
		Env: e, NumEnvs: e.NumEnvs(), FragmentLength: 50, Seed: 3,
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
	require.NoError(t, r.Close()) // stops the ExternalEnv: the simulator threads end
	<-runDone

	sim.mu.Lock()
	defer sim.mu.Unlock()
	rows, logged, terms, truncs := 0, 0, 0, 0
	envs := map[int32]bool{}
	for _, mb := range batches {
		b := mb.PolicyBatches[envrunner.DefaultPolicyID]
		require.NoError(t, b.Validate())
		for i := 0; i < b.Count; i++ {
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
			envs[b.EnvID[i]] = true
			if tr.logged {
				logged++
			}
			if tr.term {
				terms++
			}
			if tr.trunc {
				truncs++
			}
		}
	}
	// Steps of training-disabled episodes count towards the fragments but leave no rows.
	assert.Greater(t, rows, 4*50*threads/2)
	assert.LessOrEqual(t, rows, 4*50*threads)
	assert.Positive(t, logged, "no off-policy rows")
	assert.Positive(t, terms+truncs, "no episode ended")
	assert.Positive(t, truncs, "no episode reached the time limit")
	assert.Len(t, envs, threads, "every sub-environment (episode slot) progressed")
}
