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
	"github.com/onnxrl/sampler/scaleout"
)

const workerArgs = "[--server URL] [--run NAME] [--policy ID] [--env NAME] [--num-envs N] [--steps N] ..."

// workerFlags are sample worker's flags; the environment and runner flags mean what they mean
// for sample run.
type workerFlags struct {
	nats                  natsFlags
	policy, sampler, work string
	poll                  time.Duration
	run                   runFlags
}

// runWorker samples until stopped (or --steps), publishing every batch to the run's stream
// with the policy named by the run's policy bucket. A new version is downloaded, checked and
// made into a complete new runner (environments and session) on another goroutine while the
// current one keeps sampling; at the next batch boundary the current runner's last partial
// batch is published (tagged with the old version), it is closed and the new one takes over:
// its batches carry the new version. Episodes in progress at the swap end there without a
// terminated or truncated flag (the runner redesign of issue 18 will keep them going). The
// runner of version v is seeded with --seed + v<<32, so episode ids do not repeat.
func runWorker(args []string, stdout, stderr io.Writer) error {
	f := &workerFlags{}
	fs := newFlags("worker", workerArgs, stderr)
	f.nats.register(fs)
	fs.StringVar(&f.policy, "policy", "default_policy", "policy id in the run's policy bucket")
	fs.StringVar(&f.sampler, "sampler", "", "this sampler's name (default: host name and process id)")
	fs.StringVar(&f.work, "workdir", "", "directory for downloaded models (default: a temporary one)")
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
	case r.numEnvs < 1 || r.fragment < 1 || r.threads < 0 || r.steps < 0 || f.poll <= 0:
		return usagef("--num-envs and --fragment-length must be positive, --threads and --steps not negative, --poll positive")
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
	w := &worker{f: f, js: js, ready: make(chan *generation, 1)}
	pub, err := scaleout.NewPublisher(context.Background(), nc, js, scaleout.PublisherOptions{
		Run: f.nats.run, Sampler: f.sampler, OnPublished: w.release})
	if err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); w.watch(watchCtx, stderr) }()
	err = w.sample(ctx, pub, stderr)
	stopWatch()
	<-watched
	select { // a generation built but never used
	case g := <-w.ready:
		g.setup.close()
	default:
	}
	err = errors.Join(err, pub.Close())
	st := pub.Stats()
	fmt.Fprintf(stdout, "worker %s: %d batches, %d rows, %d messages, %d refused by a full stream, last policy version %d\n",
		f.sampler, st.Batches, st.Rows, st.Messages, st.Full, w.version)
	return err
}

// generation is one runner with one policy version.
type generation struct {
	setup   *runSetup
	version uint64
	out     sync.WaitGroup // batches with the publisher
}

type worker struct {
	f       *workerFlags
	js      jetstream.JetStream
	ready   chan *generation // the next generation, built
	owner   sync.Map         // *MultiAgentBatch -> *generation
	version uint64           // of the generation sampling (sample's goroutine)
	steps   int64
}

func (w *worker) release(b *envrunner.MultiAgentBatch) {
	g, _ := w.owner.LoadAndDelete(b)
	gen := g.(*generation)
	gen.setup.group.Release(b)
	gen.out.Done()
}

// sample runs generation after generation until ctx is done or --steps are sampled.
func (w *worker) sample(ctx context.Context, pub *scaleout.Publisher, stderr io.Writer) error {
	var g *generation
	select {
	case g = <-w.ready:
	case <-ctx.Done():
		return nil
	}
	for {
		w.version = g.version
		pub.SetPolicyVersion(g.version)
		fmt.Fprintf(stderr, "sample worker: sampling with policy %s version %d\n", w.f.policy, g.version)
		genCtx, cancelGen := context.WithCancel(ctx)
		var next *generation
		sink := func(b *envrunner.MultiAgentBatch) error {
			if b.Rows() == 0 {
				g.setup.group.Release(b)
				return nil
			}
			g.out.Add(1)
			w.owner.Store(b, g)
			if next == nil {
				select {
				case next = <-w.ready:
					cancelGen() // swap at this batch boundary
				default:
				}
			}
			return pub.Write(b)
		}
		if w.f.run.steps > 0 {
			for _, r := range g.setup.group.Runners() {
				r.SetLimits(w.f.run.steps-w.steps, 0)
			}
		}
		err := g.setup.group.Run(genCtx, envrunner.GroupOptions{Sink: sink})
		cancelGen()
		w.steps += g.setup.group.Counters().EnvSteps
		g.out.Wait()
		g.setup.close()
		if err != nil {
			if next != nil {
				next.setup.close()
			}
			return err
		}
		if next == nil || ctx.Err() != nil || (w.f.run.steps > 0 && w.steps >= w.f.run.steps) {
			if next != nil {
				next.setup.close()
			}
			return nil
		}
		g = next
	}
}

// watch builds a generation for every new version of the policy, from the bucket's watch
// and, as a fallback, by polling.
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
			g, err := w.build(ctx, pv)
			if err != nil {
				fmt.Fprintf(stderr, "sample worker: policy %s version %d: %v (skipped)\n", w.f.policy, pv.Version, oneLine(err.Error()))
				have = pv.Version
				break
			}
			have = pv.Version
			select { // replace a built generation that was not taken yet
			case old := <-w.ready:
				old.setup.close()
			default:
			}
			w.ready <- g
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

// build downloads and checks a version and makes its runner (off the sampling goroutine).
func (w *worker) build(ctx context.Context, pv scaleout.PolicyVersion) (*generation, error) {
	data, err := scaleout.FetchModel(ctx, w.js, w.f.nats.run, pv)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(w.f.work, fmt.Sprintf("%s-v%06d.onnx", pv.Policy, pv.Version))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	rf := w.f.run
	rf.model = path
	// A new runner of the same seed would repeat the episode ids of the one before.
	rf.seed = w.f.run.seed + pv.Version<<32
	s, err := buildRun(&rf)
	if err != nil {
		return nil, err
	}
	return &generation{setup: s, version: pv.Version}, nil
}
