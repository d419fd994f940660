package main

import (
	"math"

	"github.com/onnxrl/sampler/spaces"
)

// spaceText is spaces.String(s) for text output, with the float32 Box bounds at the largest
// float32 (±3.4028235e+38, which gymnasium's CartPole, and the bundled cartpole_mlp's spec
// exported from it, use for dimensions without a bound) written as ±inf, the way the
// environments' own unbounded Boxes are written: one spelling in sample inspect and sample
// run --list-envs. JSON output keeps the exact numbers.
func spaceText(s spaces.Space) string {
	return spaces.String(unboundedAsInf(s))
}

// unboundedAsInf returns s, or a copy with the float32 Box bounds at ±math.MaxFloat32 made
// ±Inf.
func unboundedAsInf(s spaces.Space) spaces.Space {
	switch s := s.(type) {
	case *spaces.Box:
		if s.Dtype != "" && s.Dtype != "float32" {
			return s
		}
		c := *s
		c.Low, c.High = asInf(s.Low), asInf(s.High)
		return &c
	case *spaces.Dict:
		c := &spaces.Dict{Keys: s.Keys, Spaces: make([]spaces.Space, len(s.Spaces))}
		for i, sub := range s.Spaces {
			c.Spaces[i] = unboundedAsInf(sub)
		}
		return c
	case *spaces.Tuple:
		c := &spaces.Tuple{Spaces: make([]spaces.Space, len(s.Spaces))}
		for i, sub := range s.Spaces {
			c.Spaces[i] = unboundedAsInf(sub)
		}
		return c
	}
	return s
}

func asInf(v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		switch x {
		case math.MaxFloat32:
			x = float32(math.Inf(1))
		case -math.MaxFloat32:
			x = float32(math.Inf(-1))
		}
		out[i] = x
	}
	return out
}
