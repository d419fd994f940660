package server

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/externalenv"
)

// Sampler drives an envrunner.Runner over the server's environment on a goroutine of its own:
// every step answers the pending action requests with one batched inference, and every
// complete fragment goes to the write function (an output.Writer's Write, say).
//
// It stops when the runner fails, or when the server's Close has ended the environment's run
// loop and the sampler has polled everything reported before; it then hands the last partial
// fragment to write, so that nothing collected is lost.
type Sampler struct {
	r     *envrunner.Runner
	write func(*envrunner.MultiAgentBatch) error
	flush func() error
	every time.Duration
	done  chan struct{}
	err   error

	lastFlush              time.Time
	batches, rows, flushed atomic.Int64
	unflushed              int64 // rows accepted by write since the last flush
}

// SamplerOptions configures StartSamplerWith.
type SamplerOptions struct {
	// Write receives each complete fragment (it owns the batch); nil records nothing (a
	// runner with NoSamples).
	Write func(*envrunner.MultiAgentBatch) error
	// FlushInterval, when positive, bounds the steps left unwritten: once this long has
	// passed since the last flush, the sampler takes what it has collected (a partial
	// fragment, its episodes cut as at a fragment's end) after its next step, hands it to
	// Write and calls Flush. At 1,024 episodes and fragments of 200 steps, a crash could
	// otherwise lose 204,800 steps. The check runs after each step; give the env an IdlePoll
	// of the same length (externalenv.Options) so that a step also ends while no simulator
	// calls, or an idle server keeps the steps since the last flush until its next request.
	FlushInterval time.Duration
	// Flush, when set, makes what Write accepted durable (output.Writer.Flush); it is called
	// every FlushInterval and its successes are what Flushed counts.
	Flush func() error
}

// StartSampler starts driving r. write may be nil (a runner with NoSamples, which builds no
// batches); it owns each batch it is given.
func StartSampler(r *envrunner.Runner, write func(*envrunner.MultiAgentBatch) error) *Sampler {
	return StartSamplerWith(r, SamplerOptions{Write: write})
}

// StartSamplerWith starts driving r with opts.
func StartSamplerWith(r *envrunner.Runner, opts SamplerOptions) *Sampler {
	s := &Sampler{r: r, write: opts.Write, flush: opts.Flush, every: opts.FlushInterval, done: make(chan struct{}),
		lastFlush: time.Now()}
	go s.loop()
	return s
}

func (s *Sampler) loop() {
	defer close(s.done)
	defer func() {
		// A panic in a step (a model, a connector, the env) stops the sampler with a
		// *PanicError instead of the process; what was collected is still written.
		if pe := recovered(recover()); pe != nil {
			s.err = errors.Join(pe, s.safeTake())
		}
	}()
	for {
		// Yield once before polling: handler goroutines that have read their request by
		// now queue their observations, so that a loaded server answers them in one batched
		// inference instead of one each (BenchmarkServerEpisodes: 1.06 observations per
		// inference without it, 6 with it, for 64 clients). An idle server loses nothing:
		// with nothing else to run, Gosched returns at once.
		runtime.Gosched()
		err := s.r.Step()
		if err != nil {
			var rl *externalenv.RunLoopError
			if errors.As(err, &rl) && rl.Err == nil && !rl.Panicked {
				err = nil // the server closed: a normal end
			}
			s.err = errors.Join(err, s.take())
			return
		}
		due := s.every > 0 && s.write != nil && time.Since(s.lastFlush) >= s.every
		if s.write != nil && (s.r.Ready() || due) {
			if err := s.take(); err != nil {
				s.err = err
				return
			}
		}
		if due {
			s.lastFlush = time.Now()
			if err := s.doFlush(); err != nil {
				s.err = err
				return
			}
		}
	}
}

// safeTake is take after a panic: the runner may be in any state, so a second panic only
// loses the partial fragment.
func (s *Sampler) safeTake() (err error) {
	defer func() {
		if pe := recovered(recover()); pe != nil {
			err = fmt.Errorf("server: the partial fragment after a panic was lost: %w", pe)
		}
	}()
	return s.take()
}

// take hands what is collected to write.
func (s *Sampler) take() error {
	if s.write == nil {
		return nil
	}
	b := &envrunner.MultiAgentBatch{}
	s.r.Take(b)
	if b.Rows() == 0 {
		return nil
	}
	if err := s.write(b); err != nil {
		return err
	}
	s.batches.Add(1)
	s.rows.Add(int64(b.Rows()))
	s.unflushed += int64(b.Rows())
	return nil
}

// doFlush calls the flush function and counts the rows it made durable.
func (s *Sampler) doFlush() error {
	if s.flush == nil {
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	s.flushed.Add(s.unflushed)
	s.unflushed = 0
	return nil
}

// Flushed returns the rows that write accepted and a later Flush (SamplerOptions.Flush)
// confirmed: after a write error, these are the rows known to be on disk.
func (s *Sampler) Flushed() int64 { return s.flushed.Load() }

// Done is closed when the sampler has stopped.
func (s *Sampler) Done() <-chan struct{} { return s.done }

// Wait waits for the sampler to stop and returns why: nil after the server's Close, the
// runner's or write's error otherwise. The caller then closes the runner.
func (s *Sampler) Wait() error {
	<-s.done
	return s.err
}

// Written returns the number of batches and rows that write accepted so far.
func (s *Sampler) Written() (batches, rows int64) { return s.batches.Load(), s.rows.Load() }
