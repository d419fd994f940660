package externalenv

import (
	"testing"
	"unsafe"
)

// TestCacheLines: the structures the simulator's goroutines write and the sampler reads
// fill whole cache lines, so that the allocator puts each on lines of its own.
func TestCacheLines(t *testing.T) {
	for name, size := range map[string]uintptr{
		"episode": unsafe.Sizeof(episode{}), "event": unsafe.Sizeof(event{}),
	} {
		if size%64 != 0 || size > 768 { // size classes up to 768 bytes that are multiples of 64 exist
			t.Errorf("%s is %d bytes, want a multiple of 64 up to 768", name, size)
		}
	}
	var ep episode
	if unsafe.Offsetof(ep.id) != 64 || unsafe.Offsetof(ep.answer) != 128 || unsafe.Offsetof(ep.waitSeq) != 192 {
		t.Errorf("episode lines: id at %d, answer at %d, waitSeq at %d; want 64, 128, 192",
			unsafe.Offsetof(ep.id), unsafe.Offsetof(ep.answer), unsafe.Offsetof(ep.waitSeq))
	}
	var ev event
	if unsafe.Offsetof(ev.one)+unsafe.Sizeof(entry{}) > 128 || unsafe.Offsetof(ev.inline) != 128 {
		t.Errorf("event lines: its entry at %d, its observation at %d; want the entry in the first two lines, then the observation",
			unsafe.Offsetof(ev.one), unsafe.Offsetof(ev.inline))
	}
	if got := cap(appendLines(nil, make([]float32, 5))); got != 16 {
		t.Errorf("appendLines allocated %d values, want 16 (one line)", got)
	}
}
