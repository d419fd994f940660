package envrunner

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Group runs several runners at once, each on its own goroutine with its own environment
// shard, sessions and random source (more cores mean more runners, never a shared lock per
// step), and merges their batches in a fixed order so that a run's output does not depend
// on timing. A group of one runner steps it on the goroutine that calls Run. While a
// goroutine steps a runner of a VectorBaseEnv, whose steps never wait, it is locked to its
// thread (runtime.LockOSThread; see Runner.holdThread).
type Group struct {
	runners []*Runner
	owner   map[*MultiAgentBatch]int
	free    []*batchStack // per runner, made by the first Run that builds batches
	running bool
}

// GroupOptions configures Group.Run.
type GroupOptions struct {
	// Sink receives every batch on the goroutine that called Run, round-robin over the
	// runners: the first batch of runner 0, the first of runner 1, ..., then the second
	// ones, skipping runners that have finished. With one runner, which then steps on that
	// goroutine too, Sink is called between its steps, as soon as a batch is taken: a sink
	// with work to do hands it to a goroutine of its own (as output.Writer does). A batch
	// belongs to the sink until it calls Group.Release (from any goroutine); a runner waits
	// for a free batch when all of its own are out. An error from Sink stops the run. Nil (or
	// NoSamples runners) means no batches are built.
	Sink func(b *MultiAgentBatch) error
	// BatchesPerRunner is how many batches each runner may have out at once; 0 means 2. The
	// batches are made by the first Run with a Sink and reused by later ones (whose
	// BatchesPerRunner is then ignored).
	BatchesPerRunner int
}

// NewGroup returns a group of runners; it owns them from now on (Close closes them).
func NewGroup(runners []*Runner) *Group {
	return &Group{runners: runners, owner: map[*MultiAgentBatch]int{}}
}

// Runners returns the group's runners. Read them only when Run is not running, except for
// their Progress.
func (g *Group) Runners() []*Runner { return g.runners }

// Release gives a batch handed to the sink back to its runner. It is safe to call from any
// goroutine, once per batch.
func (g *Group) Release(b *MultiAgentBatch) {
	g.free[g.owner[b]].put(b)
}

// Run steps every runner on its own goroutine until each is Done (Config.MaxEnvSteps,
// Config.MaxEpisodes) or ctx is cancelled, then takes each runner's last partial batch
// (nothing collected is lost) and returns when every batch went to the sink. The errors
// of the runners and of the sink are joined; a failing runner stops the others. Run may be
// called again once it returned (say, after raising the runners' limits with SetLimits), not
// while it runs; the batches (and their grown buffers) are reused, so the sink must have
// released every batch of the last Run.
func (g *Group) Run(ctx context.Context, opts GroupOptions) error {
	if g.running {
		return errors.New("envrunner: Group.Run called while it runs")
	}
	g.running = true
	defer func() { g.running = false }()
	n := len(g.runners)
	collect := opts.Sink != nil
	if collect && g.free == nil {
		g.makeBatches(opts.BatchesPerRunner)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if n == 1 {
		return g.runHere(ctx, cancel, opts.Sink)
	}
	outs := make([]chan *MultiAgentBatch, n)
	for i, r := range g.runners {
		if !collect || !r.mode.collect {
			outs[i] = make(chan *MultiAgentBatch)
			close(outs[i])
			continue
		}
		outs[i] = make(chan *MultiAgentBatch, g.free[i].size())
	}
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	for i, r := range g.runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var free *batchStack
			var send func(*MultiAgentBatch)
			if collect && r.mode.collect {
				out := outs[i]
				defer close(out)
				free, send = g.free[i], func(b *MultiAgentBatch) { out <- b }
			}
			if err := g.loop(ctx, r, free, send); err != nil {
				errs[i] = fmt.Errorf("worker %d: %w", i, err)
				cancel()
			}
		}()
	}
	g.merge(outs, func(b *MultiAgentBatch) { g.give(opts.Sink, b, &errs[n], cancel) })
	wg.Wait()
	return errors.Join(errs...)
}

// makeBatches makes the batches of every collecting runner, per of them each (0: 2).
func (g *Group) makeBatches(per int) {
	if per <= 0 {
		per = 2
	}
	g.free = make([]*batchStack, len(g.runners))
	for i, r := range g.runners {
		g.free[i] = newBatchStack(per)
		if !r.mode.collect {
			continue
		}
		for range per {
			b := &MultiAgentBatch{}
			g.owner[b] = i
			g.free[i].put(b)
		}
	}
}

// merge hands the batches of the runners' channels to give round-robin, a batch of each
// open channel in turn, until every channel is closed; a closed channel drops out of the
// rotation.
func (g *Group) merge(outs []chan *MultiAgentBatch, give func(*MultiAgentBatch)) {
	open := make([]chan *MultiAgentBatch, 0, len(outs))
	for _, out := range outs {
		open = append(open, out)
	}
	for len(open) > 0 {
		for i := 0; i < len(open); {
			b, ok := <-open[i]
			if !ok {
				open = append(open[:i], open[i+1:]...)
				continue
			}
			give(b)
			i++
		}
	}
}

// runHere is Run for a group of one runner: it steps on the calling goroutine and the sink
// is called between its steps, as soon as a batch is taken. With no other runner to run
// beside it, a goroutine of its own would only add a wake-up of the caller's thread for
// every batch and a goroutine for every Run: 2-3 ns/env-step of CPU time in
// BenchmarkSampleRun's rounds (a Run every two fragments); over runs of 20 fragments the
// two cost the same.
func (g *Group) runHere(ctx context.Context, cancel func(), sink func(*MultiAgentBatch) error) error {
	r := g.runners[0]
	var free *batchStack
	var deliver func(*MultiAgentBatch)
	var sinkErr error
	if sink != nil && r.mode.collect {
		free = g.free[0]
		deliver = func(b *MultiAgentBatch) { g.give(sink, b, &sinkErr, cancel) }
	}
	var runErr error
	if err := g.loop(ctx, r, free, deliver); err != nil {
		runErr = fmt.Errorf("worker 0: %w", err)
	}
	return errors.Join(runErr, sinkErr)
}

// give hands b to sink, unless the sink failed before (*sinkErr): a failure is kept in
// *sinkErr and stops the run (cancel), and a batch the sink did not take goes back to its
// runner.
func (g *Group) give(sink func(*MultiAgentBatch) error, b *MultiAgentBatch, sinkErr *error, cancel func()) {
	if *sinkErr == nil {
		err := sink(b)
		if err == nil {
			return
		}
		*sinkErr = fmt.Errorf("sink: %w", err)
		cancel()
	}
	g.Release(b)
}

// CountAndRelease returns a sink that adds one to *batches and the batch's rows to *rows for
// every batch and gives it back at once: a run that builds its batches but keeps none (sample
// run without an output). The counters are written on Run's goroutine.
func (g *Group) CountAndRelease(batches, rows *int64) func(*MultiAgentBatch) error {
	return func(b *MultiAgentBatch) error {
		*batches++
		*rows += int64(b.Rows())
		g.Release(b)
		return nil
	}
}

// loop steps one runner until it is done or ctx is cancelled, taking every full batch from
// free and handing it to deliver, and last the run's partial batch (nil deliver: no batches
// are built).
func (g *Group) loop(ctx context.Context, r *Runner, free *batchStack, deliver func(*MultiAgentBatch)) error {
	defer r.holdThread()()
	take := func() {
		b := free.get()
		r.Take(b)
		deliver(b)
	}
	var err error
	for !r.Done() && ctx.Err() == nil {
		if err = r.Step(); err != nil {
			break
		}
		if deliver != nil && r.Ready() {
			take()
		}
	}
	if deliver != nil {
		take() // the last partial batch; an empty one is harmless
	}
	return err
}

// Counters returns the sum of the runners' counters. Call it after Run.
func (g *Group) Counters() Counters {
	var c Counters
	for _, r := range g.runners {
		rc := r.Counters()
		c.EnvSteps += rc.EnvSteps
		c.AgentSteps += rc.AgentSteps
		c.Episodes += rc.Episodes
		c.FaultyEpisodes += rc.FaultyEpisodes
		c.Steps += rc.Steps
		c.MetricsDropped += rc.MetricsDropped
	}
	return c
}

// Progress returns the sum of the runners' progress; safe while Run runs.
func (g *Group) Progress() Progress {
	var p Progress
	for _, r := range g.runners {
		rp := r.Progress()
		p.EnvSteps += rp.EnvSteps
		p.AgentSteps += rp.AgentSteps
		p.Episodes += rp.Episodes
		p.ReturnSum += rp.ReturnSum
	}
	return p
}

// Metrics appends the runners' episode metrics (runner 0's first) to dst, taking them from
// the runners (see Runner.Metrics); it may be called while Run runs, from the sink for
// example.
func (g *Group) Metrics(dst []RolloutMetrics) []RolloutMetrics {
	for _, r := range g.runners {
		dst = r.Metrics(dst)
	}
	return dst
}

// PerfStats returns the runners' perf stats averaged, weighted by their steps. Call it
// after Run.
func (g *Group) PerfStats() PerfStats {
	var s PerfStats
	var total float64
	for _, r := range g.runners {
		w := float64(r.perf.iters)
		p := r.PerfStats()
		s.MeanRawObsProcessingMs += w * p.MeanRawObsProcessingMs
		s.MeanInferenceMs += w * p.MeanInferenceMs
		s.MeanActionProcessingMs += w * p.MeanActionProcessingMs
		s.MeanEnvWaitMs += w * p.MeanEnvWaitMs
		s.MeanEnvRenderMs += w * p.MeanEnvRenderMs
		s.MeanSampleOutputMs += w * p.MeanSampleOutputMs
		total += w
	}
	if total > 0 {
		s.MeanRawObsProcessingMs /= total
		s.MeanInferenceMs /= total
		s.MeanActionProcessingMs /= total
		s.MeanEnvWaitMs /= total
		s.MeanEnvRenderMs /= total
		s.MeanSampleOutputMs /= total
	}
	return s
}

// Close closes every runner.
func (g *Group) Close() error {
	var errs []error
	for _, r := range g.runners {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}
