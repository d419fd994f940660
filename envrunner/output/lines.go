package output

import (
	"runtime"
	"sync"

	"github.com/onnxrl/sampler/envrunner"
)

// lineEncoder is an encoder whose batches become bytes independently of the file and of each
// other (JSON lines), so that several goroutines can encode them while the writer goroutine
// writes the lines in order.
type lineEncoder interface {
	encoder
	// appendLine appends m's encoding to dst. It may be called from several goroutines at
	// once.
	appendLine(dst []byte, m *envrunner.MultiAgentBatch) []byte
}

// MaxEncoders bounds Options.Encoders' default.
const MaxEncoders = 4

// encoders is how many goroutines encode JSON lines when opts asks for n (0: GOMAXPROCS, at
// most MaxEncoders).
func encoders(n int) int {
	if n > 0 {
		return n
	}
	return min(runtime.GOMAXPROCS(0), MaxEncoders)
}

// lineJob is a batch handed to the encoding goroutines, and its line once done is signalled.
type lineJob struct {
	it   item
	line []byte
	skip bool          // nothing to encode: no rows, or the writer has failed
	done chan struct{} // one value once line is ready
}

// runLines is the writer goroutine for a lineEncoder with n encoding goroutines. Batches are
// encoded in parallel, up to n+1 at a time; each is given back through OnWritten as soon as
// its line is ready, before the line is written, and both happen in the order Write took the
// batches. A flush waits for the lines before it.
//
// (A goroutine of its own for the file's writes, so that batches go back while a line is
// being written, measured no faster: sample run --out x.jsonl, CartPole, 256 envs.)
func (w *Writer) runLines(enc lineEncoder, n int) {
	defer close(w.done)
	work := make(chan *lineJob, n+1)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				j.line = enc.appendLine(j.line[:0], j.it.batch)
				j.done <- struct{}{}
			}
		}()
	}
	free := make([]*lineJob, n+1)
	for i := range free {
		free[i] = &lineJob{done: make(chan struct{}, 1)}
	}
	var pending []*lineJob // oldest first
	// written ends the oldest pending job, whose line is ready.
	written := func() {
		j := pending[0]
		pending = append(pending[:0], pending[1:]...)
		rows := int64(j.it.batch.Rows()) // before the batch goes back
		// The line holds everything the file needs: the batch goes back first, so that its
		// runner fills it again while the line is written (sample run --out x.jsonl went from
		// 1.09-1.52M to 1.29-1.71M rows/s).
		if w.onWritten != nil {
			w.onWritten(j.it.batch)
		}
		if !j.skip && w.stickyErr() == nil {
			w.main.writeLine(j.line, rows)
		}
		j.it = item{}
		free = append(free, j)
	}
	tick, stop := w.ticker()
	defer stop()
	queue := w.queue
	for queue != nil || len(pending) > 0 {
		in := queue
		if len(free) == 0 {
			in = nil // every job is out: wait for the oldest
		}
		var oldest chan struct{}
		if len(pending) > 0 {
			oldest = pending[0].done
		}
		select {
		case it, ok := <-in:
			if !ok {
				queue = nil
				continue
			}
			if it.flush != nil {
				for len(pending) > 0 {
					<-pending[0].done
					written()
				}
				w.flushSets()
				it.flush <- w.stickyErr()
				continue
			}
			j := free[len(free)-1]
			free = free[:len(free)-1]
			j.it = it
			j.skip = w.stickyErr() != nil || it.batch.Rows() == 0
			if j.skip {
				j.done <- struct{}{}
			} else {
				work <- j
			}
			pending = append(pending, j)
		case <-oldest:
			written()
		case <-tick:
			w.flushSets() // the lines written so far; those still being encoded come later
		}
	}
	close(work)
	wg.Wait()
	w.result = w.finish()
}
