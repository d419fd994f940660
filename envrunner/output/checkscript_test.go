package output

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onnxrl/sampler/envrunner"
)

// CheckParquet runs scripts/check_parquet.py (root: the repository's root) on files with
// the Python of $ONNXRL_PYARROW_PYTHON, of the virtual environment `make test` makes
// (build/pyarrow-venv), or python3; wantRows < 0 leaves the row count unchecked. It returns
// the script's output and error; the test is skipped without Python or pyarrow.
func checkParquet(t *testing.T, root string, wantRows int64, files ...string) (string, error) {
	t.Helper()
	py := os.Getenv("ONNXRL_PYARROW_PYTHON")
	if py == "" {
		if venv := filepath.Join(root, "build", "pyarrow-venv", "bin", "python"); fileExists(venv) {
			py = venv
		} else if py, _ = exec.LookPath("python3"); py == "" {
			t.Skip("python3 is not installed")
		}
	}
	args := []string{filepath.Join(root, "scripts", "check_parquet.py")}
	if wantRows >= 0 {
		args = append(args, "--rows", fmt.Sprint(wantRows))
	}
	out, err := exec.Command(py, append(args, files...)...).CombinedOutput()
	if strings.Contains(string(out), "skipped: pyarrow is not installed") {
		t.Skipf("check_parquet.py skipped (make test installs pyarrow in build/pyarrow-venv): %s", strings.TrimSpace(string(out)))
	}
	return string(out), err
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestCheckParquetScript: a reader no one here wrote (pyarrow, through
// scripts/check_parquet.py) reads every kind of file the writer makes: a rotated set of a
// multi-agent run with an MLP and an LSTM policy (two file sets, closed by the flush
// interval), checking schema, row counts and page checksums; the .partial file of a writer
// not closed is skipped; a byte flipped in a page is refused by pyarrow's checksum check.
func TestCheckParquetScript(t *testing.T) {
	root := filepath.Join("..", "..")
	rng := rand.New(rand.NewPCG(7, 8))
	path := filepath.Join(t.TempDir(), "c.parquet")
	w, err := NewWriter(path, Options{Metadata: Source{Env: "CartPole-v1", Seed: 3}.Metadata(), FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rows := int64(0)
	for i := range 4 {
		m := &envrunner.MultiAgentBatch{EnvSteps: 20}
		*m.Policy("mlp") = *cartPoleBatch(rng, 12)
		*m.Policy("rnn") = *lstmBatch(rng, 9)
		m.AgentSteps = 21
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
		rows += 21
		if i == 1 {
			if err := w.Flush(); err != nil { // a rotated set: c.parquet, c-000001.parquet, ...
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	files := w.Files()
	if len(files) != 4 {
		t.Fatalf("files %v, want two of each file set", files)
	}
	// One more batch stays in the open (.partial) files: skipped, not counted.
	m := &envrunner.MultiAgentBatch{EnvSteps: 20}
	*m.Policy("mlp") = *cartPoleBatch(rng, 5)
	if err := w.Write(m); err != nil {
		t.Fatal(err)
	}
	partial := RotatedName(path, 2) + PartialSuffix
	waitFor(t, func() bool { return fileExists(partial) })
	out, err := checkParquet(t, root, rows, append(files, partial)...)
	if err != nil {
		t.Fatalf("check_parquet.py: %v\n%s", err, out)
	}
	if n := strings.Count(out, ": ok,"); n != len(files) || !strings.Contains(out, "skipped: an incomplete file") {
		t.Fatalf("check_parquet.py passed %d of %d files:\n%s", n, len(files), out)
	}
	t.Logf("%s", out)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// A flipped byte in the middle of the first page's bytes.
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	data[pageMiddle(t, data)] ^= 0x40
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = checkParquet(t, root, -1, bad)
	if err == nil || !strings.Contains(out, "CRC") {
		t.Fatalf("check_parquet.py read a file with a flipped byte: %v\n%s", err, out)
	}
	t.Logf("flipped: %s", strings.TrimSpace(out))
}

// pageMiddle returns the offset of the middle byte of the first page of a Parquet file's
// first column chunk.
func pageMiddle(t *testing.T, data []byte) int {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	fmd, _, err := readThriftStruct(data[len(data)-8-n : len(data)-8])
	if err != nil {
		t.Fatal(err)
	}
	md := fmd.field(fileMetaRowGroups).elems[0].field(rowGroupColumns).elems[0].field(chunkMeta)
	at := int(chunkStart(md))
	h, hn, err := readThriftStruct(data[at:])
	if err != nil {
		t.Fatal(err)
	}
	size := int(h.field(pageHeaderCompressedSize).i)
	if size == 0 {
		t.Fatal("the first page is empty")
	}
	return at + hn + size/2
}
