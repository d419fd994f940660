package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/onnxrl/sampler/envrunner"
)

// batchSource hands the sampler its batches, in `sample run`'s order; it is chosen once, in
// openSampler: one runner steps on the calling thread, several on goroutines of their own.
type batchSource interface {
	// next returns the next batch; the one it returned before goes back to its runner.
	next() (*envrunner.MultiAgentBatch, error)
	// stats returns the runners' counters and perf stats as of their last batch.
	stats() (envrunner.Counters, envrunner.PerfStats)
	// close stops the runners' goroutines (not the runners).
	close() error
}

// oneRunner is the source of a single worker: Runner.Sample on the caller's goroutine, which
// is what `sample run --workers 1` does between its batches. The runner and the caller swap
// two batches' storage (Runner.Take), so steady state allocates nothing.
type oneRunner struct {
	r *envrunner.Runner
	b envrunner.MultiAgentBatch
}

func (o *oneRunner) next() (*envrunner.MultiAgentBatch, error) {
	if err := o.r.Sample(&o.b); err != nil {
		return nil, fmt.Errorf("worker 0: %w", err)
	}
	return &o.b, nil
}

func (o *oneRunner) stats() (envrunner.Counters, envrunner.PerfStats) {
	return o.r.Counters(), o.r.PerfStats()
}

func (o *oneRunner) close() error { return nil }

// batchesPerWorker is how many batches each worker may have out at once: the one the caller
// holds and one being filled (envrunner.Group's default).
const batchesPerWorker = 2

// workers is the source of several workers: each runner samples on a goroutine of its own
// into its own batches, and next takes their batches round-robin (runner 0's first, then
// runner 1's, ...), the order envrunner.Group gives `sample run --workers N`, so the same
// seed gives the same batches. Each worker copies its counters and perf stats after every
// batch, for stats to read without racing its runner.
type workers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	free   []chan *envrunner.MultiAgentBatch
	out    []chan workerBatch
	turn   int
	held   *envrunner.MultiAgentBatch
	heldBy int

	mu    sync.Mutex
	snaps []workerStats
}

type workerBatch struct {
	b   *envrunner.MultiAgentBatch
	err error
}

type workerStats struct {
	c envrunner.Counters
	p envrunner.PerfStats
}

func startWorkers(g *envrunner.Group) *workers {
	rs := g.Runners()
	ctx, cancel := context.WithCancel(context.Background())
	w := &workers{cancel: cancel, snaps: make([]workerStats, len(rs))}
	for i, r := range rs {
		free := make(chan *envrunner.MultiAgentBatch, batchesPerWorker)
		for range batchesPerWorker {
			free <- &envrunner.MultiAgentBatch{}
		}
		out := make(chan workerBatch, batchesPerWorker)
		w.free, w.out = append(w.free, free), append(w.out, out)
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			defer close(out)
			for {
				var b *envrunner.MultiAgentBatch
				select {
				case <-ctx.Done():
					return
				case b = <-free:
				}
				err := sampleSafely(r, b)
				if err != nil {
					err = fmt.Errorf("worker %d: %w", i, err)
				}
				w.mu.Lock()
				w.snaps[i] = workerStats{r.Counters(), r.PerfStats()}
				w.mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case out <- workerBatch{b, err}:
				}
				if err != nil {
					return
				}
			}
		}()
	}
	return w
}

func (w *workers) next() (*envrunner.MultiAgentBatch, error) {
	if w.held != nil {
		w.free[w.heldBy] <- w.held // never blocks: the channel holds every batch of its worker
		w.held = nil
	}
	i := w.turn
	wb, ok := <-w.out[i]
	if !ok {
		return nil, fmt.Errorf("worker %d stopped", i)
	}
	if wb.err != nil {
		return nil, wb.err
	}
	w.turn = (i + 1) % len(w.out)
	w.held, w.heldBy = wb.b, i
	return wb.b, nil
}

func (w *workers) stats() (envrunner.Counters, envrunner.PerfStats) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var c envrunner.Counters
	var p envrunner.PerfStats
	var total float64
	for _, s := range w.snaps {
		c.EnvSteps += s.c.EnvSteps
		c.AgentSteps += s.c.AgentSteps
		c.Episodes += s.c.Episodes
		c.FaultyEpisodes += s.c.FaultyEpisodes
		c.Steps += s.c.Steps
		c.MetricsDropped += s.c.MetricsDropped
		// Averaged weighted by steps, as envrunner.Group.PerfStats.
		wt := float64(s.c.Steps)
		p.MeanRawObsProcessingMs += wt * s.p.MeanRawObsProcessingMs
		p.MeanInferenceMs += wt * s.p.MeanInferenceMs
		p.MeanActionProcessingMs += wt * s.p.MeanActionProcessingMs
		p.MeanEnvWaitMs += wt * s.p.MeanEnvWaitMs
		p.MeanEnvRenderMs += wt * s.p.MeanEnvRenderMs
		p.MeanSampleOutputMs += wt * s.p.MeanSampleOutputMs
		total += wt
	}
	if total > 0 {
		p.MeanRawObsProcessingMs /= total
		p.MeanInferenceMs /= total
		p.MeanActionProcessingMs /= total
		p.MeanEnvWaitMs /= total
		p.MeanEnvRenderMs /= total
		p.MeanSampleOutputMs /= total
	}
	return c, p
}

// close stops the workers, each after the batch it is filling, and waits for them.
func (w *workers) close() error {
	w.cancel()
	for _, out := range w.out {
		for range out { // drain, so that no worker blocks on a full channel
		}
	}
	w.wg.Wait()
	return nil
}

// sampleSafely is r.Sample with a panic turned into an error: a worker's goroutine has no
// caller to recover it, and a panic there would end the host's process.
func sampleSafely(r *envrunner.Runner, b *envrunner.MultiAgentBatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = withStatus(statusInternal, fmt.Errorf("onnxrl: the sampler panicked: %v", p))
		}
	}()
	return r.Sample(b)
}
