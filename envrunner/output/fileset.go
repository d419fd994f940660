package output

import (
	"bufio"
	"errors"
	"os"
	"syscall"

	"github.com/onnxrl/sampler/envrunner"
)

// fileSet is one series of files, path then its rotated names, with its own encoder. A
// Writer has one, and for Parquet one more for each policy whose columns differ from the
// first layout written. It is owned by the writer goroutine.
type fileSet struct {
	w    *Writer
	path string
	n    int // files opened

	f   *os.File // nil once closed
	bw  *bufio.Writer
	cw  countingWriter // bw, counting the bytes of the current file
	enc encoder
	wb  writeback
}

// openSet creates the first file of a set (truncating it) and records its name.
func (w *Writer) openSet(path string) (*fileSet, error) {
	f, err := createFile(path)
	if err != nil {
		return nil, err
	}
	set := &fileSet{w: w, path: path, n: 1, f: f, bw: bufio.NewWriterSize(f, bufferSize), enc: w.newEnc()}
	set.cw.w = set.bw
	w.filesMu.Lock()
	w.files = append(w.files, path)
	w.filesMu.Unlock()
	w.order = append(w.order, set)
	return set, nil
}

// current is the name of the set's file being written.
func (s *fileSet) current() string {
	if s.n <= 1 {
		return s.path
	}
	return RotatedName(s.path, s.n-1)
}

// write encodes m into the set's current file, starting a new file first when that one is
// full. It reports false after a failure (recorded in the Writer).
func (s *fileSet) write(m *envrunner.MultiAgentBatch) bool {
	return s.put(func() error { return s.enc.write(&s.cw, m) })
}

// writeLine writes a batch's encoding (see lineEncoder) as write does.
func (s *fileSet) writeLine(line []byte) bool {
	return s.put(func() error { _, err := s.cw.Write(line); return err })
}

// put makes room, writes with write into s.cw and counts the line and its bytes.
func (s *fileSet) put(write func() error) bool {
	if !s.room() {
		return false
	}
	before := s.cw.n
	if err := write(); err != nil {
		s.w.fail(s.current(), err)
		return false
	}
	s.wb.wrote(s.f, s.cw.n)
	s.w.lines.Add(1)
	s.w.bytes.Add(s.cw.n - before)
	return true
}

// room starts a new file when the current one is full; false after a failure.
func (s *fileSet) room() bool {
	if s.w.maxSize > 0 && s.cw.n >= s.w.maxSize {
		return s.rotate()
	}
	return true
}

// flush hands the buffer to the operating system.
func (s *fileSet) flush() {
	if err := s.bw.Flush(); err != nil {
		s.w.fail(s.current(), err)
	}
}

// rotate closes the current file and opens the next one.
func (s *fileSet) rotate() bool {
	if err := s.closeFile(); err != nil {
		s.w.fail(s.current(), err)
		return false
	}
	name := RotatedName(s.path, s.n)
	f, err := createFile(name)
	if err != nil {
		s.w.fail(name, err)
		return false
	}
	s.n++
	s.w.filesMu.Lock()
	s.w.files = append(s.w.files, name)
	s.w.filesMu.Unlock()
	s.f, s.cw.n, s.wb = f, 0, writeback{}
	s.bw.Reset(f)
	return true
}

// closeFile ends the current file (the Parquet footer), flushes, fsyncs and closes it.
func (s *fileSet) closeFile() error {
	f := s.f
	s.f = nil
	before := s.cw.n
	err := s.enc.endFile(&s.cw)
	s.w.bytes.Add(s.cw.n - before)
	if err == nil {
		err = s.bw.Flush()
	}
	if err == nil {
		err = f.Sync()
		// Pipes and character devices (--out /dev/stdout) cannot be synced; that is no failure.
		if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
			err = nil
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// finish closes the set's file at the end of the goroutine.
func (s *fileSet) finish() {
	if s.f == nil {
		return
	}
	if s.w.stickyErr() == nil {
		if err := s.closeFile(); err != nil {
			s.w.fail(s.current(), err)
		}
		return
	}
	s.f.Close() // the error that stopped the writer is the one to report
	s.f = nil
}
