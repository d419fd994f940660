package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/scaleout"
)

// runWorker samples until stopped (or --steps), publishing every batch to the run's stream
// with the policy named by the run's policy bucket. The first version found builds the
// runner; a later version is downloaded, checked and made into a session on another
// goroutine while the runner keeps sampling (envrunner.Runner.SwapPolicy), and takes effect
// at the runner's next batch boundary: episodes keep running across it, and every batch is
// tagged with the version of the model that filled it.
func runWorker(args []string, stdout, stderr io.Writer) error {
	f, err := parseWorkerFlags(args, stdout)
	if err != nil {
		return err
	}
	if f.work == "" {
		if f.work, err = os.MkdirTemp("", "sample-worker-"); err != nil {
			return err
		}
		defer os.RemoveAll(f.work)
	}
	nc, js, err := f.nats.connect("sample worker " + f.sampler)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	setup, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = scaleout.EnsureRun(setup, js, f.nats.run, scaleout.RunConfig{})
	cancel()
	if err != nil {
		return err
	}
	w := &worker{f: f, js: js, first: make(chan *runspec.Run, 1)}
	// The publisher outlives a stop signal by --stop-wait at most: a full stream would
	// otherwise hold the worker (retrying the queued batches) until a consumer makes room.
	pubCtx, cancelPub := context.WithCancel(context.Background())
	defer cancelPub()
	opts := scaleout.PublisherOptions{Run: f.nats.run, Sampler: f.sampler, OnPublished: w.release}
	if f.ackLog != "" {
		acks, err := openAckLog(f.ackLog, &opts, stderr)
		if err != nil {
			return err
		}
		defer acks.Close()
	}
	pub, err := scaleout.NewPublisher(pubCtx, nc, js, opts)
	if err != nil {
		return err
	}
	finished := make(chan struct{})
	defer close(finished)
	go cancelAfterStop(ctx, finished, f.stopWait, cancelPub)
	if f.metrics != "" {
		stopMetrics, err := serveWorkerMetrics(f.metrics, &w.metrics, pub.Stats, stderr)
		if err != nil {
			pub.Close()
			return err
		}
		defer stopMetrics()
	}
	err = w.run(ctx, pub, stderr)
	return w.report(err, pub, pubCtx.Err() != nil, stdout, stderr)
}

// openAckLog opens the --ack-log file and makes opts append "MSG-ID ROWS" to it for every
// message the stream acknowledged.
func openAckLog(path string, opts *scaleout.PublisherOptions, stderr io.Writer) (*os.File, error) {
	acks, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--ack-log: %w", err)
	}
	var line []byte
	opts.OnAcked = func(id string, rows int) {
		line = fmt.Appendf(line[:0], "%s %d\n", id, rows)
		if _, err := acks.Write(line); err != nil {
			fmt.Fprintf(stderr, "sample worker: --ack-log: %v\n", err)
		}
	}
	return acks, nil
}

// cancelAfterStop calls cancel --stop-wait after ctx is done, unless finished is closed
// first.
func cancelAfterStop(ctx context.Context, finished <-chan struct{}, wait time.Duration, cancel func()) {
	select {
	case <-ctx.Done():
	case <-finished:
		return
	}
	select {
	case <-time.After(wait):
		cancel()
	case <-finished:
	}
}

// run watches the policy bucket and samples with the versions it finds until ctx is done or
// --steps are sampled, then closes the publisher and the runner.
func (w *worker) run(ctx context.Context, pub *scaleout.Publisher, stderr io.Writer) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); w.watch(watchCtx, stderr) }()
	err := w.sample(ctx, pub, stderr)
	stopWatch()
	<-watched
	select { // a runner built but never used
	case s := <-w.first:
		s.Close()
	default:
	}
	err = errors.Join(err, pub.Close())
	w.out.Wait()
	if w.setup != nil {
		w.setup.Close()
	}
	return err
}

// report prints what the worker published; err is run's, given up whether the publisher
// was cancelled after the stop signal.
func (w *worker) report(err error, pub *scaleout.Publisher, givenUp bool, stdout, stderr io.Writer) error {
	st := pub.Stats()
	if lost := w.written - st.Batches; lost > 0 && givenUp {
		// Given up after the stop signal: the stream refused these batches or had not
		// acknowledged them yet (then at most the publisher's window of messages may be in
		// it without the --ack-log knowing).
		fmt.Fprintf(stderr, "sample worker: stopped after --stop-wait %v with %d sampled batches (%d rows) never acknowledged by the stream (full: %d refusals)\n",
			w.f.stopWait, lost, w.writtenRows-st.Rows, st.Full)
		if errors.Is(err, context.Canceled) {
			err = nil // the stop that was asked for
		}
	}
	fmt.Fprintf(stdout, "worker %s: %s, %s, %s, %d refused by a full stream, last policy version %d\n",
		w.f.sampler, plural(st.Batches, "batch", "batches"), plural(st.Rows, "row", "rows"), plural(st.Messages, "message", "messages"), st.Full, w.version)
	return err
}

type worker struct {
	f     *workerFlags
	js    jetstream.JetStream
	first chan *runspec.Run // the runner, built with the first version found
	// setup is the runner sampling (set by sample before it runs; the watch goroutine swaps
	// models into its runners once it has seen first taken).
	setup    *runspec.Run
	versions sync.Map       // *models.Policy -> its version
	out      sync.WaitGroup // batches with the publisher
	version  uint64         // of the batches published last (sample's goroutine)
	// written and writtenRows count the batches handed to the publisher (sample's goroutine).
	written, writtenRows int64
	metrics              workerMetrics
}

func (w *worker) release(b *envrunner.MultiAgentBatch) {
	w.setup.Group.Release(b)
	w.out.Done()
}

// sample runs the runner built with the first version until ctx is done or --steps are
// sampled.
func (w *worker) sample(ctx context.Context, pub *scaleout.Publisher, stderr io.Writer) error {
	select {
	case w.setup = <-w.first:
	case <-ctx.Done():
		return nil
	}
	pid := envrunner.DefaultPolicyID
	sink := func(b *envrunner.MultiAgentBatch) error {
		if b.Rows() == 0 {
			w.setup.Group.Release(b)
			return nil
		}
		if v, ok := w.versions.Load(b.PolicyBatches[pid].Model); ok && v.(uint64) != w.version {
			w.version = v.(uint64)
			w.metrics.samplingWith(w.version)
			pub.SetPolicyVersion(w.version)
			fmt.Fprintf(stderr, "sample worker: sampling with policy %s version %d\n", w.f.policy, w.version)
		}
		w.out.Add(1)
		rows := int64(b.Rows())
		if err := pub.Write(b); err != nil {
			w.out.Done()
			return err // Group.Run gives b back
		}
		w.written++
		w.writtenRows += rows
		return nil
	}
	// The runners keep the metrics of ended episodes until asked: taken with every batch,
	// they cost a worker that runs for days no memory.
	return w.setup.Group.Run(ctx, envrunner.GroupOptions{Sink: takingMetrics(w.setup.Group, w.metrics.ended, sink)})
}

// watch takes every new version of the policy, from the bucket's watch and, as a fallback,
// by polling: the first builds the runner (handed to sample through w.first), later ones
// are swapped into its runners.
func (w *worker) watch(ctx context.Context, stderr io.Writer) {
	var have uint64
	var updates <-chan jetstream.KeyValueEntry
	if kv, err := w.js.KeyValue(ctx, scaleout.PolicyBucket(w.f.nats.run)); err == nil {
		if kw, err := kv.Watch(ctx, w.f.policy); err == nil {
			defer kw.Stop()
			updates = kw.Updates()
		}
	}
	tick := time.NewTicker(w.f.poll)
	defer tick.Stop()
	told := false
	var setup *runspec.Run // built here, owned by sample once sent
	for {
		pv, err := scaleout.CurrentPolicy(ctx, w.js, w.f.nats.run, w.f.policy)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, scaleout.ErrNoPolicy):
			if !told {
				fmt.Fprintf(stderr, "sample worker: waiting for a version of policy %s (sample publish-policy --run %s)\n", w.f.policy, w.f.nats.run)
				told = true
			}
		case err != nil:
			fmt.Fprintf(stderr, "sample worker: %v (retrying)\n", oneLine(err.Error()))
		case pv.Version > have:
			have = pv.Version
			w.metrics.saw(pv.Version)
			if err := w.take(ctx, pv, &setup); err != nil {
				fmt.Fprintf(stderr, "sample worker: policy %s version %d: %v (skipped)\n", w.f.policy, pv.Version, oneLine(err.Error()))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case _, ok := <-updates:
			if !ok {
				updates = nil
			}
		}
	}
}

// take downloads and checks a version (off the sampling goroutine): the first makes the
// runner (*setup), a later one a new session for each of its runners, which they put into
// effect at their next batch boundary.
func (w *worker) take(ctx context.Context, pv scaleout.PolicyVersion, setup **runspec.Run) error {
	data, err := scaleout.FetchModel(ctx, w.js, w.f.nats.run, pv)
	if err != nil {
		return err
	}
	path := filepath.Join(w.f.work, fmt.Sprintf("%s-v%06d.onnx", pv.Policy, pv.Version))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	if *setup == nil {
		spec := w.f.spec
		spec.Model = path
		s, err := buildRun(spec, 0)
		if err != nil {
			return err
		}
		if s.Policy == nil {
			s.Close()
			return fmt.Errorf("the model made no ONNX policy")
		}
		w.versions.Store(s.Policy, pv.Version)
		*setup = s
		w.first <- s
		return nil
	}
	m, err := models.Load(path)
	if err != nil {
		return err
	}
	w.versions.Store(m, pv.Version) // before a batch can name it
	for _, r := range (*setup).Group.Runners() {
		if err := r.SwapPolicy(envrunner.DefaultPolicyID, m); err != nil {
			return err
		}
	}
	return nil
}
