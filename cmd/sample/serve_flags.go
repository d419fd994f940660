package main

import (
	"io"
	"net"
	"time"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// serveFlags are the flags of sample serve.
type serveFlags struct {
	model, addr, device, obsSpace, actSpace, maxFileSize, maxBody string
	explore, normalize, clip, multiAgent                          bool
	maxEpisodes, maxBatch, threads, actWorkers, fragment          int
	timeout, maxWait, shutdownTimeout                             time.Duration
	seed                                                          uint64
	guard                                                         guardFlags
	out                                                           runspec.Output // --out, --format, --compression
	maxModel                                                      modelSizeFlag
}

const serveArgs = "[--model M|random] [--addr 127.0.0.1:8900] [--explore=BOOL] [--out FILE] [--multi-agent] ..."

// parseServeFlags parses the flags; flag errors are one line, -h prints the usage to stdout.
func parseServeFlags(args []string, stdout io.Writer) (*serveFlags, error) {
	f := &serveFlags{}
	fs := newFlags("serve", serveArgs+"\n\nServe a policy over HTTP to external simulators (see package externalenv/server for the API).\n", stdout)
	fs.StringVar(&f.model, "model", "cartpole_mlp", "policy: an .onnx path, a bundled model name, or 'random' (uniform random actions; needs --obs-space and --action-space)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8900", "listen address host:port (port 0: any free port; the address is printed once listening)")
	fs.BoolVar(&f.explore, "explore", true, "sample actions from the distribution (false: greedy); /v1/act requests may override it")
	fs.StringVar(&f.out.Path, "out", "", "write the sample batches of the served episodes to this file: Parquet for .parquet, JSON lines (RLlib's offline format) for .jsonl or .json (see --format); its directory must exist")
	registerOutputFlags(fs, &f.out)
	f.maxModel.register(fs)
	fs.StringVar(&f.maxFileSize, "max-file-size", "64MiB", "rotate the output file at this size (bytes, or with KiB/MiB/GiB; 0: never)")
	fs.BoolVar(&f.multiAgent, "multi-agent", false, "multi-agent episodes: observations, actions and rewards are objects keyed by agent id")
	fs.IntVar(&f.maxEpisodes, "max-episodes", 100, "most episodes running at once (more are refused with 429)")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "longest wait of an /action request for its action (504 beyond; negative: none)")
	fs.IntVar(&f.maxBatch, "max-batch", 0, "most observations answered by one batched inference (0: min(1024, --max-episodes))")
	fs.DurationVar(&f.maxWait, "max-wait", 0, "once an observation is pending, wait this long for more to batch (0: answer what is pending)")
	fs.IntVar(&f.fragment, "fragment-length", 200, "rollout_fragment_length: steps per episode slot in a sample batch (with --out)")
	fs.StringVar(&f.device, "device", "cpu", "inference device: cpu, cuda[:N], tensorrt[:N], native (the project's provider) or native:cuda[:N]")
	fs.IntVar(&f.threads, "threads", 1, "ONNX Runtime intra-op threads per session (0: the runtime's default)")
	fs.IntVar(&f.actWorkers, "act-workers", 0, "sessions that answer /v1/act requests at once (0: one per CPU)")
	fs.StringVar(&f.maxBody, "max-body", "4MiB", "largest request body (413 beyond)")
	fs.BoolVar(&f.normalize, "normalize-actions", true, "map Box actions from [-1, 1] to the action space's bounds (RLlib's normalize_actions)")
	fs.BoolVar(&f.clip, "clip-actions", false, "clip Box actions to the action space's bounds (RLlib's clip_actions)")
	fs.StringVar(&f.obsSpace, "obs-space", "", "observation space as JSON (default: the model's), e.g. {\"type\":\"Box\",\"low\":-1,\"high\":1,\"shape\":[4]}")
	fs.StringVar(&f.actSpace, "action-space", "", "action space as JSON (default: the model's), e.g. {\"type\":\"Discrete\",\"n\":2}")
	fs.Uint64Var(&f.seed, "seed", 0, "seed of the action sampling")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight may take to finish")
	f.guard.register(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return nil, err
	}
	if err := f.maxModel.parse(); err != nil {
		return nil, err
	}
	return f, f.check()
}

// check refuses the values sample serve cannot serve with.
func (f *serveFlags) check() error {
	switch {
	case f.maxEpisodes < 1:
		return usagef("--max-episodes %d: want >= 1", f.maxEpisodes)
	case f.maxBatch < 0:
		return usagef("--max-batch %d: want >= 0", f.maxBatch)
	case f.maxWait < 0:
		return usagef("--max-wait %v: want >= 0", f.maxWait)
	case f.timeout == 0:
		return usagef("--timeout 0: want a duration (negative: no timeout)")
	case f.fragment < 1:
		return usagef("--fragment-length %d: want >= 1", f.fragment)
	case f.threads < 0:
		return usagef("--threads %d: want >= 0", f.threads)
	case f.actWorkers < 0:
		return usagef("--act-workers %d: want >= 0", f.actWorkers)
	case f.shutdownTimeout <= 0:
		return usagef("--shutdown-timeout %v: want > 0", f.shutdownTimeout)
	}
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return usagef("--addr %q: want host:port (%v)", f.addr, err)
	}
	if err := f.guard.check(f.addr); err != nil {
		return err
	}
	if _, err := inference.ParseDevice(f.device); err != nil {
		return usagef("--device: %v", err)
	}
	if f.out.Path != "" {
		return f.out.Check("--out")
	}
	return nil
}

// policySpec is the served policy: --model bound to --obs-space and --action-space (the
// model's when not given).
func (f *serveFlags) policySpec() (runspec.PolicySpec, error) {
	ps := runspec.PolicySpec{Model: f.model, Device: f.device, Threads: f.threads,
		Action: connectors.ActionConfig{Explore: f.explore, NormalizeActions: f.normalize, ClipActions: f.clip},
		Open:   func(name string) (*models.Policy, error) { return runspec.OpenPolicy(name, f.maxModel.limit()) }}
	var err error
	if ps.ObservationSpace, err = parseSpaceFlag("obs-space", f.obsSpace); err != nil {
		return ps, err
	}
	ps.ActionSpace, err = parseSpaceFlag("action-space", f.actSpace)
	return ps, err
}

func parseSpaceFlag(name, v string) (spaces.Space, error) {
	if v == "" {
		return nil, nil
	}
	s, err := spaces.Unmarshal([]byte(v))
	if err != nil {
		return nil, usagef("--%s: %v", name, err)
	}
	return s, nil
}
