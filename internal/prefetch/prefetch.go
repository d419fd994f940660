// Package prefetch asks the CPU to start fetching cache lines that a hot loop is about to
// write or read, without waiting for them.
//
// A store to a line that is not in the cache waits for the line in the store buffer, and a
// loop whose stores keep missing (one row a step into each of hundreds of per-agent
// buffers, say) runs at the pace of memory with only the store buffer's worth of misses in
// flight. A loop that reads a cold buffer waits likewise, line by line. A prefetch is a
// hint: it does not block, it cannot fault, and the CPU may ignore it; issued ahead (a
// step, or a buffer, before the use), the lines are there by the time they are used. A
// loop of loads would fetch them too, but each load holds its place in the CPU's queues
// until its line arrives, and the work after it waits. On amd64 a prefetch is one
// instruction (PREFETCHT0); elsewhere it does nothing (the only cost is a slower loop:
// assembly this project cannot run in CI is not shipped).
package prefetch

import "unsafe"

// Float32 prefetches the line holding s[i], for an i within s's capacity (beyond its length
// is the use: the next row of a buffer that grows by appending). An i outside the capacity
// prefetches nothing.
func Float32(s []float32, i int) {
	if uint(i) < uint(cap(s)) {
		line(unsafe.Pointer(&s[:cap(s)][i]))
	}
}

// Float32s prefetches every line of s (its length, not its capacity).
func Float32s(s []float32) {
	if len(s) > 0 {
		lines(unsafe.Pointer(&s[0]), uintptr(len(s))*4)
	}
}
