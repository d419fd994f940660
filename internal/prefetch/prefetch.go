// Package prefetch asks the CPU to start fetching the cache lines of a buffer that a loop
// is about to read, without waiting for them.
//
// A loop that reads a cold buffer (an agent's trajectory, say, last written a fragment ago)
// waits for it line by line. A loop of loads issued ahead would fetch the lines too, but
// each load holds its place in the CPU's queues until its line arrives, and the work after
// it waits. A prefetch is a hint: it does not block, it cannot fault, and the CPU may
// ignore it; issued a buffer ahead (while the previous one is used), the lines are there by
// the time they are read. Prefetching lines about to be written, or a row a step ahead,
// measured no gain here (see the envrunner commits that removed it). On amd64 a prefetch is
// one instruction (PREFETCHT0); elsewhere it does nothing (the only cost is a slower loop:
// assembly this project cannot run in CI is not shipped).
package prefetch

import "unsafe"

// Float32s prefetches every line of s (its length, not its capacity).
func Float32s(s []float32) {
	if len(s) > 0 {
		lines(unsafe.Pointer(&s[0]), uintptr(len(s))*4)
	}
}
