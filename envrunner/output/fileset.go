package output

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/onnxrl/sampler/envrunner"
)

// PartialSuffix ends the name of a file while a Writer writes it: x-000003.parquet.partial
// becomes x-000003.parquet once the file is complete (Parquet footer written, fsynced). Readers
// skip .partial files (IsPartial): after a crash or a full disk they hold an incomplete file.
const PartialSuffix = ".partial"

// IsPartial reports whether path names a file that a Writer had not finished (see
// PartialSuffix).
func IsPartial(path string) bool {
	return len(path) > len(PartialSuffix) && path[len(path)-len(PartialSuffix):] == PartialSuffix
}

// fileSet is one series of files, path then its rotated names, with its own encoder. A
// Writer has one, and for Parquet one more for each policy whose columns differ from the
// first layout written. It is owned by the writer goroutine.
//
// Each file is written as NAME.partial and renamed to NAME once closed (unless inPlace), so
// that a reader never sees a file without its end. A file is closed when it is full
// (MaxFileSize), at a flush and at the end; the next batch opens the next rotated name.
type fileSet struct {
	w       *Writer
	path    string
	n       int  // files opened
	inPlace bool // written under their own names: a device or pipe, or Options.InPlace

	f     *os.File // nil while no file is open
	name  string   // the open file's name once complete
	index int      // its index in Writer.files
	bw    *bufio.Writer
	cw    countingWriter // bw, counting the bytes of the current file
	enc   encoder
	wb    writeback
	lines int64 // batches in the open file
	rows  int64 // and their rows
}

// openSet creates the first file of a set (truncating it) and records its name.
func (w *Writer) openSet(path string) (*fileSet, error) {
	set := &fileSet{w: w, path: path, inPlace: w.inPlace, bw: bufio.NewWriterSize(nil, bufferSize), enc: w.newEnc()}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		set.inPlace = true // /dev/stdout, a named pipe: nothing to rename
	}
	if err := set.open(); err != nil {
		return nil, err
	}
	w.order = append(w.order, set)
	return set, nil
}

// open creates the set's next file: path, then RotatedName(path, 1), ...
func (s *fileSet) open() error {
	name := s.path
	if s.n > 0 {
		name = RotatedName(s.path, s.n)
	}
	tmp := name
	if !s.inPlace {
		tmp += PartialSuffix
	}
	f, err := createFile(tmp)
	if err != nil {
		return err
	}
	s.n++
	s.f, s.name, s.cw.n, s.wb, s.lines, s.rows = f, name, 0, writeback{}, 0, 0
	var dst io.Writer = f
	if s.w.wrapFile != nil {
		dst = s.w.wrapFile(f)
	}
	s.bw.Reset(dst)
	s.cw.w = s.bw
	s.w.filesMu.Lock()
	s.index = len(s.w.files)
	s.w.files = append(s.w.files, fileEntry{name: name, partial: tmp})
	s.w.filesMu.Unlock()
	return nil
}

// current is the name of the set's file being written, as it is on the disk.
func (s *fileSet) current() string {
	if s.inPlace {
		return s.name
	}
	return s.name + PartialSuffix
}

// write encodes m into the set's current file, opening one first when none is open. It
// reports false after a failure (recorded in the Writer).
func (s *fileSet) write(m *envrunner.MultiAgentBatch) bool {
	return s.put(int64(m.Rows()), func() error { return s.enc.write(&s.cw, m) })
}

// writeLine writes a batch's encoding (see lineEncoder) of rows rows as write does.
func (s *fileSet) writeLine(line []byte, rows int64) bool {
	return s.put(rows, func() error { _, err := s.cw.Write(line); return err })
}

// put opens a file when needed, writes with write into s.cw and counts the line, its rows
// and bytes; a file that has reached MaxFileSize is closed at once.
func (s *fileSet) put(rows int64, write func() error) bool {
	if s.f == nil {
		if err := s.open(); err != nil {
			s.w.fail(s.current(), err)
			return false
		}
	}
	if err := write(); err != nil {
		s.w.fail(s.current(), err)
		return false
	}
	s.wb.wrote(s.f, s.cw.n)
	s.lines++
	s.rows += rows
	if s.w.maxSize > 0 && s.cw.n >= s.w.maxSize {
		return s.close()
	}
	return true
}

// flush makes what the set has written readable: the open file, when it holds a batch, is
// closed (footer, fsync, renamed from .partial) and the next batch starts the next file. A
// file written in place (a pipe) only has its buffer handed to the operating system.
func (s *fileSet) flush() {
	if s.f == nil {
		return
	}
	if s.inPlace {
		if err := s.bw.Flush(); err != nil {
			s.w.fail(s.current(), err)
		}
		return
	}
	if s.lines > 0 {
		s.close()
	}
}

// close ends the open file and renames it into place; false after a failure (recorded in
// the Writer), which leaves the file under its .partial name.
func (s *fileSet) close() bool {
	tmp := s.current()
	err := s.closeFile()
	if err == nil && !s.inPlace {
		if err = os.Rename(tmp, s.name); err == nil {
			err = syncDir(filepath.Dir(s.name))
		}
	}
	if err != nil {
		s.w.fail(tmp, err)
		return false
	}
	s.w.filesMu.Lock()
	s.w.files[s.index].done = true
	s.w.filesMu.Unlock()
	s.w.lines.Add(s.lines)
	s.w.rows.Add(s.rows)
	s.w.bytes.Add(s.cw.n)
	return true
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// closeFile ends the current file (the Parquet footer), flushes, fsyncs and closes it.
func (s *fileSet) closeFile() error {
	f := s.f
	s.f = nil
	err := s.enc.endFile(&s.cw)
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

// finish closes the set's file at the end of the goroutine. After a failure the file is
// left under its .partial name, incomplete.
func (s *fileSet) finish() {
	if s.f == nil {
		return
	}
	if s.w.stickyErr() == nil {
		s.close()
		return
	}
	s.f.Close() // the error that stopped the writer is the one to report
	s.f = nil
}

// fileEntry is a file a Writer opened: its name once complete, its name while written, and
// whether it was completed.
type fileEntry struct {
	name, partial string
	done          bool
}
