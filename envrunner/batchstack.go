package envrunner

import "sync"

// batchStack holds a runner's free batches; the one given back last is taken first. Take
// writes a truncate_episodes fragment into the batch it is given (and swaps a
// complete_episodes batch's storage into the runner), so with a sink that gives each batch
// back before the next is due (a count, a writer that keeps up), the runner fills one
// storage (two in complete_episodes mode) and the others are never filled: the first fill
// of a storage is of memory the process never touched, which costs (about 30 ms for a
// CartPole fragment of 51,200 rows on the machine of the BenchmarkSampleRun figures; 20,000
// page faults for one of 819,200 rows, 4096 sub-environments), and it would hold memory it
// does not need.
type batchStack struct {
	mu    sync.Mutex
	items []*MultiAgentBatch
	avail chan struct{} // a token per item
}

func newBatchStack(n int) *batchStack {
	return &batchStack{items: make([]*MultiAgentBatch, 0, n), avail: make(chan struct{}, n)}
}

// put gives b back; it never blocks (a stack holds at most the batches it was made for).
func (s *batchStack) put(b *MultiAgentBatch) {
	s.mu.Lock()
	s.items = append(s.items, b)
	s.mu.Unlock()
	s.avail <- struct{}{}
}

// get takes the batch put last, waiting for one when none is free.
func (s *batchStack) get() *MultiAgentBatch {
	<-s.avail
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.items) - 1
	b := s.items[n]
	s.items[n] = nil
	s.items = s.items[:n]
	return b
}

// size returns the number of batches the stack was made for.
func (s *batchStack) size() int { return cap(s.avail) }
