//go:build amd64

package prefetch

import "unsafe"

// line prefetches the cache line holding p. Implemented in assembly.
//
//go:noescape
func line(p unsafe.Pointer)
