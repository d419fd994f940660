package main

import (
	"io"
	"time"

	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/scaleout"
)

const workerArgs = "[--server URL] [--run NAME] [--policy ID] [--env NAME] [--num-envs N] [--steps N] ..."

// workerFlags are sample worker's flags; the environment and runner flags mean what they mean
// for sample run, and fill the runspec.Spec of the worker's one runner.
type workerFlags struct {
	nats                  natsFlags
	policy, sampler, work string
	metrics, ackLog       string
	poll, stopWait        time.Duration
	spec                  runspec.Spec
}

func parseWorkerFlags(args []string, stdout io.Writer) (*workerFlags, error) {
	f := &workerFlags{spec: runspec.DefaultSpec()}
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
	s := &f.spec
	fs.StringVar(&s.Env, "env", "CartPole-v1", "registered environment name")
	fs.StringVar(&s.EnvConfig, "env-config", "", "environment config as key=value,key=value")
	fs.IntVar(&s.NumEnvs, "num-envs", 1, "sub-environments")
	fs.Int64Var(&s.MaxEnvSteps, "steps", 0, "stop after this many env steps (0: until stopped)")
	fs.Uint64Var(&s.Seed, "seed", 0, "seed")
	fs.BoolVar(&s.Explore, "explore", true, "sample actions from the distribution (false: greedy)")
	fs.IntVar(&s.FragmentLength, "fragment-length", 200, "steps per sub-environment in a sample batch")
	fs.StringVar(&s.Device, "device", "cpu", "inference device: cpu, cuda[:N] or tensorrt[:N]")
	fs.IntVar(&s.Threads, "threads", 1, "ONNX Runtime intra-op threads")
	if err := parseNoArgs(fs, args); err != nil {
		return nil, err
	}
	return f, f.check()
}

// check refuses what the worker cannot run, and names the sampler when --sampler is not given.
func (f *workerFlags) check() error {
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
	s := &f.spec
	if s.NumEnvs < 1 || s.FragmentLength < 1 || s.Threads < 0 || s.MaxEnvSteps < 0 || f.poll <= 0 || f.stopWait < 0 {
		return usagef("--num-envs and --fragment-length must be positive, --threads, --steps and --stop-wait not negative, --poll positive")
	}
	return nil
}
