package output

// writebackChunk is how much of a file is written before its writing back to the disk is
// started (on Linux).
const writebackChunk = 32 << 20

// writeback bounds what a file being written keeps in the page cache (on Linux; elsewhere it
// does nothing): every chunk of bytes it starts writing the new chunk back to the disk, waits
// for the chunk before to be on the disk and drops that one from the cache. A long run then
// writes through the same few chunks of memory instead of ever more fresh pages, and its data
// reaches the disk during the run rather than all in Close's fsync. On the 2-core machine,
// where fresh memory is slow to come by, sample run --out x.jsonl (5M steps, 1 GB) went from
// 1.19-1.48M to 1.70-1.95M rows/s, its system time from 2.6-3.1 s to 1.0-1.1 s.
type writeback struct {
	chunk   int64 // writebackChunk when 0
	started int64 // the file's bytes up to here are being or have been written back
	dropped int64 // and up to here are on the disk and out of the page cache
}
