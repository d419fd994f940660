package env

import (
	"errors"
	"fmt"
	"io"

	"github.com/onnxrl/sampler/spaces"
)

// vectorBaseEnv is the adapter from VectorEnv to BaseEnv (RLlib's VectorEnvWrapper).
type vectorBaseEnv struct {
	v          VectorEnv
	n          int
	obsN, actN int
	obs, act   []float32
	res        []StepResult
	actSpace   spaces.Space
	restarter  Restarter // nil when v cannot restart sub-environments
	opts       BaseEnvOptions

	tbl        table // sets[i].state is written through setState only; await is unused
	nAwait     int   // sub-environments in stAwaiting
	restarts   []int
	instResets []int
	wasReset   []bool
	ready      []int
	readyAll   bool // every sub-environment was stepped: all of them are on the ready list
	clean      bool // ... and every one of them is still stReady (no setState since)
	all        []int
	polled     []int
	faults     []EnvStatus
	errs       []error
	subErrs    []*SubEnvError
	started    bool
	stopped    bool
}

// NewVectorBaseEnv returns a BaseEnv over the sub-environments of v, each reporting one agent,
// DefaultAgentID. opts.NumEnvs must be 0 or v.NumEnvs().
//
// A VectorEnv steps all its sub-environments together, so SendActions needs an action for
// every sub-environment: one whose episode ended must be reset with TryReset first (otherwise
// SendActions returns ErrNeedsReset naming it, and steps nothing). Observations are rows of
// one buffer owned by the adapter. RestartFailedSubEnvironments needs a VectorEnv that
// implements Restarter (as NewVectorEnv's does); otherwise failures are returned as errors.
// A sub-environment failure is recognised by a *SubEnvError from ResetAt or Step (several
// joined with errors.Join); any other error of Step fails every sub-environment.
func NewVectorBaseEnv(v VectorEnv, opts BaseEnvOptions) (BaseEnv, error) {
	if v == nil {
		return nil, errors.New("env: NewVectorBaseEnv: nil VectorEnv")
	}
	n := v.NumEnvs()
	if n <= 0 {
		return nil, fmt.Errorf("env: NewVectorBaseEnv: the VectorEnv has %d sub-environments", n)
	}
	if opts.NumEnvs != 0 && opts.NumEnvs != n {
		return nil, fmt.Errorf("env: NewVectorBaseEnv: NumEnvs is %d but the VectorEnv has %d sub-environments", opts.NumEnvs, n)
	}
	opts.NumEnvs = n
	b := &vectorBaseEnv{v: v, n: n, actSpace: v.ActionSpace(), opts: opts, tbl: newTable(n),
		restarts: newSlice[int](n), instResets: newSlice[int](n), wasReset: newSlice[bool](n),
		res: newSlice[StepResult](n), all: newSlice[int](n)}
	b.obsN, b.actN = v.ObservationSpace().Size(), b.actSpace.Size()
	b.obs, b.act = newSlice[float32](n*b.obsN), newSlice[float32](n*b.actN)
	b.restarter, _ = v.(Restarter)
	for i := range n {
		b.tbl.sets[i].exp = []expect{{id: DefaultAgentID, space: b.actSpace}}
		b.all[i] = i
	}
	return b, nil
}

// setState moves sub-environment i to state s, keeping count of those that await actions.
func (b *vectorBaseEnv) setState(i int, s slotState) {
	p := &b.tbl.sets[i].state
	if *p == stAwaiting {
		b.nAwait--
	}
	if s == stAwaiting {
		b.nAwait++
	}
	*p = s
	b.clean = false
}

func (b *vectorBaseEnv) row(i int) []float32 { return b.obs[i*b.obsN : (i+1)*b.obsN] }

func safeVecReset(v VectorEnv, i int, seed Seed, obs []float32) (info Info, err error) {
	defer recoverTo(&err)
	return v.ResetAt(i, seed, obs)
}

func safeVecStep(v VectorEnv, act, obs []float32, res []StepResult) (err error) {
	defer recoverTo(&err)
	return v.Step(act, obs, res)
}

// fail handles the failure of sub-environment i: restart and report it, or return it.
func (b *vectorBaseEnv) fail(i int, op string, err error) error {
	se, ok := err.(*SubEnvError)
	if !ok || se.Env != i {
		se = &SubEnvError{Env: i, Op: op, Err: err}
	}
	b.setState(i, stFailed)
	if !b.opts.RestartFailedSubEnvironments || b.restarter == nil {
		return se
	}
	if rerr := b.restarter.RestartAt(i); rerr != nil {
		return &SubEnvError{Env: i, Op: "restart", Err: fmt.Errorf("recreating after %s failed (%v): %w", op, err, rerr)}
	}
	b.restarts[i]++
	b.instResets[i] = 0
	b.faults = append(b.faults, EnvStatus{Env: i, Err: se})
	return nil
}

func (b *vectorBaseEnv) resetOne(i int, seed Seed) error {
	if !seed.Set && b.opts.Seed.Set && b.instResets[i] == 0 {
		seed = WithSeed(b.opts.Seed.Value + uint64(i) + uint64(b.restarts[i])*uint64(b.n))
	}
	info, err := safeVecReset(b.v, i, seed, b.row(i))
	if err != nil {
		return b.fail(i, "reset", err)
	}
	b.instResets[i]++
	b.res[i] = StepResult{Info: info}
	b.wasReset[i] = true
	b.setState(i, stReady)
	return nil
}

// mark moves sub-environment i, whose result is being reported, to ended or awaiting.
func (b *vectorBaseEnv) mark(i int) {
	if r := &b.res[i]; r.Terminated || r.Truncated {
		b.setState(i, stEnded)
	} else {
		b.setState(i, stAwaiting)
	}
}

// report reports sub-environment i's result: its status and its agent.
func (b *vectorBaseEnv) report(i int, dst *Batch) {
	b.mark(i)
	b.appendResult(i, dst)
}

func (b *vectorBaseEnv) appendResult(i int, dst *Batch) {
	r := &b.res[i]
	dst.Envs = append(dst.Envs, EnvStatus{Env: i, Terminated: r.Terminated, Truncated: r.Truncated, Reset: b.wasReset[i]})
	o := dst.AddAgent()
	o.Env, o.Agent, o.Obs, o.Reward, o.Terminated, o.Truncated, o.Info = i, DefaultAgentID, b.row(i), r.Reward, r.Terminated, r.Truncated, r.Info
}

func (b *vectorBaseEnv) Poll(dst *Batch) error {
	ready, err := b.PollColumns(dst)
	for _, i := range ready {
		b.appendResult(i, dst)
	}
	return err
}

// PollColumns implements Columnar.
func (b *vectorBaseEnv) PollColumns(dst *Batch) ([]int, error) {
	if b.stopped {
		return nil, ErrStopped
	}
	if !b.started {
		b.started = true
		for i := range b.n {
			if b.tbl.sets[i].state == stNew {
				if err := b.resetOne(i, Seed{}); err != nil {
					b.errs = append(b.errs, err)
				} else {
					b.ready = append(b.ready, i)
				}
			}
		}
	}
	dst.Envs = append(dst.Envs, b.faults...)
	clear(b.faults)
	b.faults = b.faults[:0]
	b.polled = b.polled[:0]
	if b.readyAll {
		// After a step every sub-environment is ready, unless one failed or was reset since.
		b.readyAll = false
		sets, res := b.tbl.sets[:b.n], b.res[:b.n]
		clean := b.clean
		b.clean = false
		if clean { // otherwise a state changed since the step: the list below sorts it out
			for i := range sets {
				if r := &res[i]; r.Terminated || r.Truncated {
					sets[i].state = stEnded
				} else {
					sets[i].state = stAwaiting
					b.nAwait++
				}
			}
			return b.all, takeErrs(&b.errs)
		}
		b.ready = append(b.ready, b.all...)
	}
	for _, i := range b.ready {
		if b.tbl.sets[i].state == stReady {
			b.mark(i)
			b.polled = append(b.polled, i)
		}
	}
	b.ready = b.ready[:0]
	return b.polled, takeErrs(&b.errs)
}

func (b *vectorBaseEnv) SendActions(actions []Action) error {
	if b.stopped {
		return ErrStopped
	}
	err := b.tbl.match1(actions)
	if err == nil {
		err = b.checkAwaiting()
	}
	if err == nil {
		for i := range b.n {
			if !b.tbl.sets[i].exp[0].got {
				err = fmt.Errorf("%w: no action for agent %q of sub-environment %d", ErrBadActions, DefaultAgentID, i)
				break
			}
		}
	}
	if err != nil {
		b.clearGot()
		return err
	}
	for i := range b.n {
		e := &b.tbl.sets[i].exp[0]
		copy(b.act[i*b.actN:(i+1)*b.actN], e.action)
		e.got, e.action = false, nil
	}
	return b.step()
}

// clearGot forgets the actions that a refused SendActions recorded.
func (b *vectorBaseEnv) clearGot() {
	for i := range b.n {
		e := &b.tbl.sets[i].exp[0]
		e.got, e.action = false, nil
	}
}

// checkAwaiting returns an error unless every sub-environment waits for its action.
func (b *vectorBaseEnv) checkAwaiting() error {
	if b.nAwait == b.n {
		return nil
	}
	for i := range b.n {
		switch b.tbl.sets[i].state {
		case stAwaiting:
		case stEnded, stFailed:
			return fmt.Errorf("env: sub-environment %d must be reset with TryReset before SendActions (a VectorEnv steps all its sub-environments together): %w", i, ErrNeedsReset)
		default:
			return fmt.Errorf("%w: sub-environment %d has results that were not polled yet", ErrBadActions, i)
		}
	}
	return nil
}

// StepColumns implements Columnar.
func (b *vectorBaseEnv) StepColumns() error {
	if b.stopped {
		return ErrStopped
	}
	if err := b.checkAwaiting(); err != nil {
		return err
	}
	return b.step()
}

// step steps the VectorEnv with the actions in b.act.
func (b *vectorBaseEnv) step() error {
	err := safeVecStep(b.v, b.act, b.obs, b.res)
	b.subErrs = b.subErrs[:0]
	if err != nil {
		b.subErrs = subEnvErrors(b.subErrs, err)
		var ae *ActionError
		if len(b.subErrs) == 0 && (errors.As(err, &ae) || errors.Is(err, ErrNeedsReset)) {
			// The VectorEnv refused the call and stepped nothing (its contract): the
			// sub-environments still wait for actions.
			for i := range b.n {
				b.setState(i, stAwaiting)
			}
			return fmt.Errorf("env: VectorEnv.Step: %w", err)
		}
		if len(b.subErrs) == 0 {
			for i := range b.n {
				b.setState(i, stFailed)
			}
			return fmt.Errorf("env: VectorEnv.Step: %w", err)
		}
	}
	sets := b.tbl.sets[:b.n]
	for i := range sets {
		sets[i].state = stReady
	}
	b.nAwait = 0
	clear(b.wasReset)
	b.readyAll, b.clean = true, true
	for _, se := range b.subErrs {
		if se.Env < 0 || se.Env >= b.n {
			continue
		}
		if ferr := b.fail(se.Env, "step", se); ferr != nil {
			b.errs = append(b.errs, ferr)
		}
	}
	clear(b.subErrs) // the failed ones are on the ready list too: Poll skips them
	return takeErrs(&b.errs)
}

func (b *vectorBaseEnv) TryReset(env EnvID, seed Seed, dst *Batch) (bool, error) {
	ok, err := b.ResetColumns(env, seed, dst)
	if ok {
		b.appendResult(env, dst)
	}
	return false, err
}

// ResetColumns implements Columnar.
func (b *vectorBaseEnv) ResetColumns(env EnvID, seed Seed, dst *Batch) (bool, error) {
	if b.stopped {
		return false, ErrStopped
	}
	if env < 0 || env >= b.n {
		return false, fmt.Errorf("env: TryReset: unknown sub-environment %d (there are %d)", env, b.n)
	}
	if err := b.resetOne(env, seed); err != nil {
		return false, err
	}
	if b.tbl.sets[env].state == stFailed { // restarted: report the failure now
		last := len(b.faults) - 1
		dst.Envs = append(dst.Envs, b.faults[last])
		b.faults[last] = EnvStatus{}
		b.faults = b.faults[:last]
		return false, nil
	}
	b.mark(env)
	return true, nil
}

// Columns implements Columnar.
func (b *vectorBaseEnv) Columns() Columns {
	return Columns{Obs: b.obs, ObsSize: b.obsN, Actions: b.act, ActionSize: b.actN, Results: b.res, Reset: b.wasReset}
}

func (b *vectorBaseEnv) Stop() error {
	if b.stopped {
		return nil
	}
	b.stopped = true
	if c, ok := b.v.(io.Closer); ok {
		return safeClose(c)
	}
	var errs []error
	for i, e := range b.v.SubEnvironments() {
		if c, ok := e.(io.Closer); ok {
			if err := safeClose(c); err != nil {
				errs = append(errs, fmt.Errorf("env: close sub-environment %d: %w", i, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (b *vectorBaseEnv) SubEnvironments() []any { return b.v.SubEnvironments() }

func (b *vectorBaseEnv) TryRender(env EnvID) (any, error) {
	subs := b.v.SubEnvironments()
	if env < 0 || env >= len(subs) {
		return nil, fmt.Errorf("env: TryRender: unknown sub-environment %d (there are %d)", env, len(subs))
	}
	r, ok := subs[env].(Renderer)
	if !ok {
		return nil, fmt.Errorf("env: TryRender: sub-environment %d (%T) does not implement Renderer", env, subs[env])
	}
	return safeRender(r)
}
