package models

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/onnxtest"
	"github.com/onnxrl/sampler/spaces"
)

func needRuntime(tb testing.TB) {
	tb.Helper()
	if err := inference.Init(); err != nil {
		tb.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
}

// genInput is the input formula shared with the export script: element i of a tensor with
// seed s is low + (high-low)*u, u = ((i*1103515245 + 12345 + s*7919) mod 2^31) / 2^31.
func genInput(dst []float32, seed int64, low, high float64) {
	for i := range dst {
		u := float64((int64(i)*1103515245+12345+seed*7919)%2147483648) / 2147483648.0
		dst[i] = float32(low + (high-low)*u)
	}
}

// TestBundledMatchPyTorch runs every bundled model at batch 1, 7 and 256 in one session and
// compares with the outputs PyTorch computed for the same inputs.
func TestBundledMatchPyTorch(t *testing.T) {
	needRuntime(t)
	for _, name := range BundledNames() {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(name + ".case.json")
			require.NoError(t, err)
			var cf struct {
				Cases []struct {
					Batch  int `json:"batch"`
					Inputs map[string]struct {
						Shape []int64 `json:"shape"`
						Gen   struct {
							Seed int64   `json:"seed"`
							Low  float64 `json:"low"`
							High float64 `json:"high"`
						} `json:"gen"`
					} `json:"inputs"`
					Outputs map[string]struct {
						Shape []int64   `json:"shape"`
						Data  []float64 `json:"data"`
					} `json:"outputs"`
				} `json:"cases"`
			}
			require.NoError(t, json.Unmarshal(raw, &cf))
			batches := []int{}
			p, err := Bundled(name)
			require.NoError(t, err)
			s, err := inference.NewSession(p.Model, inference.Options{Capacity: 256})
			require.NoError(t, err)
			defer s.Close()
			for _, c := range cf.Cases {
				batches = append(batches, c.Batch)
				require.NoError(t, s.SetBatch(c.Batch))
				for in, spec := range c.Inputs {
					tensor, err := s.Input(in)
					require.NoError(t, err)
					require.Equal(t, spec.Shape, tensor.Shape(), in)
					genInput(tensor.Float32(), spec.Gen.Seed, spec.Gen.Low, spec.Gen.High)
				}
				require.NoError(t, s.Run())
				for out, want := range c.Outputs {
					tensor, err := s.Output(out)
					require.NoError(t, err)
					require.Equal(t, want.Shape, tensor.Shape(), out)
					got := tensor.Float32()
					require.Len(t, got, len(want.Data))
					// 1e-5 absolute, relative above magnitude 1: the trained values reach ~100,
					// where one float32 ulp is already 7.6e-6.
					worst := 0.0
					for i := range got {
						diff := math.Abs(float64(got[i]) - want.Data[i])
						worst = math.Max(worst, diff/math.Max(1, math.Abs(want.Data[i])))
					}
					assert.LessOrEqual(t, worst, 1e-5, "%s at batch %d: max scaled diff %g", out, c.Batch, worst)
				}
			}
			assert.Equal(t, []int{1, 7, 256}, batches)
		})
	}
}

func TestBundledSpecs(t *testing.T) {
	want := map[string]struct {
		obs, act, value, dist string
		states                int
	}{
		"cartpole_mlp":      {"obs", "logits", "value", Categorical, 0},
		"pendulum_gaussian": {"obs", "action_dist_inputs", "value", DiagGaussian, 0},
		"lstm_policy":       {"obs", "logits", "value", Categorical, 2},
		"gru_policy":        {"obs", "action_logits", "vf", Categorical, 1},
		"cnn_policy":        {"observations", "logits", "value", Categorical, 0},
	}
	assert.Len(t, BundledNames(), len(want))
	for name, w := range want {
		p, err := Bundled(name)
		require.NoError(t, err, name)
		assert.Equal(t, w.obs, p.Spec.ObservationInput, name)
		assert.Equal(t, w.act, p.Spec.ActionOutput, name)
		assert.Equal(t, w.value, p.Spec.ValueOutput, name)
		assert.Equal(t, w.dist, p.Spec.Distribution, name)
		assert.Len(t, p.Spec.State, w.states, name)
		assert.Equal(t, "bundled:"+name+".policy.json", p.Source)

		// Auto-detection alone finds the same roles (only the spaces' bounds are unknown).
		auto, err := Resolve(p.Model, nil, "none")
		require.NoError(t, err, name)
		assert.Equal(t, p.Spec.ObservationInput, auto.Spec.ObservationInput, name)
		assert.Equal(t, p.Spec.ActionOutput, auto.Spec.ActionOutput, name)
		assert.Equal(t, p.Spec.ValueOutput, auto.Spec.ValueOutput, name)
		assert.ElementsMatch(t, p.Spec.State, auto.Spec.State, name)
		assert.Equal(t, p.Spec.ObservationSpace.Size(), auto.Spec.ObservationSpace.Size(), name)
		for _, d := range auto.Decisions {
			assert.NotEmpty(t, d.Reason, "%s: %s", name, d.Role)
		}
	}
	_, err := Bundled("nope")
	assert.ErrorIs(t, err, ErrUnknownBundled)
}

func TestLoadSidecarAndMetadata(t *testing.T) {
	dir := t.TempDir()
	p, err := Bundled("pendulum_gaussian")
	require.NoError(t, err)
	path := filepath.Join(dir, "pend.onnx")
	require.NoError(t, os.WriteFile(path, p.Model.Bytes(), 0o644))

	// No sidecar, no metadata: auto-detection cannot know the action space is a Box.
	auto, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, "none", auto.Source)
	assert.Equal(t, Categorical, auto.Spec.Distribution)

	// Metadata.
	specJSON, err := json.Marshal(&p.Spec)
	require.NoError(t, err)
	withMeta, err := p.Model.WithMetadata(MetadataKey, string(specJSON))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, withMeta.Bytes(), 0o644))
	meta, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, "metadata onnxrl.policy", meta.Source)
	assert.Equal(t, DiagGaussian, meta.Spec.Distribution)
	assert.True(t, spaces.Equal(p.Spec.ActionSpace, meta.Spec.ActionSpace))

	// A sidecar wins over metadata, and may be partial.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pend.policy.json"),
		[]byte(`{"distribution": "deterministic", "action_space": {"type": "Box", "low": -1, "high": 1, "shape": [2]}}`), 0o644))
	side, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "pend.policy.json"), side.Source)
	assert.Equal(t, Deterministic, side.Spec.Distribution)
	assert.Equal(t, "obs", side.Spec.ObservationInput, "auto-detected")

	// A broken sidecar is an error naming the file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pend.policy.json"), []byte(`{"distribution": "beta"}`), 0o644))
	_, err = Load(path)
	var se *SpecError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "distribution", se.Field)
	assert.Contains(t, err.Error(), "pend.policy.json")
}

func TestSpecErrors(t *testing.T) {
	p, err := Bundled("cartpole_mlp")
	require.NoError(t, err)
	cases := map[string]struct{ json, field, msg string }{
		"unknown field":    {`{"observation": "obs"}`, "", `unknown field "observation"`},
		"bad json":         {`{"distribution": `, "", "invalid JSON"},
		"trailing":         {`{} {}`, "", "data after"},
		"bad dist":         {`{"distribution": "poisson"}`, "distribution", "unknown distribution"},
		"bad space":        {`{"action_space": {"type": "Discrete", "n": 0}}`, "action_space", "n"},
		"no input":         {`{"observation_input": "x"}`, "observation_input", `no input "x"`},
		"no output":        {`{"value_output": "v"}`, "value_output", `no output "v"`},
		"half state":       {`{"state": [{"input": "obs"}]}`, "state[0]", "both"},
		"width mismatch":   {`{"action_space": {"type": "Discrete", "n": 3}}`, "", "needs 3 logits"},
		"wrong space kind": {`{"distribution": "categorical", "action_space": {"type": "Box", "low": 0, "high": 1, "shape": [2]}}`, "", "needs a Discrete action space"},
		"gaussian width":   {`{"distribution": "diag_gaussian", "action_space": {"type": "Box", "low": 0, "high": 1, "shape": [2]}}`, "", "needs 4"},
		"value is action":  {`{"value_output": "logits", "action_output": "logits"}`, "value_output", "already used"},
	}
	for name, c := range cases {
		spec, err := ParseSpec("test.json", []byte(c.json))
		if err == nil {
			_, err = Resolve(p.Model, spec, "test.json")
		}
		var se *SpecError
		require.ErrorAs(t, err, &se, name)
		assert.Equal(t, c.field, se.Field, name)
		assert.Contains(t, err.Error(), c.msg, name)
		assert.Contains(t, err.Error(), "test.json", name)
	}
}

func TestAutoDetection(t *testing.T) {
	f32 := onnxtest.Float32
	mk := func(ins, outs []onnxtest.Value) *inference.Model {
		var nodes []onnxtest.Node
		for _, o := range outs { // any graph will do: the resolver only reads names and shapes
			nodes = append(nodes, onnxtest.Node{Op: "Identity", Inputs: []string{ins[0].Name}, Outputs: []string{o.Name}})
		}
		m, err := inference.LoadBytes("auto", onnxtest.Model{Inputs: ins, Outputs: outs, Nodes: nodes}.Bytes())
		require.NoError(t, err)
		return m
	}
	b := []string{"batch"}
	v := func(name string, dims ...int64) onnxtest.Value {
		return onnxtest.Value{Name: name, ElemType: f32, Dims: dims, Names: b}
	}
	// RLlib-style names with h/c states whose batch axis is 1.
	m := mk([]onnxtest.Value{v("observations", -1, 6), {Name: "h", ElemType: f32, Dims: []int64{1, -1, 8}, Names: []string{"", "batch"}},
		{Name: "c", ElemType: f32, Dims: []int64{1, -1, 8}, Names: []string{"", "batch"}}},
		[]onnxtest.Value{v("action_dist_inputs", -1, 3), v("vf_preds", -1), {Name: "hn", ElemType: f32, Dims: []int64{1, -1, 8}}, {Name: "cn", ElemType: f32, Dims: []int64{1, -1, 8}}})
	p, err := Resolve(m, nil, "none")
	require.NoError(t, err)
	assert.Equal(t, "observations", p.Spec.ObservationInput)
	assert.Equal(t, "action_dist_inputs", p.Spec.ActionOutput)
	assert.Equal(t, "vf_preds", p.Spec.ValueOutput)
	assert.Equal(t, []StatePair{{"h", "hn"}, {"c", "cn"}}, p.Spec.State)
	assert.Equal(t, Categorical, p.Spec.Distribution)
	assert.Equal(t, "Discrete(3)", spaces.String(p.Spec.ActionSpace))

	// Unusual names: states paired by shape, the one other input is the observation.
	m = mk([]onnxtest.Value{v("features", -1, 4), {Name: "mem", ElemType: f32, Dims: []int64{2, -1, 16}, Names: []string{"", "batch"}}},
		[]onnxtest.Value{v("mu", -1, 2), v("log_std", -1, 2), {Name: "mem_next", ElemType: f32, Dims: []int64{2, -1, 16}, Names: []string{"", "batch"}}})
	p, err = Resolve(m, nil, "none")
	require.NoError(t, err)
	assert.Equal(t, "features", p.Spec.ObservationInput)
	assert.Equal(t, []StatePair{{"mem", "mem_next"}}, p.Spec.State)
	assert.Equal(t, "mu", p.Spec.ActionOutput)
	assert.Equal(t, "log_std", p.Spec.LogStdOutput)
	assert.Equal(t, DiagGaussian, p.Spec.Distribution)
	assert.Equal(t, "", p.Spec.ValueOutput)
	assert.Equal(t, 2, p.Spec.ActionSpace.Size())

	// Two candidate observation inputs with unknown names: an error that asks for a spec.
	m = mk([]onnxtest.Value{v("a", -1, 4), v("b", -1, 4)}, []onnxtest.Value{v("out", -1, 2)})
	_, err = Resolve(m, nil, "none")
	assert.ErrorContains(t, err, "cannot tell which of the inputs a, b is the observation")

	// An integer output named actions is the action itself.
	m = mk([]onnxtest.Value{v("obs", -1, 4)}, []onnxtest.Value{{Name: "actions", ElemType: onnxtest.Int64, Dims: []int64{-1, 1}, Names: b}})
	p, err = Resolve(m, nil, "none")
	require.NoError(t, err)
	assert.Equal(t, Deterministic, p.Spec.Distribution)
}

func FuzzParseSpec(f *testing.F) {
	for _, name := range BundledNames() {
		if data, err := bundled.ReadFile(name + ".policy.json"); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"state": [{"input": "a", "output": "b"}], "distribution": "diag_gaussian"}`))
	f.Add([]byte(`{`))
	p, err := Bundled("lstm_policy")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := ParseSpec("fuzz", data)
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("not a SpecError: %v", err)
			}
			return
		}
		out, err := json.Marshal(spec)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := ParseSpec("again", out)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", out, err)
		}
		if again.Distribution != spec.Distribution || again.ObservationInput != spec.ObservationInput {
			t.Fatalf("round trip changed the spec: %s", out)
		}
		_, _ = Resolve(p.Model, spec, "fuzz") // must not panic
	})
}

// TestOpen: a bundled name, a path, and a name that is neither.
func TestOpen(t *testing.T) {
	p, err := Open("cartpole_mlp")
	require.NoError(t, err)
	assert.Equal(t, "obs", p.Spec.ObservationInput)

	dir := t.TempDir()
	data, err := os.ReadFile("cartpole_mlp.onnx")
	require.NoError(t, err)
	path := filepath.Join(dir, "cartpole_mlp") // a file wins over the bundled name
	require.NoError(t, os.WriteFile(path, data, 0o644))
	p, err = Open(path)
	require.NoError(t, err)
	assert.Equal(t, "logits", p.Spec.ActionOutput)

	for _, name := range []string{"no_such_model", filepath.Join(dir, "missing.onnx"), ""} {
		_, err = Open(name)
		assert.Error(t, err, name)
		assert.True(t, errors.Is(err, ErrModelNotFound) || errors.Is(err, os.ErrNotExist), "%q: %v", name, err)
	}
	_, err = Open("no_such_model")
	assert.ErrorContains(t, err, "cartpole_mlp", "the bundled names are listed")
}
