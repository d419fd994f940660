package output

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onnxrl/sampler/envrunner"
)

// readRows reads files with ReadFile and returns their rows.
func readRows(t *testing.T, files ...string) int64 {
	t.Helper()
	var rows int64
	for _, f := range files {
		if err := ReadFile(f, FormatAuto, func(m *envrunner.MultiAgentBatch) error {
			rows += int64(m.Rows())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// TestWriterPartialNames: a file is written as NAME.partial and renamed to NAME when closed
// (full, flushed or at the end); Files and Stats name and count only complete files; readers
// refuse a .partial file.
func TestWriterPartialNames(t *testing.T) {
	for _, ext := range []string{".jsonl", ".parquet"} {
		t.Run(ext, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			path := filepath.Join(t.TempDir(), "x"+ext)
			w, err := NewWriter(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(path + PartialSuffix); err != nil {
				t.Fatalf("the open file is not %s: %v", path+PartialSuffix, err)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s exists before it is complete (%v)", path, err)
			}
			if err := w.Write(single(cartPoleBatch(rng, 30))); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := w.Files(); len(got) != 1 || got[0] != path {
				t.Fatalf("Files after Flush = %v, want [%s]", got, path)
			}
			if n := readRows(t, path); n != 30 {
				t.Fatalf("%d rows readable after Flush, want 30", n)
			}
			// A Flush with nothing new closes nothing; the next batch starts the next file.
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(single(cartPoleBatch(rng, 20))); err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			next := RotatedName(path, 1)
			if got := w.Files(); len(got) != 2 || got[1] != next {
				t.Fatalf("Files = %v, want [%s %s]", got, path, next)
			}
			if err := w.Write(single(cartPoleBatch(rng, 7))); err != nil {
				t.Fatal(err)
			}
			partial := RotatedName(path, 2) + PartialSuffix
			// Readers skip an incomplete file and say why.
			waitFor(t, func() bool { _, err := os.Stat(partial); return err == nil })
			if err := ReadFile(partial, FormatAuto, func(*envrunner.MultiAgentBatch) error { return nil }); !errors.Is(err, ErrPartial) || !strings.Contains(err.Error(), partial) {
				t.Fatalf("reading %s: %v, want ErrPartial naming it", partial, err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			files := w.Files()
			if len(files) != 3 {
				t.Fatalf("Files = %v, want 3", files)
			}
			if st := w.Stats(); st.Rows != 57 || st.Lines != 3 || st.Files != 3 {
				t.Fatalf("Stats = %+v, want 57 rows in 3 lines and files", st)
			}
			if n := readRows(t, files...); n != 57 {
				t.Fatalf("%d rows in the files, want 57", n)
			}
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*"+PartialSuffix))
			if len(left) != 0 || len(w.Incomplete()) != 0 {
				t.Fatalf(".partial files left after Close: %v %v", left, w.Incomplete())
			}
		})
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWriterFlushInterval: with FlushInterval the writer closes its files by itself, so that
// batches written long before a crash are in complete files without a Flush or Close.
func TestWriterFlushInterval(t *testing.T) {
	for _, tc := range []struct {
		ext      string
		encoders int
	}{{".jsonl", 1}, {".jsonl", 3}, {".parquet", 1}} {
		t.Run(tc.ext, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			path := filepath.Join(t.TempDir(), "x"+tc.ext)
			w, err := NewWriter(path, Options{FlushInterval: 20 * time.Millisecond, Encoders: tc.encoders})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			for range 3 {
				if err := w.Write(single(cartPoleBatch(rng, 10))); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, func() bool { return w.Stats().Rows == 30 })
			if n := readRows(t, w.Files()...); n != 30 {
				t.Fatalf("%d rows in the complete files, want 30", n)
			}
		})
	}
	if _, err := NewWriter(filepath.Join(t.TempDir(), "x.jsonl"), Options{FlushInterval: -1}); err == nil {
		t.Fatal("a negative FlushInterval was accepted")
	}
}

// fillingDisk is a disk with room for n more bytes: the write that does not fit writes what
// fits and fails with ENOSPC, as a full disk does.
type fillingDisk struct {
	w io.Writer
	n *int64
}

func (d fillingDisk) Write(p []byte) (int, error) {
	if int64(len(p)) <= *d.n {
		*d.n -= int64(len(p))
		return d.w.Write(p)
	}
	k := int(*d.n)
	*d.n = 0
	n, err := d.w.Write(p[:k])
	if err == nil {
		err = &os.PathError{Op: "write", Path: "disk", Err: syscall.ENOSPC}
	}
	return n, err
}

// TestWriterFullDisk: a disk that fills up in the middle of a file (the repro: the
// summary named a file that did not exist, and the last JSON line was left cut short). The
// complete files are readable and are all that Files and Stats report; the file that met the
// full disk stays under its .partial name, which readers skip, and the error names it with
// what is complete. For every format and many fill points.
func TestWriterFullDisk(t *testing.T) {
	for _, ext := range []string{".jsonl", ".parquet"} {
		for _, room := range []int64{0, 100, 5000, 20000, 44444, 90000} {
			rng := rand.New(rand.NewPCG(5, uint64(room)))
			path := filepath.Join(t.TempDir(), "x"+ext)
			left := room
			w, err := NewWriter(path, Options{MaxFileSize: 16 << 10, wrapFile: func(f io.Writer) io.Writer { return fillingDisk{f, &left} }})
			if err != nil {
				t.Fatal(err)
			}
			var werr error
			for i := 0; i < 100 && werr == nil; i++ {
				werr = w.Write(single(cartPoleBatch(rng, 1+rng.IntN(60))))
			}
			cerr := w.Close()
			if cerr == nil || !errors.Is(cerr, syscall.ENOSPC) {
				t.Fatalf("%s room %d: Close = %v, want no space left", ext, room, cerr)
			}
			st, files, inc := w.Stats(), w.Files(), w.Incomplete()
			if len(inc) != 1 || !IsPartial(inc[0]) || !strings.Contains(cerr.Error(), inc[0]) {
				t.Fatalf("%s room %d: Incomplete = %v, error %v: want the one .partial file, named", ext, room, inc, cerr)
			}
			for _, f := range files {
				if _, err := os.Stat(f); err != nil {
					t.Fatalf("%s room %d: Files names %s: %v", ext, room, f, err)
				}
			}
			if st.Files != len(files) {
				t.Fatalf("%s room %d: Stats %+v for files %v", ext, room, st, files)
			}
			if n := readRows(t, files...); n != st.Rows {
				t.Fatalf("%s room %d: %d rows in the complete files, Stats says %d", ext, room, n, st.Rows)
			}
			all, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*"))
			if len(all) != len(files)+1 {
				t.Fatalf("%s room %d: files on disk %v, want %v and %s", ext, room, all, files, inc[0])
			}
			t.Logf("%s room %d: %d rows in %d complete files; %s", ext, room, st.Rows, st.Files, cerr)
		}
	}
}
