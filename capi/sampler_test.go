package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/arrowbatch"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/inference"
)

func needSamplerRuntime(t testing.TB) {
	t.Helper()
	if err := inference.Init(); err != nil {
		t.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
}

func mustOpenSampler(t testing.TB, opts string) *sampler {
	t.Helper()
	s, err := openSampler([]byte(opts))
	if err != nil {
		t.Fatalf("open %s: %v", opts, err)
	}
	t.Cleanup(func() { s.close() })
	return s
}

// sampleRunLines is what `sample run` writes as JSON lines for the options and steps: the
// same runspec, run by an envrunner.Group as runRun runs it (MaxEnvSteps set, empty batches
// skipped).
func sampleRunLines(t *testing.T, opts string, steps int64) []string {
	t.Helper()
	o := defaultSamplerOptions()
	if err := readOptions([]byte(opts), &o); err != nil {
		t.Fatal(err)
	}
	spec, err := o.spec()
	if err != nil {
		t.Fatal(err)
	}
	spec.MaxEnvSteps = steps
	run, err := runspec.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	var lines []string
	err = run.Group.Run(context.Background(), envrunner.GroupOptions{Sink: func(b *envrunner.MultiAgentBatch) error {
		if b.Rows() > 0 {
			lines = append(lines, string(output.AppendJSON(nil, b)))
		}
		run.Group.Release(b)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestSamplerMatchesSampleRun: the sampler's batches are `sample run`'s, line for line, with
// one worker and with three (merged round-robin), single- and multi-agent, two policies.
func TestSamplerMatchesSampleRun(t *testing.T) {
	needSamplerRuntime(t)
	for _, tc := range []struct {
		name, opts string
		steps      int64
	}{
		{"cartpole", `{"env":"CartPole-v1","num_envs":4,"fragment_length":25,"seed":7}`, 6 * 100},
		// sample run splits --steps evenly over the workers: two sub-environments each.
		{"workers=3", `{"env":"CartPole-v1","num_envs":6,"workers":3,"fragment_length":20,"seed":3,"gae":true}`, 6 * 120},
		{"pendulum", `{"env":"Pendulum-v1","num_envs":2,"fragment_length":30,"seed":1}`, 4 * 60},
		{"multi-agent", `{"env":"MultiAgentCartPole","num_envs":2,"fragment_length":40,"seed":5,
			"policies":{"trained":"cartpole_mlp","rand":"random"},"policy_map":[["agent_0","trained"],["agent_*","rand"]]}`, 4 * 80},
		{"recurrent", `{"env":"StatelessCartPole","num_envs":2,"fragment_length":30,"seed":2}`, 3 * 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := sampleRunLines(t, tc.opts, tc.steps)
			s := mustOpenSampler(t, tc.opts)
			for i, w := range want {
				if _, _, err := s.sample(); err != nil {
					t.Fatal(err)
				}
				if got := string(output.AppendJSON(nil, s.cur)); got != w {
					t.Fatalf("batch %d differs from sample run's:\n got %.300s\nwant %.300s", i, got, w)
				}
			}
		})
	}
}

// TestSamplerColumns: the column views point into the batch's own arrays (the actions of a
// Discrete space into one converted array), with the JSON lines' names, dtypes and shapes.
func TestSamplerColumns(t *testing.T) {
	needSamplerRuntime(t)
	s := mustOpenSampler(t, `{"env":"CartPole-v1","num_envs":3,"fragment_length":10,"gae":true}`)
	if _, _, _, err := s.columns(0); statusOf(err) != statusState {
		t.Fatalf("columns before a batch: %v", err)
	}
	for range 3 {
		e, a, err := s.sample()
		if err != nil || e != 30 || a != 30 {
			t.Fatalf("sample: %d %d %v", e, a, err)
		}
		cols, n, rows, err := s.columns(0)
		if err != nil || rows != 30 {
			t.Fatal(rows, err)
		}
		b := s.cur.PolicyBatches[envrunner.DefaultPolicyID]
		var names []string
		for _, c := range views(cols, n) {
			names = append(names, fmt.Sprintf("%s:%d:%d:%v", c.name, c.dtype, c.ndim, c.shape))
			var want unsafe.Pointer
			switch c.name {
			case "obs":
				want = unsafe.Pointer(&b.Obs[0])
			case "new_obs":
				want = unsafe.Pointer(&b.NewObs[0])
			case "rewards":
				want = unsafe.Pointer(&b.Rewards[0])
			case "terminateds":
				want = unsafe.Pointer(&b.Terminateds[0])
			case "eps_id":
				want = unsafe.Pointer(&b.EpsID[0])
			case "t":
				want = unsafe.Pointer(&b.T[0])
			case "advantages":
				want = unsafe.Pointer(&b.Advantages[0])
			case "actions":
				acts := unsafe.Slice((*int64)(c.data), 30)
				for i, v := range acts {
					if float32(v) != b.Actions[i] {
						t.Fatalf("action %d: %d, batch %v", i, v, b.Actions[i])
					}
				}
				continue
			default:
				continue
			}
			if c.data != want {
				t.Fatalf("%s: the view is at %p, the batch's array at %p", c.name, c.data, want)
			}
		}
		got := strings.Join(names, " ")
		const want = "obs:1:2:[30 4] new_obs:1:2:[30 4] actions:3:1:[30 1] rewards:1:1:[30 1] terminateds:4:1:[30 1] " +
			"truncateds:4:1:[30 1] eps_id:3:1:[30 1] env_id:2:1:[30 1] agent_index:2:1:[30 1] t:2:1:[30 1] " +
			"action_dist_inputs:1:2:[30 2] action_logp:1:1:[30 1] vf_preds:1:1:[30 1] advantages:1:1:[30 1] value_targets:1:1:[30 1]"
		if got != want {
			t.Fatalf("columns:\n got %s\nwant %s", got, want)
		}
	}
	if _, _, _, err := s.columns(1); statusOf(err) != statusInvalidArgument {
		t.Fatalf("policy 1 of 1: %v", err)
	}
}

// TestSamplerArrow: the batch exported through the C Data Interface imports back with the
// batch's values, its obs buffer the batch's own array.
func TestSamplerArrow(t *testing.T) {
	needSamplerRuntime(t)
	s := mustOpenSampler(t, `{"env":"Pendulum-v1","num_envs":2,"fragment_length":16,"seed":4}`)
	var arr cdata.CArrowArray
	var sc cdata.CArrowSchema
	if err := s.exportArrow(unsafe.Pointer(&arr), unsafe.Pointer(&sc)); statusOf(err) != statusState {
		t.Fatalf("export before a batch: %v", err)
	}
	for range 2 {
		if _, _, err := s.sample(); err != nil {
			t.Fatal(err)
		}
		if err := s.exportArrow(unsafe.Pointer(&arr), unsafe.Pointer(&sc)); err != nil {
			t.Fatal(err)
		}
		rec, err := cdata.ImportCRecordBatch(&arr, &sc)
		if err != nil {
			t.Fatal(err)
		}
		b := s.cur.PolicyBatches[envrunner.DefaultPolicyID]
		obs := rec.Column(rec.Schema().FieldIndices(arrowbatch.ColObs)[0]).(*array.FixedSizeList).ListValues().(*array.Float32)
		if unsafe.Pointer(unsafe.SliceData(obs.Float32Values())) != unsafe.Pointer(&b.Obs[0]) {
			t.Fatalf("obs was copied")
		}
		back, err := arrowbatch.ToBatch(rec, s.cur.EnvSteps)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(output.AppendJSON(nil, back)), string(output.AppendJSON(nil, s.cur)); got != want {
			t.Fatalf("imported record:\n got %.300s\nwant %.300s", got, want)
		}
		rec.Release()
	}
}

// TestSamplerMetrics: counters, perf stats and the episodes ended since the last call.
func TestSamplerMetrics(t *testing.T) {
	needSamplerRuntime(t)
	for _, workers := range []int{1, 2} {
		s := mustOpenSampler(t, fmt.Sprintf(`{"env":"CartPole-v1","num_envs":4,"workers":%d,"fragment_length":100,"model":"random"}`, workers))
		for range 4 {
			if _, _, err := s.sample(); err != nil {
				t.Fatal(err)
			}
		}
		read := func() samplerMetrics {
			p, n, err := s.metrics()
			if err != nil {
				t.Fatal(err)
			}
			var m samplerMetrics
			if err := json.Unmarshal(unsafe.Slice((*byte)(unsafe.Pointer(p)), n), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		m := read()
		if m.Batches != 4 || m.EnvSteps < 1600/int64(workers) || m.NewEpisodes == 0 || m.EpisodeLenMean == nil ||
			m.EpisodeReturnMean == nil || *m.EpisodeReturnMean <= 0 || m.Perf.MeanEnvWaitMs <= 0 {
			t.Fatalf("workers %d: metrics %+v", workers, m)
		}
		// With one worker nothing steps between calls; two work ahead on their next batch.
		if m2 := read(); workers == 1 && (m2.NewEpisodes != 0 || m2.EpisodeReturnMean != nil) {
			t.Fatalf("workers %d: the episodes were not taken: %+v", workers, m2)
		}
	}
}

// TestSamplerErrors: bad options and spec errors are INVALID_ARGUMENT, an unknown
// environment or model NOT_FOUND; a panicking environment fails the call (not the process),
// and every later sample.
func TestSamplerErrors(t *testing.T) {
	needSamplerRuntime(t)
	for _, tc := range []struct {
		opts   string
		status int
		want   string
	}{
		{`{"num_envs":0}`, statusInvalidArgument, "num_envs"},
		{`{"num_env":2}`, statusInvalidArgument, "unknown field"},
		{`{"workers":3,"num_envs":2}`, statusInvalidArgument, "workers"},
		{`{"env":"NoSuch-v0"}`, statusNotFound, "unknown environment"},
		{`{"model":"no_such_model"}`, statusNotFound, "no_such_model"},
		{`{"policies":{"a":"random","b":"random"}}`, statusInvalidArgument, "--policy-map"},
		{`{"model":"random","policies":{"a":"random"}}`, statusInvalidArgument, "not both"},
		{`{"env_config":[1]}`, statusInvalidArgument, "env_config"},
		{`{"env_config":{"max_episode_steps":"x"}}`, statusInvalidArgument, ""},
		{`{"batch_mode":"x"}`, statusInvalidArgument, "--batch-mode"},
		{`{"remote_wait_ms":5}`, statusInvalidArgument, "remote"},
	} {
		_, err := openSampler([]byte(tc.opts))
		if statusOf(err) != tc.status || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%s: %v (status %d), want status %d with %q", tc.opts, err, statusOf(err), tc.status, tc.want)
		}
	}
	for _, workers := range []int{1, 2} {
		// capi-test-InfoEnv panics on action 2, which the random policy picks soon.
		s := mustOpenSampler(t, fmt.Sprintf(`{"env":"capi-test-InfoEnv","num_envs":2,"workers":%d,"model":"random","fragment_length":50}`, workers))
		var err error
		for range 20 {
			if _, _, err = s.sample(); err != nil {
				break
			}
		}
		if statusOf(err) == statusOK {
			t.Fatalf("workers %d: no failure", workers)
		}
		if _, _, err2 := s.sample(); statusOf(err2) != statusState || !strings.Contains(err2.Error(), "failed before") {
			t.Fatalf("workers %d: after a failure: %v", workers, err2)
		}
	}
}

// BenchmarkSamplerSample: one batch of CartPole with the bundled MLP through the C API's Go
// side, views described and pinned; it must allocate nothing.
func BenchmarkSamplerSample(b *testing.B) {
	needSamplerRuntime(b)
	for _, tc := range []struct{ name, opts string }{
		{"envs=64/random", `{"env":"CartPole-v1","num_envs":64,"fragment_length":50,"model":"random"}`},
		{"envs=64/mlp", `{"env":"CartPole-v1","num_envs":64,"fragment_length":50}`},
		{"envs=64/mlp/workers=2", `{"env":"CartPole-v1","num_envs":64,"workers":2,"fragment_length":50}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := mustOpenSampler(b, tc.opts)
			for range 64 { // the batches' storage and the runner's pools grow to size
				if _, _, err := s.sample(); err != nil {
					b.Fatal(err)
				}
			}
			var steps int64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				e, _, err := s.sample()
				if err != nil {
					b.Fatal(err)
				}
				steps += e
			}
			b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
