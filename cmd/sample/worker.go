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
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/scaleout"
)

const workerArgs = "[--server URL] [--run NAME] [--policy ID] [--env NAME] [--num-envs N] [--steps N] ..."

// workerFlags are sample worker's flags; the environment and runner flags mean what they mean
// for sample run.
type workerFlags struct {
	nats                  natsFlags
	policy, sampler, work string
	metrics, ackLog       string
	poll, stopWait        time.Duration
	run                   runFlags
}

// runWorker samples until stopped (or --steps), publishing every batch to the run's stream
// with the policy named by the run's policy bucket. The first version found builds the
// runner; a later version is downloaded, checked and made into a session on another
// goroutine while the runner keeps sampling (envrunner.Runner.SwapPolicy), and takes effect
// at the runner's next batch boundary: episodes keep running across it, and every batch is
// tagged with the version of the model that filled it.
func runWorker(args []string, stdout, stderr io.Writer) error {
	f := &workerFlags{}
	fs := newFlags("worker", workerArgs, stdout)
	f.nats.register(fs)
	fs.StringVar(&f.policy, "policy", "default_policy", "policy id in the run's policy bucket")
	fs.StringVar(&f.sampler, "sampler", "", "this sampler's name (default: host name and process id)")
	fs.StringVar(&f.work, "workdir", "", "directory for downloaded models (default: a temporary one)")
	fs.StringVar(&f.ackLog, "ack-log", "", "append \"MSG-ID ROWS\" to this file for every message the stream acknowledged (an audit of what reached it)")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics (policy version, version lag, swap time, publish counters) at http://ADDR/metrics")
	// 3 s: a stop signal ends a worker within 5 s even when a full stream (one that never
	// empties) refuses its batches (with 10 s it outlived docker stop's grace period); a stream
	// with room takes the batches in milliseconds.
	fs.DurationVar(&f.stopWait, "stop-wait", 3*time.Second, "after SIGINT/SIGTERM, how long the batches already sampled may take to reach the stream (a full one refuses them) before the worker gives up on them and exits")
	fs.DurationVar(&f.poll, "poll", 2*time.Second, "also look for a new policy version this often (a watch can stall after a server restart)")
	r := &f.run
	fs.StringVar(&r.env, "env", "CartPole-v1", "registered environment name")
	fs.StringVar(&r.envConfig, "env-config", "", "environment config as key=value,key=value")
	fs.IntVar(&r.numEnvs, "num-envs", 1, "sub-environments")
	fs.Int64Var(&r.steps, "steps", 0, "stop after this many env steps (0: until stopped)")
	fs.Uint64Var(&r.seed, "seed", 0, "seed")
	fs.BoolVar(&r.explore, "explore", true, "sample actions from the distribution (false: greedy)")
	fs.IntVar(&r.fragment, "fragment-length", 200, "steps per sub-environment in a sample batch")
	fs.StringVar(&r.device, "device", "cpu", "inference device: cpu, cuda[:N] or tensorrt[:N]")
	fs.IntVar(&r.threads, "threads", 1, "ONNX Runtime intra-op threads")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if err := f.nats.check(); err != nil {
		return err
	}
	if err := scaleout.CheckName("policy", f.policy); err != nil {
		return usagef("--policy: %v", err)
	}
	if f.sampler == "" {
		f.sampler = defaultSampler()
	}
	if err := scaleout.CheckName("sampler", f.sampler); err != nil {
		return usagef("--sampler: %v", err)
	}
	switch {
	case r.numEnvs < 1 || r.fragment < 1 || r.threads < 0 || r.steps < 0 || f.poll <= 0 || f.stopWait < 0:
		return usagef("--num-envs and --fragment-length must be positive, --threads, --steps and --stop-wait not negative, --poll positive")
	}
	r.workers, r.normalize, r.batchMode, r.countBy = 1, true, envrunner.TruncateEpisodes, envrunner.EnvSteps
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
	w := &worker{f: f, js: js, first: make(chan *runSetup, 1)}
	// The publisher outlives a stop signal by --stop-wait at most: a full stream would
	// otherwise hold the worker (retrying the queued batches) until a consumer makes room.
	pubCtx, cancelPub := context.WithCancel(context.Background())
	defer cancelPub()
	opts := scaleout.PublisherOptions{Run: f.nats.run, Sampler: f.sampler, OnPublished: w.release}
	if f.ackLog != "" {
		acks, err := os.OpenFile(f.ackLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--ack-log: %w", err)
		}
		defer acks.Close()
		var line []byte
		opts.OnAcked = func(id string, rows int) {
			line = fmt.Appendf(line[:0], "%s %d\n", id, rows)
			if _, err := acks.Write(line); err != nil {
				fmt.Fprintf(stderr, "sample worker: --ack-log: %v\n", err)
			}
		}
	}
	pub, err := scaleout.NewPublisher(pubCtx, nc, js, opts)
	if err != nil {
		return err
	}
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-ctx.Done():
		case <-finished:
			return
		}
		select {
		case <-time.After(f.stopWait):
			cancelPub()
		case <-finished:
		}
	}()
	if f.metrics != "" {
		stopMetrics, err := serveWorkerMetrics(f.metrics, &w.metrics, pub.Stats, stderr)
		if err != nil {
			pub.Close()
			return err
		}
		defer stopMetrics()
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); w.watch(watchCtx, stderr) }()
	err = w.sample(ctx, pub, stderr)
	stopWatch()
	<-watched
	select { // a runner built but never used
	case s := <-w.first:
		s.close()
	default:
	}
	err = errors.Join(err, pub.Close())
	w.out.Wait()
	if w.setup != nil {
		w.setup.close()
	}
	st := pub.Stats()
	if lost := w.written - st.Batches; lost > 0 && pubCtx.Err() != nil {
		// Given up after the stop signal: the stream refused these batches or had not
		// acknowledged them yet (then at most the publisher's window of messages may be in
		// it without the --ack-log knowing).
		fmt.Fprintf(stderr, "sample worker: stopped after --stop-wait %v with %d sampled batches (%d rows) never acknowledged by the stream (full: %d refusals)\n",
			f.stopWait, lost, w.writtenRows-st.Rows, st.Full)
		if errors.Is(err, context.Canceled) {
			err = nil // the stop that was asked for
		}
	}
	fmt.Fprintf(stdout, "worker %s: %s, %s, %s, %d refused by a full stream, last policy version %d\n",
		f.sampler, plural(st.Batches, "batch", "batches"), plural(st.Rows, "row", "rows"), plural(st.Messages, "message", "messages"), st.Full, w.version)
	return err
}

type worker struct {
	f     *workerFlags
	js    jetstream.JetStream
	first chan *runSetup // the runner, built with the first version found
	// setup is the runner sampling (set by sample before it runs; the watch goroutine swaps
	// models into its runners once it has seen first taken).
	setup    *runSetup
	versions sync.Map       // *models.Policy -> its version
	out      sync.WaitGroup // batches with the publisher
	version  uint64         // of the batches published last (sample's goroutine)
	// written and writtenRows count the batches handed to the publisher (sample's goroutine).
	written, writtenRows int64
	metrics              workerMetrics
}

func (w *worker) release(b *envrunner.MultiAgentBatch) {
	w.setup.group.Release(b)
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
			w.setup.group.Release(b)
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
	return w.setup.group.Run(ctx, envrunner.GroupOptions{Sink: takingMetrics(w.setup.group, w.metrics.ended, sink)})
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
	var setup *runSetup // built here, owned by sample once sent
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
func (w *worker) take(ctx context.Context, pv scaleout.PolicyVersion, setup **runSetup) error {
	data, err := scaleout.FetchModel(ctx, w.js, w.f.nats.run, pv)
	if err != nil {
		return err
	}
	path := filepath.Join(w.f.work, fmt.Sprintf("%s-v%06d.onnx", pv.Policy, pv.Version))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	if *setup == nil {
		rf := w.f.run
		rf.model = path
		s, err := buildRun(&rf)
		if err != nil {
			return err
		}
		if s.policy == nil {
			s.close()
			return fmt.Errorf("the model made no ONNX policy")
		}
		w.versions.Store(s.policy, pv.Version)
		*setup = s
		w.first <- s
		return nil
	}
	m, err := models.Load(path)
	if err != nil {
		return err
	}
	w.versions.Store(m, pv.Version) // before a batch can name it
	for _, r := range (*setup).group.Runners() {
		if err := r.SwapPolicy(envrunner.DefaultPolicyID, m); err != nil {
			return err
		}
	}
	return nil
}
