package main

import (
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/onnxrl/sampler/envrunner"
)

// TestSamplerStatePerSequence: "state_in": "per_sequence" gives state_in_K views of RLlib's
// layout, a row per seq_lens entry (the per-row sampler's rows at the sequence starts), with
// "max_seq_len" bounding the sequences; the Arrow export refuses such a batch
// (ONNXRL_ERR_STATE), and a bad "state_in" or "max_seq_len" is an invalid argument.
func TestSamplerStatePerSequence(t *testing.T) {
	needSamplerRuntime(t)
	const opts = `{"env":"StatelessCartPole","num_envs":2,"fragment_length":30,"seed":2,"max_seq_len":4`
	rows := mustOpenSampler(t, opts+`}`)
	seqs := mustOpenSampler(t, opts+`,"state_in":"per_sequence"}`)
	for range 2 {
		if _, _, err := rows.sample(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := seqs.sample(); err != nil {
			t.Fatal(err)
		}
		rb, sb := rows.cur.PolicyBatches[envrunner.DefaultPolicyID], seqs.cur.PolicyBatches[envrunner.DefaultPolicyID]
		if !sb.StatePerSequence || len(sb.SeqLens) == sb.Count {
			t.Fatalf("per sequence %v, %d sequences of %d rows", sb.StatePerSequence, len(sb.SeqLens), sb.Count)
		}
		cols, n, _, err := seqs.columns(0)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range views(cols, n) {
			if c.name != "state_in_0" {
				continue
			}
			found = true
			w := sb.StateWidths[0]
			if int(c.shape[0]) != len(sb.SeqLens) || int(c.shape[1]) != w {
				t.Fatalf("state_in_0 shape %v, want [%d %d]", c.shape, len(sb.SeqLens), w)
			}
			got := unsafe.Slice((*float32)(c.data), len(sb.SeqLens)*w)
			want := rb.SequenceStateIn(0, nil)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("state_in_0 value %d: %v, the per-row batch's sequence start %v", i, got[i], want[i])
				}
			}
		}
		if !found {
			t.Fatal("no state_in_0 column")
		}
		for _, l := range sb.SeqLens {
			if l > 4 {
				t.Fatalf("a sequence of %d rows, max_seq_len 4", l)
			}
		}
	}
	var arr cdata.CArrowArray
	var sc cdata.CArrowSchema
	if err := seqs.exportArrow(unsafe.Pointer(&arr), unsafe.Pointer(&sc)); statusOf(err) != statusState {
		t.Fatalf("export of a per-sequence batch: %v, want ONNXRL_ERR_STATE", err)
	}
	for _, bad := range []string{`{"state_in":"rows"}`, `{"max_seq_len":0}`} {
		if _, err := openSampler([]byte(bad)); statusOf(err) != statusInvalidArgument {
			t.Fatalf("%s: %v, want an invalid argument", bad, err)
		}
	}
}
