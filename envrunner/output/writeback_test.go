package output

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestWriteback: a file written through writeback's hints in small chunks reads back whole,
// the hints move on chunk by chunk, and a pipe (which takes no hints) is no failure.
func TestWriteback(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := writeback{chunk: 64 << 10}
	var want []byte
	piece := make([]byte, 10_000)
	for i := range 100 {
		for k := range piece {
			piece[k] = byte(i + k)
		}
		if _, err := f.Write(piece); err != nil {
			t.Fatal(err)
		}
		want = append(want, piece...)
		b.wrote(f, int64(len(want)))
		if b.started > int64(len(want)) || b.dropped > b.started {
			t.Fatalf("after %d bytes: started %d, dropped %d", len(want), b.started, b.dropped)
		}
	}
	if runtime.GOOS == "linux" && (b.dropped == 0 || int64(len(want))-b.started >= b.chunk) {
		t.Fatalf("hints did not move on: started %d, dropped %d of %d bytes", b.started, b.dropped, len(want))
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the file differs from what was written")
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	p := writeback{chunk: 1}
	p.wrote(w, 10)
	p.wrote(w, 20)
}
