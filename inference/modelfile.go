package inference

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// DefaultMaxModelBytes is the largest model file LoadFile reads: 1 GiB. A model path is
// untrusted input: /dev/zero was read until the machine ran out of memory, a sparse 50 GB
// file killed the process in 0.25 s and a 3 GB file took 54 s and 3.2 GB before its error
// (issue 35). Policies are kilobytes to tens of megabytes, and protobuf caps a model at 2 GiB;
// LoadFileLimit takes a higher limit where one is needed.
const DefaultMaxModelBytes int64 = 1 << 30

// FileSizeError reports a file larger than the limit it is read under; nothing was read.
type FileSizeError struct {
	Path        string
	Size, Limit int64
}

func (e *FileSizeError) Error() string {
	what := "the file"
	if e.Path != "" {
		what = e.Path
	}
	return fmt.Sprintf("%s is %s, more than the limit of %s", what, FormatBytes(e.Size), FormatBytes(e.Limit))
}

// NotRegularError reports a path that is not a regular file (a device such as /dev/zero, a
// named pipe, a socket, a directory); nothing was read.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	kind := "special file"
	switch m := e.Mode; {
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeCharDevice != 0:
		kind = "character device"
	case m&fs.ModeDevice != 0:
		kind = "block device"
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	}
	if e.Path == "" {
		return "not a regular file (a " + kind + ")"
	}
	return fmt.Sprintf("%s is not a regular file (a %s)", e.Path, kind)
}

// errChanged is the error for a file that grew or was replaced while it was read.
var errChanged = errors.New("the file changed while it was read")

// ReadFileLimit reads the regular file at path when it holds at most limit bytes. Both are
// checked before anything is read (a *NotRegularError, a *FileSizeError), so a device, a
// named pipe or a huge or sparse file costs one stat, and a named pipe is never opened (that
// would wait for a writer). Errors of the file system are returned as they are (a missing
// file wraps fs.ErrNotExist).
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := checkFile(path, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil { // the file opened, which may have been replaced meanwhile
		return nil, err
	}
	if err := checkFile(path, fi, limit); err != nil {
		return nil, err
	}
	buf := make([]byte, fi.Size()+1) // one byte more: a file that grew is noticed
	n, err := io.ReadFull(f, buf)
	switch {
	case err == nil:
		return nil, fmt.Errorf("%s: %w", path, errChanged)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return buf[:n], nil
	}
	return nil, err
}

func checkFile(path string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	if fi.Size() > limit {
		return &FileSizeError{Path: path, Size: fi.Size(), Limit: limit}
	}
	return nil
}

// FormatBytes writes n bytes for people: "1 GiB", "3.2 GiB (3435973837 bytes)", "512 bytes".
func FormatBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1<<10 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if float64(int64(v)) == v {
		s = strconv.FormatInt(int64(v), 10)
		if int64(v)<<(10*(u+1)) == n {
			return s + " " + units[u:u+1] + "iB"
		}
	}
	return s + " " + units[u:u+1] + "iB (" + strconv.FormatInt(n, 10) + " bytes)"
}
