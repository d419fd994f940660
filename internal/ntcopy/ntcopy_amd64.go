//go:build amd64

package ntcopy

import "unsafe"

// stridedLines writes lines whole 64-byte lines at dst (64-byte aligned) with rows of w
// float32s (w is 1, 2 or 4), row i from src+i*stride bytes, with non-temporal stores.
// Implemented in assembly.
//
//go:noescape
func stridedLines(dst, src unsafe.Pointer, stride, w, lines uintptr)

// stridedWords writes rows rows of w float32s at dst, row i from src+i*stride bytes, with
// non-temporal stores of 8 bytes (w even) or 4 (w odd). Implemented in assembly.
//
//go:noescape
func stridedWords(dst, src unsafe.Pointer, stride, w, rows uintptr)

// fill64Lines writes lines whole 64-byte lines at dst (64-byte aligned) with the 64-bit
// value v, with non-temporal stores. Implemented in assembly.
//
//go:noescape
func fill64Lines(dst unsafe.Pointer, v uint64, lines uintptr)

// iota32Lines writes lines whole 64-byte lines at dst (64-byte aligned) with v0, v0+1,
// ..., with non-temporal stores. Implemented in assembly.
//
//go:noescape
func iota32Lines(dst unsafe.Pointer, v0 int32, lines uintptr)

// fence is SFENCE. Implemented in assembly.
func fence()
