package envrunner

import (
	"testing"
	"time"
)

// TestBatchStackLastInFirstOut: the batch given back last is taken first, and get waits for a
// batch when none is free.
func TestBatchStackLastInFirstOut(t *testing.T) {
	s := newBatchStack(3)
	a, b, c := &MultiAgentBatch{}, &MultiAgentBatch{}, &MultiAgentBatch{}
	s.put(a)
	s.put(b)
	s.put(c)
	if got := s.get(); got != c {
		t.Fatal("took a batch other than the one given back last")
	}
	for range 3 { // a runner taking and giving back one batch at a time keeps taking it
		if got := s.get(); got != b {
			t.Fatal("took a batch other than the one given back last")
		}
		s.put(b)
	}
	s.get()
	if got := s.get(); got != a {
		t.Fatal("the first batch given back was not left for last")
	}
	got := make(chan *MultiAgentBatch)
	go func() { got <- s.get() }()
	select {
	case <-got:
		t.Fatal("get returned with no batch free")
	case <-time.After(20 * time.Millisecond):
	}
	s.put(c)
	if <-got != c {
		t.Fatal("a waiting get did not take the batch given back")
	}
	if s.size() != 3 {
		t.Fatalf("size %d, want 3", s.size())
	}
}
