package main

import (
	"context"
	"io"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/envrunner/runspec"
)

// runSink is where sample run's batches go: the --out file, NATS (--publish), or nowhere
// (counted and given back to the runners); it counts the batches and rows with rows.
type runSink struct {
	sink          func(*envrunner.MultiAgentBatch) error
	w             *output.Writer
	pub           *publishSession
	batches, rows int64
}

// openRunSink opens the destination of f's batches for run r.
func openRunSink(f *runFlags, r *runspec.Run, stderr io.Writer) (_ *runSink, err error) {
	s := &runSink{}
	g := r.Group
	switch {
	case f.out.Path != "":
		if f.spec.StatePerSequence {
			format, err := f.out.ResolvedFormat()
			if err != nil {
				return nil, err
			}
			if format == output.FormatParquet {
				return nil, usagef("--state-in per-sequence: Parquet holds a row per transition, so state_in per row; write JSON lines (.jsonl) or leave --state-in out")
			}
		}
		if s.w, err = f.out.Open(r.Metadata(), g.Release); err != nil {
			return nil, err
		}
		s.sink = s.counting(g, s.w.Write)
	case f.publish.target != "":
		if s.pub, err = startPublish(&f.publish, r.Metadata(), g.Release, stderr); err != nil {
			return nil, err
		}
		s.sink = s.counting(g, s.pub.pub.Write)
	default:
		s.sink = g.CountAndRelease(&s.batches, &s.rows) // BenchmarkSampleRun runs this sink
	}
	return s, nil
}

// counting returns write, counting the batches and rows it is given; a batch without rows
// goes back to the runners unwritten.
func (s *runSink) counting(g *envrunner.Group, write func(*envrunner.MultiAgentBatch) error) func(*envrunner.MultiAgentBatch) error {
	return func(b *envrunner.MultiAgentBatch) error {
		if b.Rows() == 0 {
			g.Release(b)
			return nil
		}
		s.batches++
		s.rows += int64(b.Rows())
		return write(b)
	}
}

// close closes the file (and returns its files) or publishes what is queued (and, with
// the embedded server and --wait-drained, serves until the stream is drained or ctx is done).
func (s *runSink) close(ctx context.Context, stderr io.Writer) ([]string, error) {
	switch {
	case s.w != nil:
		err := s.w.Close()
		return s.w.Files(), err
	case s.pub != nil:
		return nil, s.pub.close(ctx, stderr)
	}
	return nil, nil
}

// shutdown ends the publisher's connection and server whatever happened (after close too).
func (s *runSink) shutdown() {
	if s.pub != nil {
		s.pub.shutdown()
	}
}
