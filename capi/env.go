package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/onnxrl/sampler/connectors"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"github.com/onnxrl/sampler/externalenv"
	"github.com/onnxrl/sampler/externalenv/server"
	"github.com/onnxrl/sampler/inference"
	"github.com/onnxrl/sampler/models"
)

// cenv is an onnxrl_env: an ExternalEnv whose episodes the host runs, a sampler goroutine
// that answers their requests with an envrunner.Runner, and the output file.
//
// Every call holds calls.RLock; close takes calls.Lock, so it waits for the calls in flight
// (which the still running sampler answers) and no call sees a half-closed env.
type cenv struct {
	ext      *externalenv.ExternalEnv
	runner   *envrunner.Runner
	sampler  *server.Sampler
	writer   *output.Writer // nil without "out"
	obsSize  int
	actSize  int
	loopDone chan struct{} // closed by close: the run loop returns, and the sampler ends
	// raiseProcs: the threads waiting in get_action(s) count towards GOMAXPROCS (procs.go).
	raiseProcs bool

	calls  sync.RWMutex
	closed bool

	failed  chan struct{} // closed by watch once failErr is set
	failErr error         // why the sampler stopped before close
}

// openEnv opens an env over model with the options JSON.
func openEnv(model string, optionsJSON []byte) (_ *cenv, err error) {
	o := defaultEnvOptions()
	if err := readOptions(optionsJSON, &o); err != nil {
		return nil, err
	}
	if o.Out != "" {
		if err := checkOutDir(o.Out); err != nil {
			return nil, err
		}
	}
	// With "out", an idle env's Poll returns at the flush interval, so that the steps taken
	// before the simulator went quiet are written then, not at its next call or at close.
	var flushEvery time.Duration
	if o.Out != "" {
		flushEvery = time.Duration(o.FlushIntervalMS) * time.Millisecond
	}
	if err := inference.Init(); err != nil { // before BuildExternal: its status, as loadPolicy's
		return nil, withStatus(statusNotFound, err)
	}
	// The env and its runner as sample serve builds them (runspec.BuildExternal), the model
	// loaded by loadPolicy for the C API's statuses and its "max_model_bytes".
	x, err := runspec.BuildExternal(runspec.ExternalSpec{
		Policy: runspec.PolicySpec{Model: model, Device: o.Device, Threads: o.Threads,
			Action: connectors.ActionConfig{Explore: o.Explore, NormalizeActions: o.NormalizeActions, ClipActions: o.ClipActions},
			Open:   func(name string) (*models.Policy, error) { return loadPolicy(name, o.MaxModelBytes) }},
		MaxEpisodes: o.MaxEpisodes, Timeout: time.Duration(o.TimeoutMS) * time.Millisecond, MaxBatch: o.MaxBatch,
		MaxWait: time.Duration(o.MaxWaitUS) * time.Microsecond, IdlePoll: flushEvery,
		Seed: o.Seed, FragmentLength: o.FragmentLength, Record: o.Out != ""})
	if err != nil {
		var ce *codedError
		if errors.As(err, &ce) {
			return nil, err // loadPolicy's, with its status
		}
		return nil, withStatus(openStatus(err), fmt.Errorf("onnxrl: %s: %w", model, err))
	}
	p := x.Policy.Policy
	e := &cenv{ext: x.Env, runner: x.Runner, loopDone: make(chan struct{}), failed: make(chan struct{}),
		obsSize: p.Spec.ObservationSpace.Size(), actSize: p.Spec.ActionSpace.Size(), raiseProcs: o.RaiseGOMAXPROCS}
	defer func() {
		if err != nil {
			x.Close() // the runner's sessions, and stops the env
		}
	}()
	so := server.SamplerOptions{FlushInterval: flushEvery}
	if o.Out != "" {
		wo, _ := o.outputOptions() // checked by readOptions
		wo.Metadata = runspec.Metadata(output.Source{Env: "external", Seed: o.Seed, Explore: o.Explore,
			ObsSpace: p.Spec.ObservationSpace, ActSpace: p.Spec.ActionSpace, Model: model}, p)
		if e.writer, err = output.NewWriter(o.Out, wo); err != nil {
			return nil, withStatus(statusIO, fmt.Errorf("onnxrl: %w", err))
		}
		w := e.writer
		so.Write = func(b *envrunner.MultiAgentBatch) error { return withStatus(statusIO, w.Write(b)) }
		so.Flush = func() error { return withStatus(statusIO, w.Flush()) }
	}
	x.Env.Start(context.Background(), func(ctx context.Context, _ *externalenv.ExternalEnv) error {
		<-e.loopDone
		return nil
	})
	e.sampler = server.StartSamplerWith(e.runner, so)
	go e.watch()
	return e, nil
}

// watch stops the env when the sampler fails before close (a write error, a model that fails
// to run), so that waiting calls return its error instead of waiting for their timeout.
func (e *cenv) watch() {
	select {
	case <-e.sampler.Done():
	case <-e.loopDone:
		return
	}
	select {
	case <-e.loopDone:
		return // closing: the sampler ended because the run loop did
	default:
	}
	// The sampler cannot end normally before the run loop, which waits for loopDone.
	e.failErr = e.sampler.Wait()
	if e.failErr == nil {
		e.failErr = errors.New("the sampler stopped")
	}
	close(e.failed)
	e.ext.Stop()
}

// why returns the error a call reports for err: when the sampler has failed, its error.
func (e *cenv) why(err error) error {
	if errors.Is(err, externalenv.ErrStopped) {
		select {
		case <-e.failed:
			return withStatus(failStatus(e.failErr), fmt.Errorf("onnxrl: the env's sampler failed: %w", e.failErr))
		default:
		}
	}
	return err
}

// failStatus is the status of the sampler's error: a write's is statusIO, a model's run's
// statusModel.
func failStatus(err error) int {
	if s := statusOf(err); s != statusInternal {
		return s
	}
	return statusModel
}

// enter starts a call; the caller calls e.calls.RUnlock when it returns.
func (e *cenv) enter() error {
	e.calls.RLock()
	if e.closed {
		e.calls.RUnlock()
		return fmt.Errorf("%w (closed during the call)", errReleased)
	}
	return nil
}

// maxIDLen is the longest episode id, in bytes.
const maxIDLen = 1024

// idOf checks episode id, given as bytes from C, and returns it as a string over the same
// bytes, without a copy: valid for the call only. ExternalEnv finds episodes by their id and
// keeps no id it is given, except StartEpisode's (start passes a copy).
func idOf(id []byte) (string, error) {
	if len(id) == 0 {
		return "", withStatus(statusInvalidArgument, errors.New("onnxrl: empty episode id"))
	}
	if len(id) > maxIDLen {
		return "", withStatus(statusLimit, fmt.Errorf("onnxrl: episode id of more than %d bytes", maxIDLen))
	}
	return unsafe.String(&id[0], len(id)), nil
}

// start starts an episode (id nil: a new UUID) and returns its id.
func (e *cenv) start(id []byte, training bool) (string, error) {
	if err := e.enter(); err != nil {
		return "", err
	}
	defer e.calls.RUnlock()
	if id != nil && len(id) == 0 {
		return "", withStatus(statusInvalidArgument, errors.New("onnxrl: empty episode id (pass NULL to have one generated)"))
	}
	if len(id) > maxIDLen {
		return "", withStatus(statusLimit, fmt.Errorf("onnxrl: episode id of %d bytes, at most %d", len(id), maxIDLen))
	}
	got, err := e.ext.StartEpisode(string(id), training)
	if errors.Is(err, externalenv.ErrTooManyEpisodes) {
		err = fmt.Errorf("%w (raise the option \"max_episodes\")", err)
	}
	if err != nil {
		return "", e.why(err)
	}
	return got, nil
}

// withEpisode runs f, a call on episode id, while the env is open; f's error goes through
// why (ExternalEnv tells an ended id from an unknown one).
func (e *cenv) withEpisode(id []byte, f func(id string) error) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.calls.RUnlock()
	s, err := idOf(id)
	if err != nil {
		return err
	}
	return e.why(f(s))
}

// getAction reports obs for episode id and waits for its action, written to act.
func (e *cenv) getAction(id []byte, obs, act []float32) error {
	if e.raiseProcs {
		waitIn()
		defer waitOut()
	}
	return e.withEpisode(id, func(id string) error {
		a, err := e.ext.GetAction(context.Background(), id, obs)
		if err != nil {
			return err
		}
		copy(act, a)
		return nil
	})
}

// batchScratch holds the ids of a getActions call (strings over the caller's bytes).
type batchScratch struct {
	ids []string
}

var batchScratchPool = sync.Pool{New: func() any { return &batchScratch{} }}

// getActions is getAction for len(ids) episodes at once; acts has room for their actions.
// When episode i fails, the actions of those before it are written (see the header).
func (e *cenv) getActions(ids [][]byte, obs, acts []float32) error {
	if e.raiseProcs {
		waitIn()
		defer waitOut()
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.calls.RUnlock()
	sc := batchScratchPool.Get().(*batchScratch)
	defer func() {
		clear(sc.ids) // the strings point into the caller's memory
		batchScratchPool.Put(sc)
	}()
	sc.ids = sc.ids[:0]
	var stop error
	for i, id := range ids {
		s, err := idOf(id)
		if err != nil {
			stop = fmt.Errorf("episode %d of %d: %w", i, len(ids), err)
			break
		}
		sc.ids = append(sc.ids, s)
	}
	if _, err := e.ext.GetActions(context.Background(), sc.ids, obs[:len(sc.ids)*e.obsSize], acts[:0]); err != nil {
		return e.why(err)
	}
	return stop
}

// logAction reports obs with the action the simulator took.
func (e *cenv) logAction(id []byte, obs, act []float32) error {
	return e.withEpisode(id, func(id string) error { return e.ext.LogAction(id, obs, act) })
}

// logReturns adds reward to the episode's current step. A reward, or a step's sum of
// rewards, that float32 cannot hold is refused (externalenv.ErrBadReward: the error the
// HTTP server and Python report too).
func (e *cenv) logReturns(id []byte, reward float64) error {
	if err := externalenv.CheckReward(reward, ""); err != nil {
		return err
	}
	return e.withEpisode(id, func(id string) error { return e.ext.LogReturns(id, reward, nil) })
}

// logReturnsBatch is logReturns for len(ids) episodes, in order, under one entry: when
// episode i fails, those before it have their rewards logged. The rewards are checked first.
func (e *cenv) logReturnsBatch(ids [][]byte, rewards []float64) error {
	for i, r := range rewards {
		if err := externalenv.CheckReward(r, ""); err != nil {
			return fmt.Errorf("rewards[%d]: %w", i, err)
		}
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.calls.RUnlock()
	for i, id := range ids {
		s, err := idOf(id)
		if err == nil {
			err = e.why(e.ext.LogReturns(s, rewards[i], nil))
		}
		if err != nil {
			return fmt.Errorf("episode %d of %d: %w", i, len(ids), err)
		}
	}
	return nil
}

// end ends the episode with its final observation, terminated or truncated.
func (e *cenv) end(id []byte, obs []float32, truncated bool) error {
	return e.withEpisode(id, func(id string) error {
		if truncated {
			return e.ext.EndEpisodeTruncated(id, obs)
		}
		return e.ext.EndEpisode(id, obs)
	})
}

// close waits for the calls in flight, ends the running episodes truncated with their last
// observations (ExternalEnv's TruncateAll: those that never observed have nothing to record),
// lets the sampler record everything and closes the file.
func (e *cenv) close() error {
	e.calls.Lock()
	e.closed = true
	e.calls.Unlock()
	var errs []error
	if _, err := e.ext.TruncateAll(); err != nil && !errors.Is(err, externalenv.ErrStopped) {
		errs = append(errs, fmt.Errorf("onnxrl: ending the running episodes: %w", err))
	}
	close(e.loopDone)
	samplerErr := e.sampler.Wait()
	if samplerErr != nil {
		errs = append(errs, withStatus(failStatus(samplerErr), fmt.Errorf("onnxrl: the env's sampler failed: %w", samplerErr)))
	}
	if err := e.runner.Close(); err != nil {
		errs = append(errs, withStatus(statusModel, fmt.Errorf("onnxrl: %w", err)))
	}
	if e.writer != nil {
		if err := e.writer.Close(); err != nil {
			errs = append(errs, withStatus(statusIO, fmt.Errorf("onnxrl: %w", err)))
		}
	}
	return errors.Join(errs...)
}
