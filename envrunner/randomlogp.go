package envrunner

import (
	"math"

	"github.com/onnxrl/sampler/spaces"
)

// uniformLogp is the log-probability (or log-density) of an action under a random policy's
// sampling (spaces' Sample), so that its batches carry action_logp as every other policy's
// do: -log n for each Discrete(n) part, -log 2 a MultiBinary value, -log(high-low) a bounded
// real Box value (-log(high-low+1) an integer one). The parts of a Box that are unbounded are
// drawn from a normal or exponential distribution, whose density depends on the value: they
// are added per row (for an integer Box, the density of the value before it was floored). Dict and Tuple sum their parts.
type uniformLogp struct {
	fixed float32 // the sum of the parts that do not depend on the action
	// perRow are the unbounded Box parts: offset in the action row and how it was drawn.
	perRow []unboundedPart
}

type unboundedPart struct {
	off   int
	kind  int8    // normalPart, abovePart (lo + Exp), belowPart (hi - Exp)
	bound float64 // lo or hi
}

const (
	normalPart = iota
	abovePart
	belowPart
)

// newUniformLogp works out the log-probability of space s's random actions.
func newUniformLogp(s spaces.Space) uniformLogp {
	var u uniformLogp
	var sum float64
	var walk func(s spaces.Space, off int) int
	walk = func(s spaces.Space, off int) int {
		switch s := s.(type) {
		case *spaces.Discrete:
			sum -= math.Log(float64(s.N))
		case *spaces.MultiDiscrete:
			for _, n := range s.Nvec {
				sum -= math.Log(float64(n))
			}
		case *spaces.MultiBinary:
			sum -= float64(s.N) * math.Ln2
		case *spaces.Box:
			isInt := s.Dtype != "" && (s.Dtype[0] == 'i' || s.Dtype[0] == 'u')
			for i := range s.Size() {
				lo, hi := float64(s.Low[i]), float64(s.High[i])
				switch below, above := !math.IsInf(lo, -1), !math.IsInf(hi, 1); {
				case below && above:
					if isInt {
						sum -= math.Log(hi - lo + 1)
					} else {
						sum -= math.Log(hi - lo)
					}
				case !below && !above:
					u.perRow = append(u.perRow, unboundedPart{off: off + i, kind: normalPart})
				case below:
					u.perRow = append(u.perRow, unboundedPart{off: off + i, kind: abovePart, bound: lo})
				default:
					u.perRow = append(u.perRow, unboundedPart{off: off + i, kind: belowPart, bound: hi})
				}
			}
		case *spaces.Dict:
			for _, c := range s.Spaces {
				off = walk(c, off)
			}
			return off
		case *spaces.Tuple:
			for _, c := range s.Spaces {
				off = walk(c, off)
			}
			return off
		}
		return off + s.Size()
	}
	walk(s, 0)
	u.fixed = float32(sum)
	return u
}

// fill sets dst[i] to the log-probability of action row i of acts (rows of w values).
func (u *uniformLogp) fill(dst, acts []float32, w int) {
	if len(u.perRow) == 0 {
		fill(dst, u.fixed)
		return
	}
	for i := range dst {
		v := float64(u.fixed)
		for _, p := range u.perRow {
			x := float64(acts[i*w+p.off])
			switch p.kind {
			case normalPart:
				v -= 0.5*x*x + 0.5*math.Log(2*math.Pi)
			case abovePart:
				v -= x - p.bound
			default:
				v -= p.bound - x
			}
		}
		dst[i] = float32(v)
	}
}
