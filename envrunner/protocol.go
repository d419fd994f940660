package envrunner

import (
	"runtime"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/internal/grow"
)

// envProtocol is how the runner exchanges observations and actions with its environment.
// New picks one, once: rowProtocol (Poll and SendActions, any BaseEnv) or columnProtocol
// (env.Columnar's shared columns). Everything else (episodes, batches, metrics, callbacks)
// is the same under both; TestColumnarMatchesPollSend holds them to the same results.
type envProtocol interface {
	// poll asks the environment for what is ready. Statuses and per-agent rows land in the
	// runner's batch; rows the protocol keeps elsewhere wait for takeReady.
	poll() error
	// takeReady takes in the ready rows that poll did not put in the batch and returns
	// their number.
	takeReady() int
	// reset resets sub-environment e (its episode ended), takes in its statuses and first
	// observation, and returns the number of rows taken in outside the batch.
	reset(e env.EnvID) (int, error)
	// startActions prepares for a step's actions: need is the most values they may take.
	startActions(need int)
	// sendAction queues agent a's action (the slice is the action connectors' and valid
	// only until the next model run).
	sendAction(p *policy, a *agentRec, act []float32)
	// flush sends the step's queued actions to the environment.
	flush() error
	// withdraw takes back the actions of policy p's rows in this step (its model run
	// failed).
	withdraw(p *policy)
	// settle puts every trajectory row the protocol holds for its records into them
	// (columnProtocol.pend), before anything else reads or drops a trajectory.
	settle()
	// deferred returns the rows of a's trajectory that the protocol holds for it, which
	// follow those in a.tr: k rows, row i at rows[i*stride:]; k is 0 when it holds none.
	// cut emits them from there, and then takes the rows from the first'th on into a.tr
	// (takeDeferred, only for a record deferred reported rows of), forgetting the others.
	deferred(a *agentRec) (rows []float32, stride, k int)
	takeDeferred(a *agentRec, first int)
	// inColumns answers where agent a's last observation, info, reward and action live:
	// the environment's columns it returns (row a.envID), or the record (nil).
	inColumns(a *agentRec) *env.Columns
}

// neverWaits reports whether r's steps run entirely on the goroutine that calls Step: under
// the columnar protocol (a VectorBaseEnv) every sub-environment steps in the call, and no
// step waits for another goroutine, as a RemoteVectorEnv's or an ExternalEnv's do.
func (r *Runner) neverWaits() bool {
	_, ok := r.proto.(*columnProtocol)
	return ok
}

// holdThread locks the calling goroutine to its thread when r's steps never wait, and
// returns what undoes it (Group's loop and Sample call it around their steps; the locks
// nest, so a caller's own stays). Unlocked, the scheduler's preemption of a goroutine that
// runs for 10 ms may resume it on another thread, and so on another core, whose caches hold
// none of the runner's data: over runs of 20 fragments, locked stepping took 3-4% less CPU
// and wall time. A runner whose steps wait for other goroutines (a RemoteVectorEnv's) stays
// unlocked: each wake-up of a locked goroutine is a hand-off between threads (sample run
// --remote with 8 sub-environments ran at half the speed).
func (r *Runner) holdThread() (release func()) {
	if !r.neverWaits() {
		return func() {}
	}
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// pickProtocol returns the columnar protocol when the environment offers it and every
// policy's rows match its columns, and the row protocol otherwise.
func (r *Runner) pickProtocol() envProtocol {
	if c := newColumnProtocol(r); c != nil {
		return c
	}
	return &rowProtocol{r: r}
}

// rowProtocol drives any BaseEnv through Poll and SendActions.
type rowProtocol struct {
	r       *Runner
	actions []env.Action
	values  []float32 // the actions' values, sized by startActions so they never move
}

func (p *rowProtocol) poll() error { return p.r.env.Poll(&p.r.batch) }

func (p *rowProtocol) takeReady() int { return 0 }

func (p *rowProtocol) reset(e env.EnvID) (int, error) {
	ne := len(p.r.batch.Envs)
	if _, err := p.r.env.TryReset(e, env.Seed{}, &p.r.batch); err != nil {
		return 0, err
	}
	p.r.statuses(ne)
	return 0, nil
}

func (p *rowProtocol) startActions(need int) {
	if cap(p.values) < need {
		p.values = make([]float32, 0, need+need/2)
	}
	p.values = p.values[:0]
}

func (p *rowProtocol) sendAction(pol *policy, a *agentRec, act []float32) {
	off := len(p.values)
	p.values = append(p.values, act...)
	sent := p.values[off : off+pol.actW : off+pol.actW]
	x := grow.Zero(&p.actions)
	x.Env, x.Agent, x.Action = a.ep.EnvID, a.id, sent
	// The values are refilled in the next step, before OnEpisodeEnd may ask for the last
	// action: the record keeps a copy (of the logged action, where the environment took its
	// own).
	a.lastBuf = append(a.lastBuf[:0], a.rowAction(act)...)
	a.lastAct = a.lastBuf
	a.pending = true
	if pol.records {
		// The agent connectors see the action the batch records (RLlib's on_policy_output
		// with action_to_buffer).
		pol.agent.RecordAction(a.slot, a.lastAct)
	}
}

func (p *rowProtocol) flush() error {
	var err error
	if len(p.actions) > 0 {
		err = p.r.env.SendActions(p.actions)
	}
	clear(p.actions)
	p.actions = p.actions[:0]
	return err
}

// withdraw does nothing: no action of the step was sent, and the agents keep waiting.
func (p *rowProtocol) withdraw(*policy) {}

// settle does nothing: every row is in its record.
func (p *rowProtocol) settle() {}

// deferred returns no rows: every row is in its record.
func (p *rowProtocol) deferred(*agentRec) ([]float32, int, int) { return nil, 0, 0 }

// takeDeferred does nothing: there are no deferred rows.
func (p *rowProtocol) takeDeferred(*agentRec, int) {}

// inColumns returns nil: the record keeps the agent's last values.
func (p *rowProtocol) inColumns(*agentRec) *env.Columns { return nil }
