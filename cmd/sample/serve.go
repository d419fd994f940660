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

	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/externalenv/server"
)

// serveSetup is what sample serve builds before it listens: the served run (its env and
// runner, runspec.BuildExternal), the /v1/act actor and the server.
type serveSetup struct {
	run   *runspec.External
	srv   *server.Server
	actor server.Actor
	close func()
}

func buildServe(f *serveFlags, maxBody int64, stderr io.Writer) (_ *serveSetup, err error) {
	ps, err := f.policySpec()
	if err != nil {
		return nil, err
	}
	metrics := server.NewMetrics()
	// An idle server's Poll returns at the flush interval, so that the steps served before
	// the clients went quiet are written then, not at the next step or at shutdown.
	var idlePoll time.Duration
	if f.out.Path != "" {
		idlePoll = f.guard.flushInterval
	}
	x, err := runspec.BuildExternal(runspec.ExternalSpec{Policy: ps, MultiAgent: f.multiAgent,
		MaxEpisodes: f.maxEpisodes, Timeout: f.timeout, MaxBatch: f.maxBatch, MaxWait: f.maxWait, IdlePoll: idlePoll,
		MaxAgents: f.guard.maxAgents, // the server bounds one request, the env the whole episode
		Seed:      f.seed, FragmentLength: f.fragment, Record: f.out.Path != "", ObservePolls: metrics.ObservePolls})
	if err != nil {
		return nil, err
	}
	s := &serveSetup{run: x, close: func() { x.Close() }}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	// /v1/act: its own sessions.
	if s.actor, err = newServeActor(f, x, stderr); err != nil {
		return nil, err
	}
	if c, ok := s.actor.(io.Closer); ok {
		s.close = func() { c.Close(); x.Close() }
	}
	so := server.Options{Env: x.Env, MultiAgentEnv: x.MultiAgentEnv, Actor: s.actor, MaxBodyBytes: maxBody, Metrics: metrics}
	f.guard.apply(&so, f.addr)
	if s.srv, err = server.New(so); err != nil {
		return nil, err
	}
	return s, nil
}

// newServeActor makes the actor of /v1/act: uniform random actions for a random policy,
// the model on its own sessions otherwise; nil (501) for a recurrent model, whose state only
// the episode endpoints keep.
func newServeActor(f *serveFlags, x *runspec.External, stderr io.Writer) (server.Actor, error) {
	pc := x.Policy
	if pc.Policy == nil {
		return server.NewRandomActor(pc.ActionSpace, f.seed), nil
	}
	a, err := server.NewPolicyActor(server.PolicyOptions{Policy: pc.Policy, ObservationSpace: pc.ObservationSpace, ActionSpace: pc.ActionSpace,
		Action: pc.Action, Workers: f.actWorkers, Seed: f.seed, Session: pc.Session})
	switch {
	case err == nil:
		return a, nil
	case len(pc.Policy.Spec.State) > 0:
		fmt.Fprintf(stderr, "sample serve: /v1/act is off: %s is recurrent (the episode endpoints keep its state)\n", f.model)
		return nil, nil
	}
	return nil, fmt.Errorf("the sessions of /v1/act: %w", err)
}

func runServe(args []string, stdout, stderr io.Writer) error {
	f, err := parseServeFlags(args, stdout)
	if err != nil {
		return err
	}
	if f.out.MaxFileSize, err = parseSize(f.maxFileSize); err != nil {
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
	f.out.Overwrite = f.guard.overwrite
	if f.out.Path != "" {
		if err := f.out.Prepare(); err != nil {
			return err
		}
	}
	tcp, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	ln := newLimitListener(tcp, f.guard.maxConns, f.guard.maxConnsPerIP)
	w, err := s.openWriter(f)
	if err != nil {
		ln.Close()
		return err
	}
	so := server.SamplerOptions{FlushInterval: f.guard.flushInterval}
	if w != nil {
		so.Write, so.Flush = w.Write, w.Flush
	}
	sv := &serving{f: f, s: s, w: w, sampler: server.StartSamplerWith(s.run.Runner, so)}
	hs := &http.Server{Handler: s.srv, ReadHeaderTimeout: f.guard.headerTimeout, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ReadTimeout: f.guard.readTimeout, WriteTimeout: f.guard.httpWriteTimeout(f.timeout),
		ConnState: ln.connState}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	sigs := make(chan os.Signal, 1) // before the line that says the server listens
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	mode := "single-agent"
	if f.multiAgent {
		mode = "multi-agent"
	}
	fmt.Fprintf(stderr, "sample serve: %s (%s, explore=%v), listening on http://%s\n", f.model, mode, f.explore, ln.Addr())
	sig := sv.wait(sigs, serveErr, stderr)
	signal.Stop(sigs) // a second signal kills the process
	if err := sv.stop(hs, stderr); err != nil {
		return err
	}
	if sig == os.Interrupt {
		return errInterrupted // exit status 130, as after `sample run`; SIGTERM is a clean stop (0)
	}
	return nil
}

// openWriter opens the --out writer (nil without --out), its files' metadata the served
// policy's.
func (s *serveSetup) openWriter(f *serveFlags) (*output.Writer, error) {
	if f.out.Path == "" {
		return nil, nil
	}
	pc := s.run.Policy
	opts, err := f.out.Options(runspec.Metadata(output.Source{Env: "external", Seed: f.seed, Explore: f.explore,
		ObsSpace: pc.ObservationSpace, ActSpace: pc.ActionSpace, Model: f.model}, pc.Policy))
	if err != nil {
		return nil, err
	}
	opts.FlushInterval = 0 // the sampler flushes (--flush-interval)
	return output.NewWriter(f.out.Path, opts)
}

// serving is a server listening: what its end needs.
type serving struct {
	f       *serveFlags
	s       *serveSetup
	w       *output.Writer // nil without --out
	sampler *server.Sampler
	runErr  error
	failed  bool // the sampler stopped before the server (the server stayed up, unhealthy)
}

// wait serves until a signal (returned) or the http.Server's end (runErr). A sampler that
// fails leaves the server up, unhealthy, so that its probes and clients see why.
func (sv *serving) wait(sigs <-chan os.Signal, serveErr <-chan error, stderr io.Writer) os.Signal {
	samplerDone := sv.sampler.Done()
	for {
		select {
		case sig := <-sigs:
			return sig
		case <-samplerDone:
			// The environment stops first, so that requests waiting for an action are
			// answered now instead of at their timeout.
			sv.runErr = sv.sampler.Wait()
			sv.s.srv.Fail(sv.runErr)
			sv.s.run.Stop()
			sv.failed, samplerDone = true, nil
			fmt.Fprintf(stderr, "sample serve: the sampler stopped: %s\nsample serve: /healthz reports it and new episodes get 503; stop the server (SIGTERM) to exit\n", oneLine(sv.runErr.Error()))
		case err := <-serveErr:
			sv.runErr = err
			return nil
		}
	}
}

// stop stops accepting, lets the requests in flight finish, ends the open episodes
// (truncated), lets the sampler poll what is left and write its last batch, closes the file
// and says what was served and written.
func (sv *serving) stop(hs *http.Server, stderr io.Writer) error {
	sctx, cancel := context.WithTimeout(context.Background(), sv.f.shutdownTimeout)
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	cancel()
	closeErr := sv.s.srv.Close()
	samplerErr := sv.sampler.Wait()
	runErr := sv.runErr
	if runErr != nil {
		samplerErr = nil // the same error
	}
	var writeErr error
	if sv.w != nil {
		writeErr = sv.w.Close()
	}
	fmt.Fprintln(stderr, sv.report(writeErr))
	if sv.failed {
		// The sampler's error was printed when it happened; the writer's sticky error is
		// the same one.
		if writeErr != nil && sameError(runErr, writeErr) {
			writeErr = nil
		}
		runErr = errSamplerFailed
	}
	return errors.Join(runErr, closeErr, samplerErr, writeErr)
}

// report is the line sample serve ends with.
func (sv *serving) report(writeErr error) string {
	m := sv.s.srv.Metrics()
	msg := fmt.Sprintf("sample serve: stopped after %d actions (%d episodes started)", m.Requests("action", http.StatusOK), m.EpisodesStarted())
	if sv.w == nil {
		return msg
	}
	batches, rows := sv.sampler.Written()
	if writeErr != nil || sv.failed {
		rows = sv.sampler.Flushed() // what write accepted may not have reached the disk
		return msg + fmt.Sprintf("; %d rows confirmed on disk in %v", rows, sv.w.Files())
	}
	return msg + fmt.Sprintf("; wrote %d rows in %d batches to %v", rows, batches, sv.w.Files())
}
