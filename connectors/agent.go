package connectors

import (
	"encoding/json"
	"fmt"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/spaces"
)

// AgentKey identifies one agent of one sub-environment.
type AgentKey struct {
	Env   env.EnvID
	Agent env.AgentID
}

// Slots maps agents to compact slot indices 0..Len()-1, so that per-agent state lives in
// slices indexed by slot. A slot is allocated (or a released one reused) only when an agent
// appears that has none; looking up a known agent allocates nothing.
type Slots struct {
	index map[AgentKey]int
	keys  []AgentKey
	used  []bool
	free  []int
}

// NewSlots returns an empty registry.
func NewSlots() *Slots { return &Slots{index: make(map[AgentKey]int)} }

// Get returns the slot of the agent, allocating one when it has none; isNew reports that.
func (s *Slots) Get(e env.EnvID, a env.AgentID) (slot int, isNew bool) {
	k := AgentKey{e, a}
	if i, ok := s.index[k]; ok {
		return i, false
	}
	if n := len(s.free); n > 0 {
		slot, s.free = s.free[n-1], s.free[:n-1]
		s.keys[slot], s.used[slot] = k, true
	} else {
		slot = len(s.keys)
		s.keys = append(s.keys, k)
		s.used = append(s.used, true)
	}
	s.index[k] = slot
	return slot, true
}

// Release frees the agent's slot for reuse (when its episode has ended and it will not act
// again under this key). It reports whether the agent had a slot.
func (s *Slots) Release(e env.EnvID, a env.AgentID) bool {
	k := AgentKey{e, a}
	i, ok := s.index[k]
	if !ok {
		return false
	}
	delete(s.index, k)
	s.used[i] = false
	s.keys[i] = AgentKey{}
	s.free = append(s.free, i)
	return true
}

// Len returns the number of slots allocated so far (used or free): every slot index is below.
func (s *Slots) Len() int { return len(s.keys) }

// Active returns the number of agents holding a slot.
func (s *Slots) Active() int { return len(s.index) }

// Key returns the agent holding slot, and false when the slot is free.
func (s *Slots) Key(slot int) (AgentKey, bool) { return s.keys[slot], s.used[slot] }

// AgentConnector is one stage of an AgentPipeline: it turns a vector of its input width into
// a vector of its output width for one agent.
//
// Optional extras are found by type assertion: Stateful (state to read, set and merge across
// workers) and ActionRecorder (connectors that need the agent's last action).
type AgentConnector interface {
	// Name names the connector in states and errors ("flatten", "mean_std_filter", ...).
	Name() string
	// Bind is called once by NewAgentPipeline with the connector's input width and returns
	// its output width; it allocates what the connector needs that does not depend on the
	// number of agents. It is an error when the connector cannot take that input.
	Bind(in int) (out int, err error)
	// Reset starts a new episode for the agent in slot: it clears the agent's history.
	// The pipeline calls it for every new slot before its first Transform, in increasing
	// slot order, so per-agent storage may grow here (and only here).
	Reset(slot int)
	// Transform writes the output for the agent in slot into out (len out width) from in
	// (len in width). reward is the reward delivered with this observation. It must not
	// allocate, and must not panic on any finite or non-finite input.
	Transform(slot int, reward float64, in, out []float32)
}

// Stateful is implemented by connectors with state that workers synchronize (RLlib's filter
// sync). States are JSON documents.
type Stateful interface {
	// State returns the connector's state.
	State() ([]byte, error)
	// SetState replaces the state by one returned by State (of this or another worker).
	SetState(data []byte) error
	// MergeState merges another worker's state into this one: for statistics, the result is
	// the state of one connector that saw both data streams.
	MergeState(data []byte) error
}

// ActionRecorder is implemented by connectors that keep the agents' past actions.
type ActionRecorder interface {
	// RecordAction records the action (raw layout of the action space) the agent in slot
	// just took.
	RecordAction(slot int, action []float32)
}

// AgentPipeline runs agent connectors in order on each agent's observation and writes the
// result straight into the agent's row of the policy's observation input.
//
// An AgentPipeline is owned by one goroutine (the runner's).
type AgentPipeline struct {
	space     spaces.Space
	conns     []AgentConnector
	widths    []int       // widths[0] = space.Size(); widths[i+1] = output of conns[i]
	bufs      [][]float32 // bufs[i] holds the output of conns[i] (the last one writes to the row)
	recorders []ActionRecorder
	slots     *Slots
	resetEnv  []bool // scratch of WriteBatch, indexed by EnvID
	also      []interface{ Reset(slot int) }
}

// NewAgentPipeline returns a pipeline for observations of the space (raw layout) through the
// connectors. With no connectors the row is the raw observation. The first connector usually
// is Flatten.
func NewAgentPipeline(obs spaces.Space, conns ...AgentConnector) (*AgentPipeline, error) {
	if obs == nil {
		return nil, fmt.Errorf("connectors: no observation space")
	}
	if err := obs.Validate(); err != nil {
		return nil, fmt.Errorf("connectors: observation space: %w", err)
	}
	p := &AgentPipeline{space: obs, conns: conns, widths: []int{obs.Size()}, slots: NewSlots()}
	names := map[string]bool{}
	for i, c := range conns {
		if names[c.Name()] {
			return nil, fmt.Errorf("connectors: two agent connectors named %q", c.Name())
		}
		names[c.Name()] = true
		out, err := c.Bind(p.widths[i])
		if err != nil {
			return nil, fmt.Errorf("connectors: agent connector %d (%s) on input width %d: %w", i, c.Name(), p.widths[i], err)
		}
		if out <= 0 {
			return nil, fmt.Errorf("connectors: agent connector %d (%s) has output width %d", i, c.Name(), out)
		}
		p.widths = append(p.widths, out)
		if i < len(conns)-1 {
			p.bufs = append(p.bufs, make([]float32, out))
		}
		if r, ok := c.(ActionRecorder); ok {
			p.recorders = append(p.recorders, r)
		}
	}
	return p, nil
}

// Copies reports whether a row is the raw observation as it is (no connectors, or a Flatten
// of a space whose flatten is a copy, such as a Box): the rows of a batch can then be copied
// in one go.
func (p *AgentPipeline) Copies() bool {
	switch len(p.conns) {
	case 0:
		return true
	case 1:
		f, ok := p.conns[0].(*Flatten)
		return ok && f.plan.copies()
	}
	return false
}

// RecordsActions reports whether a connector keeps past actions (RecordAction does
// something).
func (p *AgentPipeline) RecordsActions() bool { return len(p.recorders) > 0 }

// Width returns the width of a row: the output width of the last connector.
func (p *AgentPipeline) Width() int { return p.widths[len(p.widths)-1] }

// InputSize returns the size of a raw observation.
func (p *AgentPipeline) InputSize() int { return p.widths[0] }

// Connectors returns the connectors in order. The caller must not modify the slice.
func (p *AgentPipeline) Connectors() []AgentConnector { return p.conns }

// Slots returns the pipeline's agent registry.
func (p *AgentPipeline) Slots() *Slots { return p.slots }

// Slot returns the agent's slot, allocating and resetting one for an agent seen for the first
// time. Call it for each ready agent; it allocates only for a new agent.
func (p *AgentPipeline) Slot(e env.EnvID, a env.AgentID) int {
	slot, isNew := p.slots.Get(e, a)
	if isNew {
		p.Reset(slot)
	}
	return slot
}

// Reset starts a new episode for the agent in slot (frame stacks, previous actions and
// rewards back to their initial values).
func (p *AgentPipeline) Reset(slot int) {
	for _, c := range p.conns {
		c.Reset(slot)
	}
	for _, r := range p.also {
		r.Reset(slot)
	}
}

// AlsoReset adds r to what Reset resets: per-agent state kept outside the pipeline, such as
// a StateBuffer, follows the pipeline's slots and episodes.
func (p *AgentPipeline) AlsoReset(r interface{ Reset(slot int) }) {
	p.also = append(p.also, r)
	for i := range p.slots.Len() {
		r.Reset(i)
	}
}

// Release frees the agent's slot; a later Slot for the same agent starts afresh.
func (p *AgentPipeline) Release(e env.EnvID, a env.AgentID) { p.slots.Release(e, a) }

// Write runs the connectors on the agent's raw observation obs and writes its row into row
// (len Width()). It allocates nothing. It panics when a length is wrong.
func (p *AgentPipeline) Write(row []float32, slot int, obs []float32, reward float64) []float32 {
	if len(obs) != p.widths[0] {
		panic(fmt.Sprintf("connectors: AgentPipeline.Write: len(obs) = %d, want %d", len(obs), p.widths[0]))
	}
	if len(row) != p.Width() {
		panic(fmt.Sprintf("connectors: AgentPipeline.Write: len(row) = %d, want %d", len(row), p.Width()))
	}
	if len(p.conns) == 0 {
		copy(row, obs)
		return row
	}
	in := obs
	last := len(p.conns) - 1
	for i, c := range p.conns {
		out := row
		if i < last {
			out = p.bufs[i]
		}
		c.Transform(slot, reward, in, out)
		in = out
	}
	return row
}

// WriteBatch writes row i of dst (a batch of rows, len >= len(agents)*Width()) for each
// agent i, resetting the agents of the envs whose episode starts (EnvStatus.Reset), and
// stores each agent's slot in slots[i]. It is the usual per-step call; it allocates only
// for agents seen for the first time.
func (p *AgentPipeline) WriteBatch(dst []float32, slots []int, b *env.Batch) {
	w := p.Width()
	for _, st := range b.Envs {
		if st.Reset && st.Env >= 0 {
			for st.Env >= len(p.resetEnv) {
				p.resetEnv = append(p.resetEnv, false)
			}
			p.resetEnv[st.Env] = true
		}
	}
	for i := range b.Agents {
		a := &b.Agents[i]
		slot, isNew := p.slots.Get(a.Env, a.Agent)
		if isNew || (a.Env >= 0 && a.Env < len(p.resetEnv) && p.resetEnv[a.Env]) {
			p.Reset(slot)
		}
		slots[i] = slot
		p.Write(dst[i*w:(i+1)*w], slot, a.Obs, a.Reward)
	}
	for _, st := range b.Envs {
		if st.Env >= 0 && st.Env < len(p.resetEnv) {
			p.resetEnv[st.Env] = false
		}
	}
}

// RecordAction tells the connectors that keep past actions the action the agent in slot
// took (raw layout of the action space).
func (p *AgentPipeline) RecordAction(slot int, action []float32) {
	for _, r := range p.recorders {
		r.RecordAction(slot, action)
	}
}

// State returns the states of the Stateful connectors by name.
func (p *AgentPipeline) State() (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, c := range p.conns {
		if s, ok := c.(Stateful); ok {
			data, err := s.State()
			if err != nil {
				return nil, fmt.Errorf("connectors: state of %s: %w", c.Name(), err)
			}
			out[c.Name()] = data
		}
	}
	return out, nil
}

// SetState sets the state of each Stateful connector named in states. A name with no
// Stateful connector is an error.
func (p *AgentPipeline) SetState(states map[string]json.RawMessage) error {
	return p.eachState(states, "set", func(s Stateful, data []byte) error { return s.SetState(data) })
}

// MergeState merges the states (another worker's State) into the connectors' states.
func (p *AgentPipeline) MergeState(states map[string]json.RawMessage) error {
	return p.eachState(states, "merge", func(s Stateful, data []byte) error { return s.MergeState(data) })
}

func (p *AgentPipeline) eachState(states map[string]json.RawMessage, op string, fn func(Stateful, []byte) error) error {
	for name, data := range states {
		found := false
		for _, c := range p.conns {
			if c.Name() != name {
				continue
			}
			s, ok := c.(Stateful)
			if !ok {
				return fmt.Errorf("connectors: %s state: connector %s has no state", op, name)
			}
			if err := fn(s, data); err != nil {
				return fmt.Errorf("connectors: %s state of %s: %w", op, name, err)
			}
			found = true
		}
		if !found {
			return fmt.Errorf("connectors: %s state: no connector named %q", op, name)
		}
	}
	return nil
}

// growTo extends buf (per-slot storage of width w) to hold slot, reusing capacity.
func growTo(buf []float32, slot, w int) []float32 {
	need := (slot + 1) * w
	if need <= len(buf) {
		return buf
	}
	if need <= cap(buf) {
		return buf[:need]
	}
	nb := make([]float32, need, max(need, 2*cap(buf)))
	copy(nb, buf)
	return nb
}
