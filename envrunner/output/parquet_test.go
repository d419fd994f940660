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

// writeRead writes the batches to a file of format f and reads them back.
func writeRead(t *testing.T, path string, f Format, batches ...*envrunner.MultiAgentBatch) []*envrunner.MultiAgentBatch {
	t.Helper()
	w, err := NewWriter(path, Options{Format: f, Metadata: map[string]string{"onnxrl.seed": "7"}})
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

// TestParquetLayoutMismatch: policies with different columns are one clear error.
func TestParquetLayoutMismatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := &envrunner.MultiAgentBatch{}
	*m.Policy("a") = *cartPoleBatch(rng, 3)
	b := cartPoleBatch(rng, 3)
	b.VfPreds = nil
	*m.Policy("b") = *b
	w, err := NewWriter(filepath.Join(t.TempDir(), "m.parquet"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(m); err != nil {
		t.Fatal(err)
	}
	err = w.Close()
	if err == nil || !strings.Contains(err.Error(), "different columns") || !strings.Contains(err.Error(), "m.parquet") {
		t.Fatalf("Close = %v, want an error naming the file and the columns", err)
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
