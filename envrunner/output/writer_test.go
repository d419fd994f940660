package output

import (
	"bufio"
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onnxrl/sampler/envrunner"
)

// readLines returns the lines of the files, in order, checking that each file ends with a
// newline.
func readLines(t *testing.T, files ...string) [][]byte {
	t.Helper()
	var lines [][]byte
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("%s does not end with a newline", name)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<30)
		for sc.Scan() {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	return lines
}

func TestWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	path := filepath.Join(t.TempDir(), "new", "dir", "x.jsonl") // the directory is created
	var back []*envrunner.MultiAgentBatch
	w, err := NewWriter(path, Options{OnWritten: func(m *envrunner.MultiAgentBatch) { back = append(back, m) }})
	if err != nil {
		t.Fatal(err)
	}
	var sent []*envrunner.MultiAgentBatch
	var want [][]byte
	bytesWant := int64(0)
	for i := range 20 {
		m := randomMulti(rng)
		if i%5 == 0 {
			m = &envrunner.MultiAgentBatch{} // no rows: nothing written, but handed back
		}
		sent = append(sent, m)
		if m.Rows() > 0 {
			line := AppendJSON(nil, m)
			want = append(want, line)
			bytesWant += int64(len(line)) + 1
		}
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, path); len(got) != len(want) {
		t.Fatalf("after Flush: %d lines, want %d", len(got), len(want))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, path)
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("line %d\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if len(back) != len(sent) {
		t.Fatalf("OnWritten got %d batches, want %d", len(back), len(sent))
	}
	for i := range sent {
		if back[i] != sent[i] {
			t.Fatalf("OnWritten batch %d is not the one written", i)
		}
	}
	rowsWant := int64(0)
	for _, m := range sent {
		rowsWant += int64(m.Rows())
	}
	if s := w.Stats(); s != (Stats{Lines: int64(len(want)), Rows: rowsWant, Bytes: bytesWant, Files: 1}) {
		t.Errorf("Stats = %+v, want %d lines %d bytes 1 file", s, len(want), bytesWant)
	}
	if f := w.Files(); len(f) != 1 || f[0] != path {
		t.Errorf("Files = %q, want [%q]", f, path)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := w.Write(sent[1]); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := w.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}
}

func TestWriterRotation(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	path := filepath.Join(dir, "x.jsonl")
	const max = 2000
	w, err := NewWriter(path, Options{MaxFileSize: max, QueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for range 60 {
		m := single(cartPoleBatch(rng, 1+rng.IntN(6)))
		want = append(want, AppendJSON(nil, m))
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := w.Files()
	if len(files) < 3 {
		t.Fatalf("%d files, want several", len(files))
	}
	if files[0] != path {
		t.Errorf("first file %s, want %s", files[0], path)
	}
	for i, name := range files[1:] {
		if want := RotatedName(path, i+1); name != want {
			t.Errorf("file %d is %s, want %s", i+1, name, want)
		}
	}
	if got := filepath.Base(files[1]); got != "x-000001.jsonl" {
		t.Errorf("second file %s, want x-000001.jsonl", got)
	}
	onDisk, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(onDisk) != len(files) {
		t.Errorf("files on disk %q, want %q", onDisk, files)
	}
	var total int64
	for i, name := range files {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		total += st.Size()
		lines := readLines(t, name)
		// A file is closed by the line that takes it to the limit, not before.
		if i < len(files)-1 {
			if st.Size() < max {
				t.Errorf("%s has %d bytes, below the limit", name, st.Size())
			}
			if last := int64(len(lines[len(lines)-1]) + 1); st.Size()-last >= max {
				t.Errorf("%s went on after reaching the limit", name)
			}
		}
		for _, line := range lines {
			if _, err := Decode(line); err != nil {
				t.Fatalf("%s: a line does not decode: %v", name, err)
			}
		}
	}
	got := readLines(t, files...)
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("line %d differs", i)
		}
	}
	if s := w.Stats(); s.Files != len(files) || s.Lines != int64(len(want)) || s.Bytes != total {
		t.Errorf("Stats = %+v, want %d files %d lines %d bytes", s, len(files), len(want), total)
	}
}

func TestRotatedName(t *testing.T) {
	for _, tt := range []struct {
		path string
		i    int
		want string
	}{
		{"x.jsonl", 1, "x-000001.jsonl"},
		{"out/x.jsonl", 2, "out/x-000002.jsonl"},
		{"out.d/x", 3, "out.d/x-000003"},
		{"x.json.gz", 1, "x.json-000001.gz"},
		{"x.jsonl", 1234567, "x-1234567.jsonl"},
	} {
		if got := RotatedName(tt.path, tt.i); got != tt.want {
			t.Errorf("RotatedName(%q, %d) = %q, want %q", tt.path, tt.i, got, tt.want)
		}
	}
}

// A slow consumer holds the producer back; nothing is lost and batches can be recycled.
func TestWriterBackpressure(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	path := filepath.Join(t.TempDir(), "x.jsonl")
	free := make(chan *envrunner.MultiAgentBatch, 3)
	for range 3 {
		free <- single(&envrunner.SampleBatch{})
	}
	w, err := NewWriter(path, Options{QueueSize: 1, OnWritten: func(m *envrunner.MultiAgentBatch) {
		time.Sleep(2 * time.Millisecond)
		free <- m
	}})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for range 50 {
		m := <-free // a recycled batch: the writer is done with it
		*m.PolicyBatches[envrunner.DefaultPolicyID] = *cartPoleBatch(rng, 1+rng.IntN(4))
		want = append(want, AppendJSON(nil, m))
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, path)
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("line %d differs", i)
		}
	}
}

// Close writes out whatever is still queued.
func TestWriterCloseFlushes(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := NewWriter(path, Options{QueueSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	for range 64 {
		if err := w.Write(single(cartPoleBatch(rng, 50))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, path); len(got) != 64 {
		t.Fatalf("%d lines after Close, want 64", len(got))
	}
}

// Several producers, Flush and Close from several goroutines.
func TestWriterConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := NewWriter(path, Options{QueueSize: 2, MaxFileSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 17))
			for i := range 25 {
				if err := w.Write(single(cartPoleBatch(rng, 3))); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					if err := w.Flush(); err != nil {
						t.Error(err)
					}
					_ = w.Stats()
					_ = w.Files()
				}
			}
		}()
	}
	wg.Wait()
	var cwg sync.WaitGroup
	for range 3 {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			if err := w.Close(); err != nil {
				t.Error(err)
			}
		}()
	}
	cwg.Wait()
	if got := readLines(t, w.Files()...); len(got) != 100 {
		t.Fatalf("%d lines, want 100", len(got))
	}
}

// Writes racing with Close either succeed (and are written) or return ErrClosed.
func TestWriterWriteRacesClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := NewWriter(path, Options{QueueSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	accepted := 0
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 18))
			for {
				err := w.Write(single(cartPoleBatch(rng, 1)))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := readLines(t, path); len(got) != accepted {
		t.Fatalf("%d lines, want the %d accepted batches", len(got), accepted)
	}
}

func TestWriterRejectsBadBatch(t *testing.T) {
	w, err := NewWriter(filepath.Join(t.TempDir(), "x.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := cartPoleBatch(rand.New(rand.NewPCG(1, 1)), 3)
	b.Rewards = b.Rewards[:2]
	if err := w.Write(single(b)); err == nil || !strings.Contains(err.Error(), "column rewards") {
		t.Errorf("Write of a bad batch: %v, want an error naming rewards", err)
	}
	if err := w.Write(nil); err == nil {
		t.Error("Write(nil) did not fail")
	}
}

func TestNewWriterErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := NewWriter(filepath.Join(dir, "x"), Options{MaxFileSize: -1}); err == nil {
		t.Error("negative MaxFileSize accepted")
	}
	if _, err := NewWriter(filepath.Join(dir, "x"), Options{QueueSize: -1}); err == nil {
		t.Error("negative QueueSize accepted")
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWriter(filepath.Join(file, "x.jsonl"), Options{}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a path under a file: %v, want an error naming it", err)
	}
	if _, err := NewWriter(dir, Options{}); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("a directory as path: %v, want an error naming it", err)
	}
}

// checkSticky writes until the writer fails and checks that the error sticks, names the
// file, that producers are not blocked, and that every batch still comes back.
func checkSticky(t *testing.T, w *Writer, back *int, mu *sync.Mutex, name string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(19, 20))
	sent := 0
	var first error
	for range 200 {
		err := w.Write(single(cartPoleBatch(rng, 40)))
		if err != nil {
			first = err
			break
		}
		sent++
	}
	if first == nil {
		first = w.Flush()
	}
	if first == nil || !strings.Contains(first.Error(), name) || !strings.HasPrefix(first.Error(), "output: ") {
		t.Fatalf("error %v, want one naming %s", first, name)
	}
	for range 3 {
		if err := w.Write(single(cartPoleBatch(rng, 1))); err == nil || err.Error() != first.Error() {
			t.Errorf("Write after the failure: %v, want %v", err, first)
		}
		if err := w.Flush(); err == nil || err.Error() != first.Error() {
			t.Errorf("Flush after the failure: %v, want %v", err, first)
		}
	}
	// Close adds the files left incomplete to the same error.
	closeErr := w.Close()
	if closeErr == nil || !strings.HasPrefix(closeErr.Error(), first.Error()) {
		t.Errorf("Close after the failure: %v, want %v", closeErr, first)
	}
	if err := w.Close(); err == nil || err.Error() != closeErr.Error() {
		t.Errorf("second Close: %v, want %v", err, closeErr)
	}
	mu.Lock()
	defer mu.Unlock()
	if *back != sent {
		t.Errorf("OnWritten got %d batches back, want the %d accepted", *back, sent)
	}
}

// checkStickyDevFull runs checkSticky on a writer with opts (and a queue of 1) into /dev/full.
func checkStickyDevFull(t *testing.T, opts Options) {
	t.Helper()
	if f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0); err != nil {
		t.Skipf("no /dev/full: %v", err)
	} else {
		f.Close()
	}
	var mu sync.Mutex
	back := 0
	opts.QueueSize = 1
	opts.OnWritten = func(*envrunner.MultiAgentBatch) {
		mu.Lock()
		back++
		mu.Unlock()
	}
	w, err := NewWriter("/dev/full", opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSticky(t, w, &back, &mu, "/dev/full")
}

func TestWriterStickyErrorDevFull(t *testing.T) {
	for _, encoders := range []int{1, 3} {
		checkStickyDevFull(t, Options{Encoders: encoders})
	}
}

// Rotation into a name that cannot be created (a directory is in the way; this fails for
// root too, unlike a read-only directory).
func TestWriterStickyErrorRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.jsonl")
	blocked := RotatedName(path, 1)
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	back := 0
	w, err := NewWriter(path, Options{MaxFileSize: 1, OnWritten: func(*envrunner.MultiAgentBatch) {
		mu.Lock()
		back++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	checkSticky(t, w, &back, &mu, blocked)
	if got := readLines(t, path); len(got) != 1 {
		t.Errorf("%d lines in the first file, want 1", len(got))
	}
}

// A read-only directory, for users other than root.
func TestWriterStickyErrorReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "x.jsonl")
	var mu sync.Mutex
	back := 0
	w, err := NewWriter(path, Options{MaxFileSize: 1, OnWritten: func(*envrunner.MultiAgentBatch) {
		mu.Lock()
		back++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	checkSticky(t, w, &back, &mu, RotatedName(path, 1))
}

// A producer blocked on a full queue when the writer fails is released.
func TestWriterFailureReleasesBlockedProducer(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	release := make(chan struct{})
	w, err := NewWriter("/dev/full", Options{QueueSize: 1, OnWritten: func(*envrunner.MultiAgentBatch) { <-release }})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Each line is larger than the file buffer, so the first one fails; then the
		// goroutine waits in OnWritten, the queue holds one batch and Write blocks.
		for range 10 {
			if err := w.Write(single(cartPoleBatch(rng, 3000))); err != nil {
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("producer still blocked")
	}
	if err := w.Close(); err == nil {
		t.Error("Close after writing into /dev/full did not fail")
	}
}

// TestWriterStickyErrorParquet: a Parquet writer fails the same way, with one error naming
// the file, on a full disk and on a rotation that cannot create its file.
func TestWriterStickyErrorParquet(t *testing.T) {
	t.Run("dev-full", func(t *testing.T) { checkStickyDevFull(t, Options{Format: FormatParquet}) })
	t.Run("rotation", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "x.parquet")
		blocked := RotatedName(path, 1)
		if err := os.Mkdir(blocked, 0o755); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		back := 0
		w, err := NewWriter(path, Options{MaxFileSize: 1, OnWritten: func(*envrunner.MultiAgentBatch) {
			mu.Lock()
			back++
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		checkSticky(t, w, &back, &mu, blocked)
		n := 0
		if err := ReadParquet(path, func(*envrunner.MultiAgentBatch) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%d batches in the first file, want 1", n)
		}
	})
}

// TestParquetRotation: rotated Parquet files are each valid and hold every batch once.
func TestParquetRotation(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	path := filepath.Join(t.TempDir(), "r.parquet")
	w, err := NewWriter(path, Options{MaxFileSize: 20 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var want []*envrunner.MultiAgentBatch
	for range 30 {
		m := single(cartPoleBatch(rng, 100))
		want = append(want, m)
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := w.Files()
	if len(files) < 3 || files[1] != RotatedName(path, 1) {
		t.Fatalf("files %v, want rotation at 20 KiB", files)
	}
	var got []*envrunner.MultiAgentBatch
	for _, f := range files {
		if err := ReadParquet(f, func(m *envrunner.MultiAgentBatch) error { got = append(got, m); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d batches back, want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffMulti(want[i], got[i], true); d != "" && !strings.HasPrefix(d, "policy \"default_policy\": ActionSpace") {
			t.Fatalf("batch %d: %s", i, d)
		}
	}
}

// TestWriterEncodersKeepOrder: with several encoding goroutines, lines reach the file, and
// batches come back through OnWritten, in the order Write took them; a Flush in between has
// every earlier line in the file; the bytes are those of one encoder. Batches of very
// different sizes (and empty ones) make later ones finish encoding first.
func TestWriterEncodersKeepOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var batches []*envrunner.MultiAgentBatch
	for i := range 60 {
		n := []int{0, 1, 3, 400, 2000}[rng.IntN(5)]
		b := cartPoleBatch(rng, n)
		for k := range b.EpsID {
			b.EpsID[k] = int64(i) // which batch a line came from
		}
		batches = append(batches, single(b))
	}
	files := map[int]string{}
	for _, encoders := range []int{1, 3} {
		path := filepath.Join(t.TempDir(), "x.jsonl")
		var back []*envrunner.MultiAgentBatch
		w, err := NewWriter(path, Options{Encoders: encoders, QueueSize: 2,
			OnWritten: func(m *envrunner.MultiAgentBatch) { back = append(back, m) }})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range batches {
			if err := w.Write(m); err != nil {
				t.Fatal(err)
			}
			if i == 30 {
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				want := 0
				for _, m := range batches[:31] {
					if m.Rows() > 0 {
						want++
					}
				}
				// Flush closed the file; the next line starts x-000001.jsonl.
				if got := len(readLines(t, w.Files()...)); got != want {
					t.Fatalf("encoders %d: %d lines in the files after Flush, want %d", encoders, got, want)
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		for i, m := range back {
			if m != batches[i] {
				t.Fatalf("encoders %d: OnWritten's batch %d is not the one written %d-th", encoders, i, i)
			}
		}
		if len(back) != len(batches) {
			t.Fatalf("encoders %d: %d batches back of %d", encoders, len(back), len(batches))
		}
		var data []byte
		for _, name := range w.Files() {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, b...)
		}
		files[encoders] = string(data)
	}
	if files[1] != files[3] {
		t.Fatal("three encoders wrote other bytes than one")
	}
	var want []byte
	for _, m := range batches {
		if m.Rows() > 0 {
			want = append(AppendJSON(want, m), '\n')
		}
	}
	if files[3] != string(want) {
		t.Fatal("the file is not the batches' lines in the order written")
	}
}
