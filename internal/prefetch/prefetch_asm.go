//go:build amd64

package prefetch

import "unsafe"

// lines prefetches every cache line that holds a byte of the n bytes at p (n > 0).
// Implemented in assembly.
//
//go:noescape
func lines(p unsafe.Pointer, n uintptr)
