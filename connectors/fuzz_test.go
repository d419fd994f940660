package connectors

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/onnxrl/sampler/spaces"
)

// randomSpace builds a small random space, nesting Dict and Tuple up to depth 2.
func randomSpace(rng *rand.Rand, depth int) spaces.Space {
	k := rng.IntN(6)
	if depth >= 2 {
		k = rng.IntN(4)
	}
	switch k {
	case 0:
		shape := []int{1 + rng.IntN(3)}
		if rng.IntN(2) == 0 {
			shape = append(shape, 1+rng.IntN(2))
		}
		if rng.IntN(2) == 0 {
			return spaces.NewBox(float32(math.Inf(-1)), float32(math.Inf(1)), shape...)
		}
		return spaces.NewBox(-2, 3, shape...)
	case 1:
		return &spaces.Discrete{N: 1 + rng.Int64N(5), Start: rng.Int64N(3) - 1}
	case 2:
		nvec := make([]int64, 1+rng.IntN(3))
		for i := range nvec {
			nvec[i] = 1 + rng.Int64N(4)
		}
		return &spaces.MultiDiscrete{Nvec: nvec}
	case 3:
		return &spaces.MultiBinary{N: 1 + rng.IntN(3)}
	case 4:
		m := map[string]spaces.Space{}
		for i := range 1 + rng.IntN(3) {
			m[string(rune('a'+i))+string(rune('a'+rng.IntN(26)))] = randomSpace(rng, depth+1)
		}
		return spaces.NewDict(m)
	}
	ts := make([]spaces.Space, 1+rng.IntN(3))
	for i := range ts {
		ts[i] = randomSpace(rng, depth+1)
	}
	return &spaces.Tuple{Spaces: ts}
}

// Random spaces and random observations through the whole agent chain: no panic, the row has
// the pipeline's width, and valid observations give finite rows that start with gymnasium's
// flatten (before the filter) and end with the previous actions and rewards.
func FuzzAgentChain(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint8(0))
	f.Add(uint64(7), uint64(3), uint8(5))
	f.Add(uint64(42), uint64(42), uint8(255))
	f.Fuzz(func(t *testing.T, seed1, seed2 uint64, corrupt uint8) {
		rng := rand.New(rand.NewPCG(seed1, seed2))
		obs := randomSpace(rng, 0)
		act := randomSpace(rng, 1)
		frames := 1 + rng.IntN(3)
		filter := NewMeanStdFilter(float64(rng.IntN(2)) * 5)
		prevA := NewPrevActions(act, 1+rng.IntN(2))
		p, err := NewAgentPipeline(obs, NewFlatten(obs), NewClip(-100, 100), filter, NewFrameStack(frames), prevA, NewPrevRewards(2))
		if err != nil {
			t.Fatalf("%s: %v", spaces.String(obs), err)
		}
		want := obs.FlatDim()*frames + prevA.N*act.FlatDim() + 2
		if p.Width() != want {
			t.Fatalf("%s: width %d, want %d", spaces.String(obs), p.Width(), want)
		}
		raw := make([]float32, obs.Size())
		a := make([]float32, act.Size())
		row := make([]float32, p.Width())
		dirty := map[int]bool{} // slots with a corrupt observation in their frame history
		for step := range 20 {
			slot := p.Slot(rng.IntN(3), "x")
			obs.Sample(rng, raw)
			if corrupt != 0 && rng.IntN(4) == 0 {
				dirty[slot] = true
				for i := range raw {
					switch rng.IntN(4) {
					case 0:
						raw[i] = float32(math.NaN())
					case 1:
						raw[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
					case 2:
						raw[i] = float32(rng.NormFloat64() * 1e30)
					}
				}
			}
			p.Write(row, slot, raw, float64(step))
			if len(row) != want {
				t.Fatal("row width changed")
			}
			if !dirty[slot] {
				for i, v := range row {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Fatalf("%s: row[%d] = %v for a valid observation %v", spaces.String(obs), i, v, raw)
					}
				}
			}
			if rng.IntN(5) == 0 {
				p.Reset(slot)
				dirty[slot] = false
			}
			act.Sample(rng, a)
			if corrupt != 0 && rng.IntN(3) == 0 {
				a[0] = 1e6 // out of range: a zero one-hot, or a large finite value
			}
			p.RecordAction(slot, a)
		}
	})
}
