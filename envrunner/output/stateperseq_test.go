package output

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
)

// perSequence returns a recurrent random batch with state_in in RLlib's layout, one row per
// sequence (envrunner.Config.StatePerSequence), of sequences longer than a row.
func perSequence(rng *rand.Rand) *envrunner.SampleBatch {
	for {
		b := randomBatch(rng, 6+rng.IntN(6))
		if len(b.StateWidths) == 0 || len(b.SeqLens) == b.Count {
			continue
		}
		for k := range b.StateWidths {
			b.StateIn[k] = b.SequenceStateIn(k, nil)
		}
		b.StatePerSequence = true
		if err := b.Validate(); err != nil {
			panic(err)
		}
		return b
	}
}

// TestStatePerSequenceFiles: a batch with state_in per sequence (RLlib's layout) reads back
// from JSON lines as it was, and a Parquet writer refuses it (a row per transition) saying
// why.
func TestStatePerSequenceFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 20 {
		b := perSequence(rng)
		line := AppendJSON(nil, single(b))
		m, err := Decode(line)
		if err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got := m.PolicyBatches[envrunner.DefaultPolicyID]
		if !got.StatePerSequence {
			t.Fatalf("read back per row: %s", line)
		}
		if d := diffBatch(b, got, false); d != "" {
			t.Fatalf("%s: %s", d, line)
		}
		for k := range b.StateWidths {
			if d := diffFloats("state_in", b.StateIn[k], got.StateIn[k], false); d != "" {
				t.Fatal(d)
			}
		}
	}
	w, err := NewWriter(filepath.Join(t.TempDir(), "x.parquet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Write(single(perSequence(rng)))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "state_in per sequence") {
		t.Fatalf("Parquet: %v, want the per-sequence error", err)
	}
}
