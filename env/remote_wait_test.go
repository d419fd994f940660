package env

import (
	"testing"
	"time"
)

// TestRemoteVectorEnvBatchWaitWindow checks that BatchWait is measured as RLlib's
// RemoteBaseEnv.poll measures remote_env_batch_wait_ms: a ray.wait for every pending result
// with that timeout, repeated while none is ready. Sub-environment 2 hangs in every case.
func TestRemoteVectorEnvBatchWaitWindow(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name           string
		wait           time.Duration
		delays         [2]time.Duration // of sub-environments 0 and 1
		ready          int              // sub-environments the Poll returns
		atLeast, below time.Duration    // how long the Poll takes
	}{
		// Some ready within the window: returned at its end, not as soon as the first is.
		{"some ready in the first window", 200 * ms, [2]time.Duration{5 * ms, 10 * ms}, 2, 200 * ms, 2 * time.Second},
		// None ready in the first window: a second window, returned at its end with every
		// result that came in it (not at the first one's arrival).
		{"none ready in the first window", 250 * ms, [2]time.Duration{300 * ms, 320 * ms}, 2, 500 * ms, 3 * time.Second},
		// BatchWait 0: as soon as one is ready, with the others ready by then.
		{"zero", 0, [2]time.Duration{5 * ms, 400 * ms}, 1, 5 * ms, 395 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			envs := make([]*gateEnv, 3)
			for i := range envs {
				c := RandomEnvConfig{EpisodeLen: 1000}
				if i < 2 {
					c.StepDelay = tc.delays[i]
				}
				e, err := NewRandomEnv(c)
				if err != nil {
					t.Fatal(err)
				}
				envs[i] = &gateEnv{RandomEnv: e}
			}
			envs[2].gate = release
			r, err := NewRemoteVectorEnv(func(i int) (any, error) { return envs[i], nil },
				RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 3}, BatchWait: tc.wait})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				close(release)
				if err := r.Stop(); err != nil {
					t.Error(err)
				}
			}()
			var batch Batch
			for polled := 0; polled < 3; { // the resets
				if err := r.Poll(&batch); err != nil {
					t.Fatal(err)
				}
				polled = len(batch.Envs)
			}
			if err := r.SendActions(actionsFor(&batch)); err != nil {
				t.Fatal(err)
			}
			batch.Clear()
			start := time.Now()
			err = r.Poll(&batch)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if len(batch.Envs) != tc.ready || took < tc.atLeast || took >= tc.below {
				t.Fatalf("BatchWait %v: Poll returned %d sub-environments after %v; want %d, in [%v, %v)",
					tc.wait, len(batch.Envs), took, tc.ready, tc.atLeast, tc.below)
			}
		})
	}
	// All ready before the window ends: Poll returns when the last is, not at the window's end.
	t.Run("all ready", func(t *testing.T) {
		r, err := NewRemoteVectorEnv(func(i int) (any, error) {
			return NewRandomEnv(RandomEnvConfig{EpisodeLen: 1000, StepDelay: time.Duration(i+1) * 5 * ms})
		}, RemoteVectorEnvOptions{BaseEnvOptions: BaseEnvOptions{NumEnvs: 3}, BatchWait: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
		var batch Batch
		if err := r.Poll(&batch); err != nil || len(batch.Envs) != 3 {
			t.Fatalf("first Poll: %v %d", err, len(batch.Envs))
		}
		if err := r.SendActions(actionsFor(&batch)); err != nil {
			t.Fatal(err)
		}
		batch.Clear()
		start := time.Now()
		if err := r.Poll(&batch); err != nil || len(batch.Envs) != 3 {
			t.Fatalf("Poll: %v %d", err, len(batch.Envs))
		}
		if took := time.Since(start); took >= time.Second {
			t.Fatalf("Poll took %v with every step done in 15 ms and BatchWait 2 s", took)
		}
	})
}
