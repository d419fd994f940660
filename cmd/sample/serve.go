package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// serveFlags are the flags of sample serve.
type serveFlags struct {
	model, addr, out, device, obsSpace, actSpace, maxFileSize, maxBody string
	explore, normalize, clip, multiAgent                               bool
	maxEpisodes, maxBatch, threads, actWorkers, fragment               int
	timeout, maxWait, shutdownTimeout                                  time.Duration
	seed                                                               uint64
	guard                                                              guardFlags
	output                                                             outputFlags
	maxModel                                                           modelSizeFlag
}

const serveArgs = "[--model M|random] [--addr 127.0.0.1:8900] [--explore=BOOL] [--out FILE] [--multi-agent] ..."

// parseServeFlags parses the flags; flag errors are one line, -h prints the usage to stdout.
func parseServeFlags(args []string, stdout io.Writer) (*serveFlags, error) {
	f := &serveFlags{}
	fs := newFlags("serve", serveArgs+"\n\nServe a policy over HTTP to external simulators (see package externalenv/server for the API).\n", stdout)
	fs.StringVar(&f.model, "model", "cartpole_mlp", "policy: an .onnx path, a bundled model name, or 'random' (uniform random actions; needs --obs-space and --action-space)")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8900", "listen address host:port (port 0: any free port; the address is printed once listening)")
	fs.BoolVar(&f.explore, "explore", true, "sample actions from the distribution (false: greedy); /v1/act requests may override it")
	fs.StringVar(&f.out, "out", "", "write the sample batches of the served episodes to this file: Parquet for .parquet, JSON lines (RLlib's offline format) for .jsonl or .json (see --format); its directory must exist")
	f.output.register(fs)
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
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) > 0 {
		return nil, usagef("unexpected argument %q", pos[0])
	}
	if err := f.maxModel.parse(); err != nil {
		return nil, err
	}
	switch {
	case f.maxEpisodes < 1:
		return nil, usagef("--max-episodes %d: want >= 1", f.maxEpisodes)
	case f.maxBatch < 0:
		return nil, usagef("--max-batch %d: want >= 0", f.maxBatch)
	case f.maxWait < 0:
		return nil, usagef("--max-wait %v: want >= 0", f.maxWait)
	case f.timeout == 0:
		return nil, usagef("--timeout 0: want a duration (negative: no timeout)")
	case f.fragment < 1:
		return nil, usagef("--fragment-length %d: want >= 1", f.fragment)
	case f.threads < 0:
		return nil, usagef("--threads %d: want >= 0", f.threads)
	case f.actWorkers < 0:
		return nil, usagef("--act-workers %d: want >= 0", f.actWorkers)
	case f.shutdownTimeout <= 0:
		return nil, usagef("--shutdown-timeout %v: want > 0", f.shutdownTimeout)
	}
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return nil, usagef("--addr %q: want host:port (%v)", f.addr, err)
	}
	if err := f.guard.check(f.addr); err != nil {
		return nil, err
	}
	if _, err := inference.ParseDevice(f.device); err != nil {
		return nil, usagef("--device: %v", err)
	}
	if f.out != "" {
		if err := f.output.checkOut("--out", f.out); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// serveSetup is what sample serve builds before it listens.
type serveSetup struct {
	policy   *models.Policy // nil for random
	obs, act spaces.Space
	srv      *server.Server
	runner   *envrunner.Runner
	actor    server.Actor
	stopEnv  func()
	cleanup  []func()
}

func (s *serveSetup) close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
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

func buildServe(f *serveFlags, maxBody int64, stderr io.Writer) (_ *serveSetup, err error) {
	s := &serveSetup{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.obs, err = parseSpaceFlag("obs-space", f.obsSpace); err != nil {
		return nil, err
	}
	if s.act, err = parseSpaceFlag("action-space", f.actSpace); err != nil {
		return nil, err
	}
	action := connectors.ActionConfig{Explore: f.explore, NormalizeActions: f.normalize, ClipActions: f.clip}
	pc := envrunner.PolicyConfig{Action: action}
	if f.model == "random" {
		if s.obs == nil || s.act == nil {
			return nil, usagef("--model random needs --obs-space and --action-space")
		}
		pc.Random = true
	} else {
		if err := inference.Init(); err != nil {
			return nil, err
		}
		if s.policy, err = loadPolicy(f.model, f.maxModel.limit()); err != nil {
			return nil, err
		}
		if s.obs == nil {
			s.obs = s.policy.Spec.ObservationSpace
		}
		if s.act == nil {
			s.act = s.policy.Spec.ActionSpace
		}
		pc.Policy = s.policy
		pc.Session = inference.Options{Device: f.device, IntraOpThreads: f.threads, InterOpThreads: 1}
	}
	pc.ObservationSpace, pc.ActionSpace = s.obs, s.act

	metrics := server.NewMetrics()
	so := server.Options{MaxBodyBytes: maxBody, Metrics: metrics}
	f.guard.apply(&so, f.addr)
	var be env.BaseEnv
	var numEnvs int
	// An idle server's Poll returns at the flush interval, so that the steps served before
	// the clients went quiet are written then, not at the next step or at shutdown.
	var idlePoll time.Duration
	if f.out != "" {
		idlePoll = f.guard.flushInterval
	}
	if f.multiAgent {
		e, err := externalenv.NewMultiAgent(externalenv.MultiAgentOptions{ObservationSpace: s.obs, ActionSpace: s.act,
			MaxConcurrentEpisodes: f.maxEpisodes, Timeout: f.timeout, MaxBatch: f.maxBatch, MaxWait: f.maxWait, IdlePoll: idlePoll,
			MaxAgents: f.guard.maxAgents}) // the server bounds one request, the env the whole episode
		if err != nil {
			return nil, err
		}
		so.MultiAgentEnv, be, numEnvs = e, e, e.NumEnvs()
	} else {
		e, err := externalenv.New(externalenv.Options{ObservationSpace: s.obs, ActionSpace: s.act,
			MaxConcurrentEpisodes: f.maxEpisodes, Timeout: f.timeout, MaxBatch: f.maxBatch, MaxWait: f.maxWait, IdlePoll: idlePoll})
		if err != nil {
			return nil, err
		}
		so.Env, be, numEnvs = e, e, e.NumEnvs()
	}
	s.stopEnv = func() { be.Stop() }
	s.cleanup = append(s.cleanup, s.stopEnv)

	// The sampler's runner: one batched inference per step over the pending requests.
	pols := map[envrunner.PolicyID]envrunner.PolicyConfig{envrunner.DefaultPolicyID: pc}
	s.runner, err = envrunner.New(envrunner.Config{Env: metrics.ObservePolls(be), NumEnvs: numEnvs, Seed: f.seed, RunID: envrunner.PoliciesRunID(pols),
		FragmentLength: f.fragment, NoSamples: f.out == "", Policies: pols})
	if err != nil {
		return nil, err
	}
	s.cleanup = append(s.cleanup, func() { s.runner.Close() })

	// /v1/act: its own sessions.
	if s.policy == nil {
		s.actor = server.NewRandomActor(s.act, f.seed)
	} else {
		a, err := server.NewPolicyActor(server.PolicyOptions{Policy: s.policy, ObservationSpace: s.obs, ActionSpace: s.act,
			Action: action, Workers: f.actWorkers, Seed: f.seed,
			Session: inference.Options{Device: f.device, IntraOpThreads: f.threads, InterOpThreads: 1}})
		switch {
		case err == nil:
			s.actor = a
			s.cleanup = append(s.cleanup, func() { a.Close() })
		case len(s.policy.Spec.State) > 0:
			fmt.Fprintf(stderr, "sample serve: /v1/act is off: %s is recurrent (the episode endpoints keep its state)\n", f.model)
		default:
			return nil, fmt.Errorf("the sessions of /v1/act: %w", err)
		}
	}
	so.Actor = s.actor
	if s.srv, err = server.New(so); err != nil {
		return nil, err
	}
	return s, nil
}

func runServe(args []string, stdout, stderr io.Writer) error {
	f, err := parseServeFlags(args, stdout)
	if err != nil {
		return err
	}
	maxSize, err := parseSize(f.maxFileSize)
	if err != nil {
		return usagef("--max-file-size: %v", err)
	}
	maxBody, err := parseSize(f.maxBody)
	if err != nil || maxBody < 1 {
		return usagef("--max-body %q: want a positive size (bytes, or with KiB/MiB/GiB)", f.maxBody)
	}
	s, err := buildServe(f, maxBody, stderr)
	if err != nil {
		return err
	}
	defer s.close()

	if f.out != "" {
		if err := prepareOutput(f.out, f.guard.overwrite); err != nil {
			return err
		}
	}
	tcp, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	ln := newLimitListener(tcp, f.guard.maxConns, f.guard.maxConnsPerIP)
	var w *output.Writer
	so := server.SamplerOptions{FlushInterval: f.guard.flushInterval}
	if f.out != "" {
		opts, err := f.output.options(maxSize, sampleMetadata("external", "", f.seed, f.explore, s.obs, s.act, f.model, s.policy))
		if err != nil {
			ln.Close()
			return err
		}
		if w, err = output.NewWriter(f.out, opts); err != nil {
			ln.Close()
			return err
		}
		so.Write, so.Flush = w.Write, w.Flush
	}
	sampler := server.StartSamplerWith(s.runner, so)
	hs := &http.Server{Handler: s.srv, ReadHeaderTimeout: f.guard.headerTimeout, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ReadTimeout: f.guard.readTimeout, WriteTimeout: f.guard.httpWriteTimeout(f.timeout),
		ConnState: ln.connState}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var sig os.Signal
	mode := "single-agent"
	if f.multiAgent {
		mode = "multi-agent"
	}
	fmt.Fprintf(stderr, "sample serve: %s (%s, explore=%v), listening on http://%s\n", f.model, mode, f.explore, ln.Addr())

	var runErr error
	failed := false
	samplerDone := sampler.Done()
wait:
	for {
		select {
		case sig = <-sigs:
			break wait
		case <-samplerDone:
			// The sampler failed (a full disk, a panic): the server stays up, unhealthy, so
			// that its probes and clients see why; the environment stops first, so that
			// requests waiting for an action are answered now instead of at their timeout.
			runErr = sampler.Wait()
			s.srv.Fail(runErr)
			s.stopEnv()
			failed, samplerDone = true, nil
			fmt.Fprintf(stderr, "sample serve: the sampler stopped: %s\nsample serve: /healthz reports it and new episodes get 503; stop the server (SIGTERM) to exit\n", oneLine(runErr.Error()))
		case err := <-serveErr:
			runErr = err
			break wait
		}
	}
	signal.Stop(sigs) // a second signal kills the process

	// Stop accepting, let the requests in flight finish, end the open episodes (truncated),
	// let the sampler poll what is left and write its last batch, close the file.
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	cancel()
	closeErr := s.srv.Close()
	samplerErr := sampler.Wait()
	if runErr != nil {
		samplerErr = nil // the same error
	}
	var writeErr error
	var files []string
	if w != nil {
		writeErr = w.Close()
		files = w.Files()
	}
	m := s.srv.Metrics()
	batches, rows := sampler.Written()
	if writeErr != nil || failed {
		rows = sampler.Flushed() // what write accepted may not have reached the disk
	}
	msg := fmt.Sprintf("sample serve: stopped after %d actions (%d episodes started)", m.Requests("action", http.StatusOK), m.EpisodesStarted())
	if w != nil {
		if writeErr != nil || failed {
			msg += fmt.Sprintf("; %d rows confirmed on disk in %v", rows, files)
		} else {
			msg += fmt.Sprintf("; wrote %d rows in %d batches to %v", rows, batches, files)
		}
	}
	fmt.Fprintln(stderr, msg)
	if failed {
		// The sampler's error was printed when it happened; the writer's sticky error is
		// the same one.
		if writeErr != nil && sameError(runErr, writeErr) {
			writeErr = nil
		}
		runErr = errSamplerFailed
	}
	if err := errors.Join(runErr, closeErr, samplerErr, writeErr); err != nil {
		return err
	}
	if sig == os.Interrupt {
		return errInterrupted // exit status 130, as after `sample run`; SIGTERM is a clean stop (0)
	}
	return nil
}
