// Package grow appends to slices in place.
package grow

import "slices"

// Zero appends a zero element to *s and returns a pointer to it, for the caller to fill
// field by field. Appending a filled struct builds it aside and copies it whole; on amd64
// that copy's wide loads cannot be forwarded from the narrow stores that built it, and the
// copy stalls, which shows on per-row hot paths.
func Zero[T any](s *[]T) *T {
	n := len(*s)
	if n < cap(*s) {
		*s = (*s)[:n+1]
		var zero T
		(*s)[n] = zero
	} else {
		*s = append(*s, *new(T))
	}
	return &(*s)[n]
}

// N extends *s by n elements, growing the storage as append does, and returns the new
// elements. They are not cleared: they hold whatever the storage held, and the caller writes
// every one of them (a bulk fill that would otherwise clear them first).
func N[T any](s *[]T, n int) []T {
	l := len(*s)
	if cap(*s)-l < n {
		*s = slices.Grow(*s, n)
	}
	*s = (*s)[:l+n]
	return (*s)[l:]
}
