package env

import (
	"errors"
	"fmt"
)

// BaseEnvOptions configures the adapters to BaseEnv and RemoteVectorEnv.
type BaseEnvOptions struct {
	// NumEnvs is the number of sub-environments (RLlib's num_envs_per_env_runner); 0 means 1.
	// NewVectorBaseEnv takes it from the VectorEnv (a different non-zero value is an error).
	NumEnvs int
	// Seed, when set, seeds sub-environment i with Seed.Value+i on its first reset (the first
	// Poll, or a TryReset without a seed before it). After its k-th restart, the first reset
	// of the recreated sub-environment i is seeded with Seed.Value+i+k*NumEnvs, so that a run
	// with faults is still reproducible and no two instances share a seed. A seed passed to
	// TryReset always wins; other resets do not reseed.
	Seed Seed
	// RestartFailedSubEnvironments (RLlib's restart_failed_sub_environments): a
	// sub-environment whose Reset or Step returns an error or panics is recreated from its
	// maker, reported once as EnvStatus{Env: i, Err: err} (no agents; its episode is faulty
	// and should be discarded) and needs TryReset, which resets the new instance. Without it
	// the failure is returned as a *SubEnvError by the Poll, SendActions or TryReset that ran
	// it; the other sub-environments are unaffected, and the failed one needs TryReset (which
	// resets the same instance).
	RestartFailedSubEnvironments bool
}

func (o BaseEnvOptions) numEnvs() (int, error) {
	switch {
	case o.NumEnvs < 0:
		return 0, fmt.Errorf("env: NumEnvs must not be negative, got %d", o.NumEnvs)
	case o.NumEnvs == 0:
		return 1, nil
	}
	return o.NumEnvs, nil
}

// baseEnv is the synchronous adapter from Env or MultiAgentEnv sub-environments to BaseEnv
// (RLlib's VectorEnvWrapper / MultiAgentEnvWrapper): every reset and step runs inside the
// call that asks for it, on the caller's goroutine.
type baseEnv struct {
	slots   []*slot
	tbl     table
	ready   []int       // slots stepped or reset since the last Poll, in order
	faults  []EnvStatus // restarted failures that the next Poll reports
	errs    []error
	started bool
	stopped bool
}

// NewBaseEnv returns a BaseEnv of opts.NumEnvs sub-environments made by make(0), make(1), ...
// (RLlib's convert_to_base_env with num_envs). Each reports one agent, DefaultAgentID.
//
// The BaseEnv steps its sub-environments synchronously: SendActions steps every
// sub-environment that was given actions, and the next Poll reports them. See the package
// documentation for the protocol and how long returned data stays valid. The BaseEnv
// implements SubEnvironmentser and TryRenderer.
func NewBaseEnv(make func(index int) (Env, error), opts BaseEnvOptions) (BaseEnv, error) {
	if make == nil {
		return nil, errors.New("env: NewBaseEnv: make is nil")
	}
	return newBaseEnv(asAny(make), opts, nil)
}

// NewMultiAgentBaseEnv returns a BaseEnv of opts.NumEnvs multi-agent sub-environments made by
// make(0), make(1), ... (RLlib's MultiAgentEnvWrapper). Poll reports the agents each
// sub-environment reported; SendActions wants one action for each reported agent that is not
// done; a sub-environment's episode ends when it sets AllTerminated or AllTruncated
// ("__all__"), and every agent reported on that step is marked done. Agents may appear and
// leave during an episode. The BaseEnv implements SubEnvironmentser and TryRenderer.
func NewMultiAgentBaseEnv(make func(index int) (MultiAgentEnv, error), opts BaseEnvOptions) (BaseEnv, error) {
	if make == nil {
		return nil, errors.New("env: NewMultiAgentBaseEnv: make is nil")
	}
	return newBaseEnv(asAny(make), opts, nil)
}

// ToBaseEnv turns what make returns into a BaseEnv, as RLlib's convert_to_base_env does:
// make(0) is called once, and
//   - a BaseEnv is returned as it is (opts must be zero but for NumEnvs 0 or 1);
//   - a VectorEnv goes to NewVectorBaseEnv;
//   - an Env or a MultiAgentEnv becomes sub-environment 0 of a synchronous adapter of
//     opts.NumEnvs sub-environments, the others made by make(1), make(2), ...
//
// make may return what Make returns (an Environment) or an environment value itself; a
// registered environment is turned into a BaseEnv with MakeBaseEnv(name, cfg, opts), which is
//
//	ToBaseEnv(func(int) (any, error) { return Make(name, cfg) }, opts)
func ToBaseEnv(make func(index int) (any, error), opts BaseEnvOptions) (BaseEnv, error) {
	if make == nil {
		return nil, errors.New("env: ToBaseEnv: make is nil")
	}
	make = unwrapEnvironment(make)
	first, err := make(0)
	if err != nil {
		return nil, fmt.Errorf("env: make sub-environment 0: %w", err)
	}
	switch e := first.(type) {
	case BaseEnv:
		if opts.NumEnvs > 1 || opts.Seed.Set || opts.RestartFailedSubEnvironments {
			return nil, fmt.Errorf("env: ToBaseEnv: %T is already a BaseEnv; options do not apply to it", e)
		}
		return e, nil
	case VectorEnv:
		return NewVectorBaseEnv(e, opts)
	case Env, MultiAgentEnv:
		return newBaseEnv(make, opts, first)
	case nil:
		return nil, errors.New("env: make sub-environment 0 returned nil")
	}
	return nil, fmt.Errorf("env: ToBaseEnv: %T is not an Env, MultiAgentEnv, VectorEnv or BaseEnv", first)
}

func newBaseEnv(make func(int) (any, error), opts BaseEnvOptions, first any) (*baseEnv, error) {
	n, err := opts.numEnvs()
	if err != nil {
		return nil, err
	}
	b := &baseEnv{slots: newSlice[*slot](n), tbl: newTable(n), ready: newSlice[int](0)}
	for i := range n {
		var raw any
		if i == 0 {
			raw = first
		}
		if b.slots[i], err = newSlot(i, n, make, opts, raw); err != nil {
			for _, s := range b.slots[:i] {
				s.close()
			}
			return nil, err
		}
	}
	return b, nil
}

// settle records the outcome of a reset or step of s: ready for the next Poll, a restarted
// failure for the next Poll, or a failure to return.
func (b *baseEnv) settle(s *slot) error {
	set := &b.tbl.sets[s.index]
	if s.fault == nil {
		set.state = stReady
		b.ready = append(b.ready, s.index)
		return nil
	}
	set.state = stFailed
	if s.restarted {
		b.faults = append(b.faults, EnvStatus{Env: s.index, Err: s.fault})
		return nil
	}
	return s.fault
}

// Poll implements BaseEnv. The first Poll resets every sub-environment that was not reset by
// TryReset; later ones report the sub-environments stepped by SendActions. Restarted
// failures are reported as EnvStatus entries with Err set.
func (b *baseEnv) Poll(dst *Batch) error {
	if b.stopped {
		return ErrStopped
	}
	if !b.started {
		b.started = true
		for i, s := range b.slots {
			if b.tbl.sets[i].state == stNew {
				s.doReset(Seed{})
				if err := b.settle(s); err != nil {
					b.errs = append(b.errs, err)
				}
			}
		}
	}
	dst.Envs = append(dst.Envs, b.faults...)
	clear(b.faults)
	b.faults = b.faults[:0]
	for _, i := range b.ready {
		if b.tbl.sets[i].state == stReady {
			b.tbl.report(b.slots[i], dst)
		}
	}
	b.ready = b.ready[:0]
	return takeErrs(&b.errs)
}

// SendActions implements BaseEnv: it checks the actions (see ErrBadActions, ErrNeedsReset,
// ActionError) before stepping anything, then steps every sub-environment that waits for
// actions.
func (b *baseEnv) SendActions(actions []Action) error {
	if b.stopped {
		return ErrStopped
	}
	if err := b.tbl.match(actions); err != nil {
		return err
	}
	for _, i := range b.tbl.await {
		set := &b.tbl.sets[i]
		set.listed = false
		if set.state != stAwaiting {
			continue
		}
		s := b.slots[i]
		b.tbl.takeActions(s, false)
		s.doStep()
		clear(s.acts) // the caller's action slices are not ours to keep
		if err := b.settle(s); err != nil {
			b.errs = append(b.errs, err)
		}
	}
	b.tbl.await = b.tbl.await[:0]
	return takeErrs(&b.errs)
}

// TryReset implements BaseEnv: it resets sub-environment env synchronously (async is always
// false) and appends its first observations to dst. The agents it reports need actions in
// the next SendActions.
func (b *baseEnv) TryReset(env EnvID, seed Seed, dst *Batch) (bool, error) {
	if b.stopped {
		return false, ErrStopped
	}
	if env < 0 || env >= len(b.slots) {
		return false, fmt.Errorf("env: TryReset: unknown sub-environment %d (there are %d)", env, len(b.slots))
	}
	s := b.slots[env]
	s.doReset(seed)
	if s.fault != nil {
		b.tbl.sets[env].state = stFailed
		if s.restarted {
			dst.Envs = append(dst.Envs, EnvStatus{Env: env, Err: s.fault})
			return false, nil
		}
		return false, s.fault
	}
	b.tbl.report(s, dst)
	return false, nil
}

// Stop implements BaseEnv: it closes the sub-environments that are io.Closers. Later calls
// of the other methods return ErrStopped.
func (b *baseEnv) Stop() error {
	if b.stopped {
		return nil
	}
	b.stopped = true
	var errs []error
	for _, s := range b.slots {
		if err := s.close(); err != nil {
			errs = append(errs, fmt.Errorf("env: close sub-environment %d: %w", s.index, err))
		}
	}
	return errors.Join(errs...)
}

// SubEnvironments returns the sub-environments as made (Env or MultiAgentEnv values). After
// a restart the slice holds the new instance only in a later call.
func (b *baseEnv) SubEnvironments() []any {
	out := make([]any, len(b.slots))
	for i, s := range b.slots {
		out[i] = s.raw
	}
	return out
}

// TryRender renders sub-environment env when it implements Renderer.
func (b *baseEnv) TryRender(env EnvID) (any, error) {
	if env < 0 || env >= len(b.slots) {
		return nil, fmt.Errorf("env: TryRender: unknown sub-environment %d (there are %d)", env, len(b.slots))
	}
	r, ok := b.slots[env].raw.(Renderer)
	if !ok {
		return nil, fmt.Errorf("env: TryRender: sub-environment %d (%T) does not implement Renderer", env, b.slots[env].raw)
	}
	return safeRender(r)
}

// asAny adapts a typed maker to the adapters' untyped one; a nil environment stays a nil any.
func asAny[T comparable](make func(int) (T, error)) func(int) (any, error) {
	return func(i int) (any, error) {
		e, err := make(i)
		var none T
		if err != nil || e == none {
			return nil, err
		}
		return e, nil
	}
}

// takeErrs returns the collected errors as one error (nil, the only one, or errors.Join of
// all) and empties the list, keeping its storage.
func takeErrs(errs *[]error) error {
	var err error
	switch len(*errs) {
	case 0:
	case 1:
		err = (*errs)[0]
	default:
		err = errors.Join(*errs...)
	}
	clear(*errs)
	*errs = (*errs)[:0]
	return err
}

// unwrapEnvironment returns make with the environment inside an Environment it returns
// taken out.
func unwrapEnvironment(make func(int) (any, error)) func(int) (any, error) {
	return func(i int) (any, error) {
		v, err := make(i)
		if e, ok := v.(Environment); ok {
			return e.v, err
		}
		return v, err
	}
}
