package output

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/envrunner"
)

// ErrClosed is returned by Write and Flush after Close.
var ErrClosed = errors.New("output: writer closed")

// DefaultQueueSize is the queue length of a Writer whose Options.QueueSize is 0.
const DefaultQueueSize = 4

// bufferSize is the size of the bufio.Writer in front of the file. Lines of a few thousand
// rows are larger; bufio writes those straight through when its buffer is empty.
const bufferSize = 256 << 10

// Options configure a Writer.
type Options struct {
	// MaxFileSize starts a new file once the current one has reached this many bytes; a line
	// is never split, so a file ends with the line that took it to the limit or beyond.
	// 0 writes everything to one file. RLlib's JSON writer uses 64 MiB (64 << 20).
	MaxFileSize int64
	// QueueSize is the number of batches that Write can hand over before it blocks
	// (DefaultQueueSize when 0).
	QueueSize int
	// OnWritten, when set, gets back every batch that Write accepted, once, in order, on the
	// writer goroutine, after the batch was encoded (or dropped because the writer had
	// failed): from then on the caller may reuse it. It must not call the Writer's methods.
	OnWritten func(*envrunner.MultiAgentBatch)
	// Format is the file format; FormatAuto (the zero value) takes it from the path's
	// extension (see FormatOf).
	Format Format
	// Compression is the codec of Parquet files (Snappy when zero); JSON lines are not
	// compressed.
	Compression Compression
	// Encoders is how many goroutines encode JSON lines, several batches at a time, the lines
	// still written in order (0: GOMAXPROCS, at most MaxEncoders; 1: on the writer goroutine).
	// Parquet row groups are encoded on the writer goroutine.
	Encoders int
	// FlushInterval, when positive, bounds what a crash can lose: at least this often the
	// writer makes what it has written readable, as Flush does (each file that got a batch is
	// closed, with its Parquet footer, and renamed from .partial; the next batch starts the
	// next rotated file). 0: only when a file is full, at Flush and at Close.
	FlushInterval time.Duration
	// InPlace writes each file under its own name from the start, without the .partial name
	// and the rename (see PartialSuffix), and Flush only hands the buffer to the operating
	// system: for a caller with its own commit protocol (sample drain). Devices and pipes
	// (/dev/stdout) are always written in place.
	InPlace bool
	// wrapFile, in tests, stands between each file and its buffer (a disk that fills up).
	wrapFile func(io.Writer) io.Writer
	// pageSize, in tests, makes Parquet pages smaller (columns of many pages).
	pageSize int
	// Metadata is written into each Parquet file's key-value metadata (and the Arrow
	// schema's): what a learner needs to trust the data, such as the spaces, the policy, the
	// model's sha256, the sampler's version, the seed and the env. JSON lines have no place
	// for it.
	Metadata map[string]string
}

// encoder writes batches in one file format. write encodes a batch with rows into the file
// buffer; endFile writes what a file needs after its last batch.
type encoder interface {
	write(dst io.Writer, m *envrunner.MultiAgentBatch) error
	endFile(dst io.Writer) error
}

// Stats counts what a Writer has written into complete files: closed, synced and renamed
// into place (see PartialSuffix). A file being written, or left incomplete by a failure,
// does not count.
type Stats struct {
	// Lines counts the batches with rows written (a JSON line or a Parquet row group each),
	// Rows their rows, Bytes the files' bytes (newlines and Parquet footers included).
	Lines, Rows, Bytes int64
	// Files is the number of complete files.
	Files int
}

// Writer writes MultiAgentBatches as JSON lines (see AppendJSON) or Parquet (see
// envrunner/arrowbatch) from a goroutine of its own, so that sampling does not wait for
// encoding and disk writes.
//
// Write, Flush and Close may be called from several goroutines; batches from different
// goroutines are written in the order in which their Write calls hand them over.
// Stats and Files may be called at any time.
type Writer struct {
	path      string
	maxSize   int64
	onWritten func(*envrunner.MultiAgentBatch)
	every     time.Duration // Options.FlushInterval
	inPlace   bool
	wrapFile  func(io.Writer) io.Writer // tests: a disk that fills up

	// mu is held for reading while a producer sends on queue and for writing to close it,
	// so that no send can meet a closed channel.
	mu     sync.RWMutex
	closed bool
	queue  chan item
	done   chan struct{} // closed when the goroutine has finished
	result error         // what Close returns; set before done is closed

	errMu sync.Mutex
	err   error // the first write error, sticky

	lines, rows, bytes atomic.Int64 // of the complete files
	filesMu            sync.Mutex
	files              []fileEntry // of every file set, in the order they were opened

	// Owned by the goroutine.
	main      *fileSet
	newEnc    func() encoder
	perPolicy bool                // Parquet: a policy of another layout gets its own file set
	policies  map[string]*fileSet // by PolicyPath, opened on their first batch
	order     []*fileSet          // main, then the policies' sets as they were opened
	split     splitter
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// item is a batch to write or, with flush set, a request to flush that is answered on flush.
type item struct {
	batch *envrunner.MultiAgentBatch
	flush chan error
}

// NewWriter creates the file at path (as path.partial, truncating it, and creating its
// directory when missing; see PartialSuffix) and starts the writer goroutine. Close must be
// called to write everything out and to end the goroutine.
func NewWriter(path string, opts Options) (*Writer, error) {
	if opts.MaxFileSize < 0 {
		return nil, fmt.Errorf("output: negative MaxFileSize %d", opts.MaxFileSize)
	}
	if opts.QueueSize < 0 {
		return nil, fmt.Errorf("output: negative QueueSize %d", opts.QueueSize)
	}
	if opts.Encoders < 0 {
		return nil, fmt.Errorf("output: negative Encoders %d", opts.Encoders)
	}
	if opts.FlushInterval < 0 {
		return nil, fmt.Errorf("output: negative FlushInterval %v", opts.FlushInterval)
	}
	if opts.QueueSize == 0 {
		opts.QueueSize = DefaultQueueSize
	}
	w := &Writer{
		path:      path,
		maxSize:   opts.MaxFileSize,
		onWritten: opts.OnWritten,
		every:     opts.FlushInterval,
		inPlace:   opts.InPlace,
		wrapFile:  opts.wrapFile,
		queue:     make(chan item, opts.QueueSize),
		done:      make(chan struct{}),
	}
	switch opts.Format.Resolve(path) {
	case FormatParquet:
		w.newEnc = func() encoder { return newParquetEncoder(opts.Compression, opts.Metadata, opts.pageSize) }
		w.perPolicy = true
	case FormatJSON:
		w.newEnc = func() encoder { return &jsonEncoder{} }
	default:
		return nil, fmt.Errorf("output: unknown format %d", opts.Format)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	main, err := w.openSet(path)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	w.main = main
	if enc, ok := main.enc.(lineEncoder); ok && encoders(opts.Encoders) > 1 {
		go w.runLines(enc, encoders(opts.Encoders))
	} else {
		go w.run()
	}
	return w, nil
}

func createFile(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// RotatedName returns the name of file i (from 1) after path: x.jsonl gives x-000001.jsonl,
// x-000002.jsonl, ...; a path without an extension gives x-000001.
func RotatedName(path string, i int) string {
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-%06d%s", path[:len(path)-len(ext)], i, ext)
}

// Write hands m to the writer goroutine, blocking while the queue is full. The caller must not
// touch m until Options.OnWritten gives it back (or, without OnWritten, until Flush or Close
// has returned). A batch without rows writes nothing, but still goes through OnWritten.
//
// Write returns an error, without taking m, when a policy batch's columns do not match its
// Count and widths, after Close (ErrClosed), and once writing has failed: that error is
// sticky and names the file. A nil return means m was queued, not that it reached the disk;
// Flush and Close report what happened.
func (w *Writer) Write(m *envrunner.MultiAgentBatch) error {
	if m == nil {
		return errors.New("output: Write of a nil batch")
	}
	for _, b := range m.PolicyBatches {
		if b == nil {
			continue
		}
		if err := checkLayout(b); err != nil {
			return err
		}
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	if err := w.stickyErr(); err != nil {
		return err
	}
	w.queue <- item{batch: m}
	return nil
}

// Flush waits until every batch queued before it has been written and is readable: each
// file that got a batch since it was opened is closed (Parquet footer, fsync) and renamed
// from .partial to its name, and the next batch starts the next rotated file. A device or
// pipe, or a Writer with Options.InPlace, only has its buffer handed to the operating
// system. It returns the sticky write error, if any, or ErrClosed after Close.
func (w *Writer) Flush() error {
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return ErrClosed
	}
	ack := make(chan error, 1)
	w.queue <- item{flush: ack}
	w.mu.RUnlock()
	return <-ack
}

// Close writes out the queued batches, flushes, fsyncs and closes the file, and ends the
// goroutine. It returns the first write error, if any; later calls return the same.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.mu.Unlock()
	<-w.done
	return w.result
}

// Stats returns the counters of the complete files so far.
func (w *Writer) Stats() Stats {
	return Stats{Lines: w.lines.Load(), Rows: w.rows.Load(), Bytes: w.bytes.Load(), Files: len(w.Files())}
}

// Files returns the names of the complete files so far (closed, synced, renamed into
// place), in the order they were opened: path, then the rotated names and the policies'
// files (see PolicyPath).
func (w *Writer) Files() []string {
	w.filesMu.Lock()
	defer w.filesMu.Unlock()
	var names []string
	for _, f := range w.files {
		if f.done {
			names = append(names, f.name)
		}
	}
	return names
}

// Incomplete returns the names of the files left incomplete under their .partial names by
// a failure (after Close; during a run, also the files being written).
func (w *Writer) Incomplete() []string {
	w.filesMu.Lock()
	defer w.filesMu.Unlock()
	var names []string
	for _, f := range w.files {
		if !f.done && f.partial != f.name {
			names = append(names, f.partial)
		}
	}
	return names
}

func (w *Writer) stickyErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// fail records the first error, naming the file.
func (w *Writer) fail(name string, err error) {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = fmt.Errorf("output: %w", err) // it names the file already
	} else {
		err = fmt.Errorf("output: %s: %w", name, err)
	}
	w.errMu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.errMu.Unlock()
}

// run is the writer goroutine, encoding and writing batches one by one.
func (w *Writer) run() {
	defer close(w.done)
	tick, stop := w.ticker()
	defer stop()
	for {
		var it item
		select {
		case <-tick:
			w.flushSets()
			continue
		case i, ok := <-w.queue:
			if !ok {
				w.result = w.finish()
				return
			}
			it = i
		}
		if it.flush != nil {
			w.flushSets()
			it.flush <- w.stickyErr()
			continue
		}
		w.write(it.batch)
		if w.onWritten != nil {
			w.onWritten(it.batch)
		}
	}
}

// ticker returns the channel of Options.FlushInterval's ticks (nil without one) and the
// function that stops it.
func (w *Writer) ticker() (<-chan time.Time, func()) {
	if w.every <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(w.every)
	return t.C, t.Stop
}

// flushSets flushes every file set (see Flush) unless the writer has failed.
func (w *Writer) flushSets() {
	for _, set := range w.order {
		if w.stickyErr() == nil {
			set.flush()
		}
	}
}

// write encodes m: a JSON line, or Parquet row groups, one in the main file set for the
// policies of its layout and one in its own file set for each policy of another layout.
// After a failure batches are dropped.
func (w *Writer) write(m *envrunner.MultiAgentBatch) {
	if w.stickyErr() != nil || m.Rows() == 0 {
		return
	}
	if !w.perPolicy {
		w.main.write(m)
		return
	}
	for _, p := range w.split.split(m) {
		set := w.main
		if p.policy != "" {
			if set = w.policySet(p.policy); set == nil {
				return
			}
		}
		if !set.write(p.batch) {
			return
		}
	}
}

// policySet returns the file set of a policy, opening it on first use (nil after a failure).
func (w *Writer) policySet(policy string) *fileSet {
	name := PolicyPath(w.path, policy)
	if set, ok := w.policies[name]; ok {
		return set
	}
	set, err := w.openSet(name)
	if err != nil {
		w.fail(name, err)
		return nil
	}
	if w.policies == nil {
		w.policies = map[string]*fileSet{}
	}
	w.policies[name] = set
	return set
}

// finish closes the files at the end of the goroutine and returns the first error, with
// the files it left incomplete.
func (w *Writer) finish() error {
	for _, set := range w.order {
		set.finish()
	}
	err := w.stickyErr()
	if left := w.Incomplete(); err != nil && len(left) > 0 {
		done := w.Stats()
		err = fmt.Errorf("%w; left incomplete (readers skip .partial files): %s; complete: %d rows in %d files", err, strings.Join(left, ", "), done.Rows, done.Files)
	}
	return err
}
