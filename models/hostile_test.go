package models_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/internal/onnxtest"
	"github.com/onnxrl/sampler/models"
)

// The reproduction: an observation input of shape [batch, 2^63-1] panicked in
// spaces.NewBox (from `sample inspect`, `run` and `infer`). Resolve now returns an error.
func TestResolveHugeDimensions(t *testing.T) {
	for _, dims := range [][]int64{{-1, math.MaxInt64}, {-1, 1 << 32, 1 << 32}, {-1, 1 << 25}} {
		data := onnxtest.Model{
			Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: dims, Names: []string{"batch"}}},
			Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{-1, 2}, Names: []string{"batch"}}},
			Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{"logits"}}},
		}.Bytes()
		m, err := inference.LoadBytes("huge", data)
		require.NoError(t, err)
		_, err = models.Resolve(m, nil, "none")
		require.ErrorContains(t, err, "too large for a space", "%v", dims)
	}
	// The same for a huge action output.
	data := onnxtest.Model{
		Inputs:  []onnxtest.Value{{Name: "obs", ElemType: onnxtest.Float32, Dims: []int64{-1, 4}, Names: []string{"batch"}}},
		Outputs: []onnxtest.Value{{Name: "logits", ElemType: onnxtest.Float32, Dims: []int64{-1, math.MaxInt64, 2}, Names: []string{"batch"}}},
		Nodes:   []onnxtest.Node{{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{"logits"}}},
	}.Bytes()
	m, err := inference.LoadBytes("huge", data)
	require.NoError(t, err)
	_, err = models.Resolve(m, nil, "none")
	require.ErrorContains(t, err, "values per row")
}

// fuzzDims reads up to four dimensions from b: each byte picks a small size, a dynamic
// dimension, or a hostile one (2^31, 2^40, 2^62, 2^63-1).
func fuzzDims(b []byte) []int64 {
	hostile := []int64{-1, 0, 1 << 31, 1 << 40, 1 << 62, math.MaxInt64}
	var dims []int64
	for i := 0; i < len(b) && i < 4; i++ {
		v := int64(b[i])
		if v >= 250 {
			dims = append(dims, hostile[v-250])
		} else {
			dims = append(dims, v%9)
		}
	}
	return dims
}

// FuzzResolve resolves generated graphs: an observation input, an action output, an optional
// value output and state pair, with fuzzed shapes, element types and an optional spec in
// the metadata. Resolve and connectors.New must return (an error or a policy), never panic,
// and a resolved policy's spaces must be usable.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{250, 4}, []byte{250, 2}, []byte{}, byte(0), "")
	f.Add([]byte{250, 255}, []byte{250, 2}, []byte{}, byte(0), "")
	f.Add([]byte{253, 4}, []byte{253, 2}, []byte{1, 250, 8}, byte(1), "")
	f.Add([]byte{250, 4}, []byte{250, 3}, []byte{250}, byte(2), `{"distribution":"diag_gaussian"}`)
	f.Add([]byte{250, 254, 254}, []byte{250, 2}, []byte{}, byte(3), `{"action_space":{"type":"Discrete","n":2}}`)
	f.Add([]byte{4}, []byte{2}, []byte{}, byte(0), `{"observation_space":{"type":"Box","low":-1,"high":1,"shape":[4]}}`)
	f.Fuzz(func(t *testing.T, obsDims, actDims, stateDims []byte, flags byte, spec string) {
		names := func(dims []int64) []string {
			out := make([]string, len(dims))
			for i, d := range dims {
				if d < 0 {
					out[i] = "batch"
				}
			}
			return out
		}
		f32 := onnxtest.Float32
		od, ad := fuzzDims(obsDims), fuzzDims(actDims)
		ins := []onnxtest.Value{{Name: "obs", ElemType: f32, Dims: od, Names: names(od)}}
		actType := f32
		if flags&4 != 0 {
			actType = onnxtest.Int64
		}
		outs := []onnxtest.Value{{Name: "logits", ElemType: actType, Dims: ad, Names: names(ad)}}
		if flags&1 != 0 {
			outs = append(outs, onnxtest.Value{Name: "value", ElemType: f32, Dims: []int64{-1}, Names: []string{"batch"}})
		}
		if flags&2 != 0 {
			sd := fuzzDims(stateDims)
			ins = append(ins, onnxtest.Value{Name: "state_in", ElemType: f32, Dims: sd, Names: names(sd)})
			outs = append(outs, onnxtest.Value{Name: "state_out", ElemType: f32, Dims: sd, Names: names(sd)})
		}
		var nodes []onnxtest.Node
		for _, o := range outs {
			nodes = append(nodes, onnxtest.Node{Op: "Identity", Inputs: []string{"obs"}, Outputs: []string{o.Name}})
		}
		var meta [][2]string
		if spec != "" {
			meta = [][2]string{{models.MetadataKey, spec}}
		}
		m, err := inference.LoadBytes("fuzz", onnxtest.Model{Inputs: ins, Outputs: outs, Nodes: nodes, Metadata: meta}.Bytes())
		if err != nil {
			return
		}
		p, err := models.LoadModel(m, "")
		if err != nil {
			return
		}
		if p.Spec.ObservationSpace == nil || p.Spec.ActionSpace == nil {
			t.Fatalf("resolved without spaces: %+v", p.Spec)
		}
		c, err := connectors.New(connectors.Config{Policy: p, Capacity: 4})
		if err != nil {
			return
		}
		// The rows the connectors agreed to are within the tensor limit.
		if w := c.Agent.Width(); w < 0 || w > inference.MaxTensorElements {
			t.Fatalf("connectors accepted a row of %d values", w)
		}
	})
}
