package output

import (
	"os"

	"golang.org/x/sys/unix"
)

// wrote is called with the file's size so far, after a write. Errors (a pipe, a device) only
// cost the hint.
func (b *writeback) wrote(f *os.File, size int64) {
	chunk := b.chunk
	if chunk == 0 {
		chunk = writebackChunk
	}
	if size-b.started < chunk {
		return
	}
	fd := int(f.Fd())
	unix.SyncFileRange(fd, b.started, size-b.started, unix.SYNC_FILE_RANGE_WRITE)
	if b.started > b.dropped {
		// The chunk before: wait for the end of its write-back, then drop it.
		unix.SyncFileRange(fd, b.dropped, b.started-b.dropped,
			unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER)
		unix.Fadvise(fd, b.dropped, b.started-b.dropped, unix.FADV_DONTNEED)
		b.dropped = b.started
	}
	b.started = size
}
