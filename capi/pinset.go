package main

import (
	"runtime"
	"unsafe"
)

// pinsPerPinner is how many objects one runtime.Pinner holds without allocating: its inline
// store (runtime's pinnerRefStoreSize, 5 on 64-bit platforms); a sixth pin grows a slice
// that every Unpin drops, one allocation per batch.
const pinsPerPinner = 5

// pinSet pins the Go arrays whose addresses C memory holds (the column views of a batch),
// so that C may keep them after the call returns (cgo's rules), until unpin. It spreads its
// pins over Pinners of pinsPerPinner each, and so allocates nothing in steady state: Unpin
// parks the first Pinner's store in the processor's cache, which the next Pin takes back.
// Not safe for concurrent use.
type pinSet struct {
	ps []runtime.Pinner
	n  int
}

// pin pins the object p points into (nil, and memory outside the Go heap, are left alone).
func (s *pinSet) pin(p unsafe.Pointer) {
	if p == nil {
		return
	}
	i := s.n / pinsPerPinner
	if i == len(s.ps) {
		s.ps = append(s.ps, runtime.Pinner{})
	}
	s.ps[i].Pin(p)
	s.n++
}

// unpin unpins everything pinned since the last unpin.
func (s *pinSet) unpin() {
	for i := range (s.n + pinsPerPinner - 1) / pinsPerPinner {
		s.ps[i].Unpin()
	}
	s.n = 0
}
