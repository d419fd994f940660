package output

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
)

// writeAll writes batches into a new file at path with opts and closes it.
func writeAll(t *testing.T, path string, opts Options, batches ...*envrunner.MultiAgentBatch) {
	t.Helper()
	w, err := NewWriter(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range batches {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeRead writes the batches to a file of format f and reads them back.
func writeRead(t *testing.T, path string, f Format, batches ...*envrunner.MultiAgentBatch) []*envrunner.MultiAgentBatch {
	t.Helper()
	writeAll(t, path, Options{Format: f, Metadata: map[string]string{"onnxrl.seed": "7"}}, batches...)
	var got []*envrunner.MultiAgentBatch
	if err := ReadFile(path, f, func(m *envrunner.MultiAgentBatch) error {
		got = append(got, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestParquetRoundTrip: every column of random batches (every action space, optional and
// state columns, special floats) comes back from a Parquet file as it went in, and gives the
// same JSON line.
func TestParquetRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	for i := range 200 {
		b := randomBatch(rng, 1+rng.IntN(9))
		m := single(b)
		if i%3 == 1 {
			m.PolicyBatches = map[string]*envrunner.SampleBatch{"p\"ö": b}
			m.EnvSteps = rng.IntN(20)
		}
		got := writeRead(t, filepath.Join(dir, "x.parquet"), FormatParquet, m, m)
		if len(got) != 2 {
			t.Fatalf("case %d: %d batches back, want 2", i, len(got))
		}
		for _, g := range got {
			if d := diffMulti(m, g, false); d != "" {
				t.Fatalf("case %d: %s", i, d)
			}
			if want, line := AppendJSON(nil, m), AppendJSON(nil, g); !bytes.Equal(want, line) {
				t.Fatalf("case %d: JSON of the batch read back differs\n got %s\nwant %s", i, line, want)
			}
		}
	}
}

// TestParquetMultiPolicy: the policies of one batch share a record and come back apart.
func TestParquetMultiPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := &envrunner.MultiAgentBatch{EnvSteps: 33}
	*m.Policy("b") = *cartPoleBatch(rng, 30)
	*m.Policy("a") = *cartPoleBatch(rng, 20)
	m.AgentSteps = 50
	got := writeRead(t, filepath.Join(t.TempDir(), "m.parquet"), FormatAuto, m)
	if len(got) != 1 {
		t.Fatalf("%d batches, want 1", len(got))
	}
	if d := diffMulti(m, got[0], false); d != "" {
		t.Fatal(d)
	}
}

// lstmBatch is a CartPole batch of a recurrent policy with a wider observation: two states
// of width 3, sequences of up to 4 rows.
func lstmBatch(rng *rand.Rand, n int) *envrunner.SampleBatch {
	b := cartPoleBatch(rng, n)
	b.ObsWidth = 6
	b.Obs, b.NewObs = randomFloats(rng, 6*n), randomFloats(rng, 6*n)
	b.StateWidths = []int{3, 3}
	b.StateIn = [][]float32{randomFloats(rng, 3*n), randomFloats(rng, 3*n)}
	b.StateOut = [][]float32{randomFloats(rng, 3*n), randomFloats(rng, 3*n)}
	for left := n; left > 0; left -= 4 {
		b.SeqLens = append(b.SeqLens, int32(min(4, left)))
	}
	return b
}

// TestParquetPolicyFiles: in one run, policies with other columns than the first layout
// written (an LSTM beside two MLPs) go to file sets of their own, x-<policy>.parquet,
// rotated like the main one; each file reads back to exactly its policies' rows, with the
// env steps of the batch they came from.
func TestParquetPolicyFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	path := filepath.Join(dir, "m.parquet")
	w, err := NewWriter(path, Options{MaxFileSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []*envrunner.MultiAgentBatch
	for i := range 3 {
		m := &envrunner.MultiAgentBatch{EnvSteps: 40 + i}
		*m.Policy("a_mlp") = *cartPoleBatch(rng, 10+i)
		*m.Policy("b_mlp") = *cartPoleBatch(rng, 5)
		if i != 1 {
			*m.Policy("lstm/x") = *lstmBatch(rng, 7)
		}
		for _, b := range m.PolicyBatches {
			m.AgentSteps += b.Count
		}
		want = append(want, m)
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	lstm := filepath.Join(dir, "m-lstm_x.parquet")
	wantFiles := []string{path, lstm, RotatedName(path, 1), RotatedName(path, 2), RotatedName(lstm, 1)}
	if got := w.Files(); strings.Join(got, " ") != strings.Join(wantFiles, " ") {
		t.Fatalf("files %v, want %v", got, wantFiles)
	}
	read := func(names ...string) []*envrunner.MultiAgentBatch {
		var got []*envrunner.MultiAgentBatch
		for _, name := range names {
			if err := ReadParquet(name, func(m *envrunner.MultiAgentBatch) error {
				got = append(got, m)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	only := func(m *envrunner.MultiAgentBatch, ids ...string) *envrunner.MultiAgentBatch {
		o := &envrunner.MultiAgentBatch{EnvSteps: m.EnvSteps, PolicyBatches: map[string]*envrunner.SampleBatch{}}
		for _, id := range ids {
			if b := m.PolicyBatches[id]; b != nil {
				o.PolicyBatches[id] = b
				o.AgentSteps += b.Count
			}
		}
		return o
	}
	mains := read(path, RotatedName(path, 1), RotatedName(path, 2))
	lstms := read(lstm, RotatedName(lstm, 1))
	if len(mains) != 3 || len(lstms) != 2 {
		t.Fatalf("%d main and %d LSTM batches back, want 3 and 2", len(mains), len(lstms))
	}
	for i, m := range want {
		if d := diffMulti(only(m, "a_mlp", "b_mlp"), mains[i], true); d != "" {
			t.Errorf("main batch %d: %s", i, d)
		}
	}
	for i, j := range []int{0, 2} {
		if d := diffMulti(only(want[j], "lstm/x"), lstms[i], true); d != "" {
			t.Errorf("LSTM batch %d: %s", i, d)
		}
	}
}

// TestParquetLayoutChange: a policy stays in the file set where its first rows went; when its
// columns change later, that is one clear error naming the file and the columns.
func TestParquetLayoutChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	w, err := NewWriter(filepath.Join(t.TempDir(), "m.parquet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, vf := range []bool{true, false} {
		b := cartPoleBatch(rng, 3)
		if !vf {
			b.VfPreds = nil
		}
		if err := w.Write(single(b)); err != nil {
			t.Fatal(err)
		}
	}
	err = w.Close()
	if err == nil || !strings.Contains(err.Error(), "other columns") || !strings.Contains(err.Error(), "m.parquet") {
		t.Fatalf("Close = %v, want an error naming the file and the columns", err)
	}
}

func TestPolicyPath(t *testing.T) {
	for _, tt := range []struct{ path, policy, want string }{
		{"out/x.parquet", "policy_1", "out/x-policy_1.parquet"},
		{"x.parquet", "a/b c.ö", "x-a_b_c___.parquet"},
		{"x.parquet", "000001", "x-policy_000001.parquet"},
		{"x.parquet", "", "x-policy_.parquet"},
		{"x", "p", "x-p"},
	} {
		if got := PolicyPath(tt.path, tt.policy); got != tt.want {
			t.Errorf("PolicyPath(%q, %q) = %q, want %q", tt.path, tt.policy, got, tt.want)
		}
	}
}

// TestParquetEmpty: a writer that got no batch still leaves a valid file.
func TestParquetEmpty(t *testing.T) {
	got := writeRead(t, filepath.Join(t.TempDir(), "e.parquet"), FormatParquet)
	if len(got) != 0 {
		t.Fatalf("%d batches from an empty file", len(got))
	}
}

// FuzzReadParquet: damaged or foreign bytes are an error, never a crash.
func FuzzReadParquet(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "seed.parquet")
	rng := rand.New(rand.NewPCG(31, 32))
	w, err := NewWriter(path, Options{})
	if err != nil {
		f.Fatal(err)
	}
	if err := w.Write(single(randomBatch(rng, 5))); err != nil {
		f.Fatal(err)
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = ReadParquet(p, func(m *envrunner.MultiAgentBatch) error {
			for _, b := range m.PolicyBatches {
				if err := b.Validate(); err != nil {
					t.Fatalf("a batch read back is not valid: %v", err)
				}
			}
			return nil
		})
	})
}
