package benchmarks

import (
	"fmt"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

var batchSizes = []int{1, 16, 256, 4096}

func BenchmarkInference(b *testing.B) {
	if err := inference.Init(); err != nil {
		b.Skipf("ONNX Runtime not available (run `make onnxruntime`): %v", err)
	}
	for _, name := range []string{"cartpole_mlp", "lstm_policy"} {
		p, err := models.Bundled(name)
		if err != nil {
			b.Fatal(err)
		}
		sess, err := inference.NewSession(p.Model, inference.Options{Capacity: 4096, IntraOpThreads: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range batchSizes {
			b.Run(fmt.Sprintf("model=%s/batch=%d/session", name, n), func(b *testing.B) {
				if err := sess.SetBatch(n); err != nil {
					b.Fatal(err)
				}
				for _, t := range sess.Inputs() {
					fill(t.Float32())
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := sess.SetBatch(n); err != nil {
						b.Fatal(err)
					}
					if err := sess.Run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
			})
			b.Run(fmt.Sprintf("model=%s/batch=%d/plain", name, n), func(b *testing.B) {
				plain, err := newPlain(p.Model, sess, n)
				if err != nil {
					b.Fatal(err)
				}
				defer plain.destroy()
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := plain.s.Run(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/sample")
			})
		}
		sess.Close()
	}
}

func fill(x []float32) {
	for i := range x {
		x[i] = float32(i%17)/17 - 0.5
	}
}

// plainSession is the baseline: onnxruntime_go's AdvancedSession with tensors of the batch's
// shapes bound at construction, as its documentation recommends.
type plainSession struct {
	s      *ort.AdvancedSession
	values []ort.Value
}

func newPlain(m *inference.Model, like *inference.Session, n int) (*plainSession, error) {
	if err := like.SetBatch(n); err != nil {
		return nil, err
	}
	p := &plainSession{}
	var ins, outs []ort.Value
	var inNames, outNames []string
	for _, t := range like.Inputs() {
		v, err := ort.NewTensor(ort.NewShape(t.Shape()...), append([]float32(nil), t.Float32()...))
		if err != nil {
			return nil, err
		}
		ins, inNames = append(ins, v), append(inNames, t.Info.Name)
	}
	for _, t := range like.Outputs() {
		v, err := ort.NewEmptyTensor[float32](ort.NewShape(t.Shape()...))
		if err != nil {
			return nil, err
		}
		outs, outNames = append(outs, v), append(outNames, t.Info.Name)
	}
	p.values = append(ins, outs...)
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer so.Destroy()
	if err := so.SetIntraOpNumThreads(1); err != nil {
		return nil, err
	}
	p.s, err = ort.NewAdvancedSessionWithONNXData(m.Bytes(), inNames, outNames, ins, outs, so)
	return p, err
}

func (p *plainSession) destroy() {
	p.s.Destroy()
	for _, v := range p.values {
		v.Destroy()
	}
}
