// Package prefetch asks the CPU to start fetching a cache line that a hot loop is about to
// write, without waiting for it.
//
// A store to a line that is not in the cache waits for the line in the store buffer, and a
// loop whose stores keep missing (one row a step into each of hundreds of per-agent
// buffers, say) runs at the pace of memory with only the store buffer's worth of misses in
// flight. A prefetch is a hint: it does not block, it cannot fault, and the CPU may ignore
// it; issued one step ahead, the line is there by the time it is written. On amd64 it is
// one instruction (PREFETCHT0); elsewhere it does nothing (the only cost is a slower loop:
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
