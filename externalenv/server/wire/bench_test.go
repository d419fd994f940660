package wire

import (
	"testing"

	"github.com/onnxrl/sampler/spaces"
)

// BenchmarkDecodeRequest decodes the body of a /v1/episodes/{id}/action request the way the
// server does: an object whose "observation" member is read with Value, the others skipped.
func BenchmarkDecodeRequest(b *testing.B) {
	for _, tc := range []struct {
		name string
		body string
		s    spaces.Space
	}{
		{"cartpole", `{"observation": [0.0123, -0.5, 0.031, 1.25]}`, spaces.NewBox(-10, 10, 4)},
		{"box64", `{"observation": [` + floats(64) + `], "extra": {"k": [1, "x", null]}}`, spaces.NewBox(-10, 10, 64)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(tc.body)
			var d Decoder
			dst := make([]float32, 0, 64)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				d.Reset(body)
				dst = dst[:0]
				err := d.Object(func(key []byte) error {
					if string(key) == "observation" {
						var err error
						dst, err = d.Value(dst, tc.s)
						return err
					}
					return d.Skip()
				})
				if err == nil {
					err = d.End()
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func floats(n int) string {
	s := ""
	for i := range n {
		if i > 0 {
			s += ", "
		}
		s += "0.123456"
	}
	return s
}
