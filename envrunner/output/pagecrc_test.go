package output

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
)

// writeChecked writes batches of an MLP and an LSTM policy (two files) and returns the
// files.
func writeChecked(t testing.TB, dir string, c Compression) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(41, 42))
	w, err := NewWriter(filepath.Join(dir, "c.parquet"), Options{Compression: c, Metadata: Source{Env: "CartPole-v1", Seed: 3}.Metadata()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		m := &envrunner.MultiAgentBatch{EnvSteps: 20}
		*m.Policy("mlp") = *cartPoleBatch(rng, 700)
		*m.Policy("rnn") = *lstmBatch(rng, 90)
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.Files()
}

// TestParquetPageChecksums: every page header carries the CRC-32 of its page, the footer's
// offsets still point at the pages (the file reads back), and MetaChecksums is written.
func TestParquetPageChecksums(t *testing.T) {
	for _, c := range []Compression{Snappy, Zstd, Uncompressed} {
		files := writeChecked(t, t.TempDir(), c)
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n := int(uint32(data[len(data)-8]) | uint32(data[len(data)-7])<<8 | uint32(data[len(data)-6])<<16 | uint32(data[len(data)-5])<<24)
			fmd, _, err := readThriftStruct(data[len(data)-8-n : len(data)-8])
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := keyValue(&fmd, MetaChecksums); !ok {
				t.Fatalf("%s: no %s", p, MetaChecksums)
			}
			// Walk the pages with the checksums required.
			pages := 0
			rgs := fmd.field(fileMetaRowGroups)
			for g := range rgs.elems {
				cols := rgs.elems[g].field(rowGroupColumns)
				for k := range cols.elems {
					md := cols.elems[k].field(chunkMeta)
					start := chunkStart(md)
					end := start + md.field(metaTotalCompressed).i
					for pos := start; pos < end; {
						h, hn, err := readThriftStruct(data[pos:])
						if err != nil {
							t.Fatalf("%s: page header at %d: %v", p, pos, err)
						}
						if h.field(pageHeaderCRC) == nil {
							t.Fatalf("%s: the page at %d has no crc", p, pos)
						}
						pos += int64(hn) + h.field(pageHeaderCompressedSize).i
						pages++
					}
				}
			}
			if err := verifyParquet(p); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			var rows int
			if err := ReadParquet(p, func(m *envrunner.MultiAgentBatch) error { rows += m.Rows(); return nil }); err != nil {
				t.Fatal(err)
			}
			t.Logf("compression %d: %s: %d pages with checksums, %d rows", c, filepath.Base(p), pages, rows)
		}
	}
}

// TestParquetFlippedBytes is the reproduction (of 120 files with one flipped byte, 51
// converted without an error): a byte flipped anywhere in a file, pages, page headers,
// footer or magic, makes ReadParquet fail with an error naming the file, never return data.
func TestParquetFlippedBytes(t *testing.T) {
	dir := t.TempDir()
	files := writeChecked(t, dir, Snappy)
	rng := rand.New(rand.NewPCG(5, 6))
	bad := filepath.Join(dir, "flipped.parquet")
	tried, checksum := 0, 0
	for _, p := range files {
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// Every position in the last 300 bytes (the footer), and 300 spread over the rest.
		var at []int
		for i := max(0, len(orig)-300); i < len(orig); i++ {
			at = append(at, i)
		}
		for range 300 {
			at = append(at, rng.IntN(len(orig)))
		}
		for _, i := range at {
			data := bytes.Clone(orig)
			data[i] ^= byte(1 << rng.IntN(8))
			if err := os.WriteFile(bad, data, 0o644); err != nil {
				t.Fatal(err)
			}
			err := ReadParquet(bad, func(*envrunner.MultiAgentBatch) error { return nil })
			if err == nil {
				t.Fatalf("%s: byte %d of %d flipped, read without an error", filepath.Base(p), i, len(orig))
			}
			if !strings.Contains(err.Error(), bad) {
				t.Fatalf("the error does not name the file: %v", err)
			}
			tried++
			if errors.Is(err, ErrChecksum) {
				checksum++
			}
		}
	}
	t.Logf("%d flipped bytes, all refused; %d by a checksum, the others as not Parquet (magic, footer length or structure)", tried, checksum)
}

// TestJSONLinesDamaged: a JSON line that does not parse (a flipped byte, a last line cut
// short by a full disk) is an error with the file and the line number.
func TestJSONLinesDamaged(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var buf []byte
	for range 4 {
		buf = append(AppendJSON(buf, single(cartPoleBatch(rng, 3))), '\n')
	}
	lines := bytes.SplitAfter(buf, []byte("\n"))
	path := filepath.Join(t.TempDir(), "d.jsonl")
	read := func() error { return ReadJSONLines(path, func(*envrunner.MultiAgentBatch) error { return nil }) }

	flipped := bytes.Clone(buf)
	at := len(lines[0]) + len(lines[1]) + 2 // in line 3, its "type"
	flipped[at] = '}'
	if err := os.WriteFile(path, flipped, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read(); err == nil || !strings.Contains(err.Error(), path+" line 3") {
		t.Fatalf("a damaged line 3: %v, want an error naming %s line 3", err, path)
	}
	cut := buf[:len(buf)-len(lines[3])/2]
	if err := os.WriteFile(path, cut, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read(); err == nil || !strings.Contains(err.Error(), path+" line 4") {
		t.Fatalf("a last line cut short: %v, want an error naming %s line 4", err, path)
	}
}

// FuzzThrift: the compact-protocol reader never panics or allocates without bound, and
// what it reads writes back to bytes that read back the same.
func FuzzThrift(f *testing.F) {
	files := writeChecked(f, f.TempDir(), Snappy)
	data, err := os.ReadFile(files[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data[4:200])
	f.Add(data[len(data)-600 : len(data)-8])
	f.Add([]byte{0x15, 0x00, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := readThriftStruct(b)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("read %d of %d bytes", n, len(b))
		}
		out := appendStruct(nil, &v)
		v2, n2, err := readThriftStruct(out)
		if err != nil || n2 != len(out) {
			t.Fatalf("written back, it does not read: %v (%d of %d bytes)", err, n2, len(out))
		}
		if out2 := appendStruct(nil, &v2); !bytes.Equal(out, out2) {
			t.Fatalf("not stable: %x then %x", out, out2)
		}
	})
}
