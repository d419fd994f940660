package inference

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/internal/onnxtest"
)

// FuzzNativeConv: the fuzzer's bytes choose one 2-D convolution (NCHW; kernel, stride, pads,
// dilation and group as PyTorch's Conv2d exports them, sometimes out of range) with or without
// a bias and a fused Relu, on a small input whose batch may be 0. Channel counts reach the
// sizes at which the provider switches to Winograd (ep/src/ops/conv.cc, WinoTileSize: one
// group, no pads, C x stride^2 >= 32 and 16 output channels or more, a kernel of twice the
// stride or 3x3 of stride 1), so that both its forms and the direct one are compared with the
// CPU provider, with one or two intra-op threads, under FuzzNativeGraphs' rules: the same
// outputs to 1e-5 of the largest magnitude, an error where the CPU provider refuses the graph,
// and no crash. It also checks that our provider ran the Conv.
func FuzzNativeConv(f *testing.F) {
	for _, seed := range [][]byte{ // genConv reads n, c, group, h, w, oc, kh, kw, sh, sw, ...
		{},
		{1, 3, 2, 19, 19, 31, 7, 7, 3, 3, 1, 1, 0, 0},                   // a Nature CNN's 8x8/4 layer (Winograd)
		{2, 31, 2, 8, 8, 63, 3, 3, 1, 1, 1, 1, 0, 0},                    // its 4x4/2 layer (Winograd)
		{3, 63, 2, 6, 6, 63, 2, 2, 0, 0, 1, 1, 1, 0},                    // its 3x3/1 layer (Winograd)
		{0, 39, 2, 7, 10, 39, 2, 2, 0, 0, 1, 1, 0, 1},                   // an empty batch
		{1, 5, 1, 8, 6, 3, 1, 2, 1, 1, 0, 0, 1, 2, 1, 0, 0, 1, 2, 0, 0}, // pads, 2 groups, dilation
		{2, 7, 0, 9, 9, 15, 1, 2, 2, 0, 0, 0, 1, 1, 1, 1, 1, 0, 1},      // depthwise, padded
		{3, 2, 2, 1, 1, 1, 4, 4, 0, 0, 1, 1, 1, 1},                      // a kernel larger than the input
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		needNative(t)
		model, threads, desc := genConv(data)
		m, err := LoadBytes("fuzz-conv", model.Bytes())
		if err != nil {
			t.Fatalf("the generated model does not load: %v\n%s", err, desc)
		}
		opts := Options{IntraOpThreads: threads}
		want, cpuErr := runOnce(m, opts)
		opts.Device = "native"
		got, natErr := runOnce(m, opts)
		if !checkAgainstCPU(t, want, got, cpuErr, natErr, desc) {
			return
		}
		if on := convOnNative(t, m); !on {
			t.Fatalf("the Conv ran on the CPU provider, so nothing of ours was compared\n%s", desc)
		}
	})
}

// convOnNative reports whether a session of m on the native device assigns its Conv node to
// our provider.
func convOnNative(t *testing.T, m *Model) bool {
	s, err := NewSession(m, Options{IntraOpThreads: 1, Device: "native", RecordAssignment: true})
	if err != nil {
		t.Fatalf("a session that ran before fails to open: %v", err)
	}
	defer s.Close()
	subs, err := s.Assignment()
	if err != nil {
		t.Fatalf("the assignment record: %v", err)
	}
	for _, g := range subs {
		for _, n := range g.Nodes {
			if n.OpType == "Conv" {
				return g.Provider == NativeProvider
			}
		}
	}
	return false
}

// genConv builds the model FuzzNativeConv runs, the intra-op threads to run it with (1 or 2)
// and a description of both for failures.
func genConv(data []byte) (_ onnxtest.Model, threads int, _ string) {
	seed := int64(0)
	for _, c := range data {
		seed = seed*31 + int64(c)
	}
	src := &byteSource{b: data, rng: rand.New(rand.NewSource(seed + 1))}
	rng := rand.New(rand.NewSource(seed))
	n := int64(src.intn(4))
	c := 1 + int64(src.intn(64))
	group := int64(1)
	switch src.intn(6) {
	case 0:
		group = c // depthwise
	case 1:
		group = 2
	}
	h, w := 1+int64(src.intn(20)), 1+int64(src.intn(20))
	oc := 1 + int64(src.intn(64))
	if group > 1 && src.intn(4) != 0 {
		// Mostly valid: whole groups of input and output channels.
		c = group * max(1, c/group)
		oc = group * max(1, oc/group)
	}
	kh, kw := 1+int64(src.intn(8)), 1+int64(src.intn(8))
	sh, sw := 1+int64(src.intn(4)), 1+int64(src.intn(4))
	var pads [4]int64
	if src.intn(3) == 0 {
		for i := range pads {
			pads[i] = int64(src.intn(3))
		}
	}
	dh, dw := int64(1), int64(1)
	if src.intn(5) == 0 {
		dh, dw = 1+int64(src.intn(3)), 1+int64(src.intn(3))
	}
	bias, relu := src.intn(2) == 0, src.intn(2) == 0
	threads = 1 + src.intn(2)

	floats := func(name string, dims ...int64) onnxtest.Initializer {
		k := int64(1)
		for _, d := range dims {
			k *= d
		}
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.Float64()*2 - 1)
		}
		return onnxtest.Initializer{Name: name, Dims: dims, Data: v}
	}
	var model onnxtest.Model
	model.Inputs = []onnxtest.Value{{Name: "x", ElemType: onnxtest.Float32, Dims: []int64{n, c, h, w}}}
	model.Initializers = append(model.Initializers, floats("w", oc, max(1, c/group), kh, kw))
	ins := []string{"x", "w"}
	if bias {
		model.Initializers = append(model.Initializers, floats("b", oc))
		ins = append(ins, "b")
	}
	out := "y"
	if relu {
		out = "conv"
	}
	model.Nodes = []onnxtest.Node{{Op: "Conv", Inputs: ins, Outputs: []string{out}, Attrs: []onnxtest.Attr{
		onnxtest.IntsAttr("kernel_shape", kh, kw), onnxtest.IntsAttr("strides", sh, sw),
		onnxtest.IntsAttr("pads", pads[:]...), onnxtest.IntsAttr("dilations", dh, dw),
		onnxtest.IntAttr("group", group),
	}}}
	if relu {
		model.Nodes = append(model.Nodes, onnxtest.Node{Op: "Relu", Inputs: []string{out}, Outputs: []string{"y"}})
	}
	model.Outputs = []onnxtest.Value{{Name: "y", ElemType: onnxtest.Float32, NoShape: true}}
	var d strings.Builder
	fmt.Fprintf(&d, "x [%d %d %d %d], w [%d %d %d %d], strides %dx%d, pads %v, dilations %dx%d, group %d, bias %v, relu %v, %d threads",
		n, c, h, w, oc, max(1, c/group), kh, kw, sh, sw, pads, dh, dw, group, bias, relu, threads)
	return model, threads, d.String()
}
