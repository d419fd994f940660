package envrunner

import (
	"fmt"
	"sort"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// PolicyID names a policy of a runner.
type PolicyID = string

// DefaultPolicyID is the id of the policy of a single-policy runner (RLlib's default_policy).
const DefaultPolicyID PolicyID = "default_policy"

// SampleBatch holds the experience of one policy, columnar: row i of every column is one
// transition (obs, action -> reward, new_obs) of one agent. Rows of the same agent episode
// are contiguous and in time order; a chunk of them ends where the episode ended or where the
// fragment cut it.
//
// Vector columns (Obs, NewObs, Actions, ActionDistInputs, StateIn[k], StateOut[k]) are flat,
// row-major, with the widths given by the batch's *Width fields. The buffers are reused by
// Reset, so a batch passed back to Runner.Sample is refilled without allocating.
type SampleBatch struct {
	// Count is the number of rows.
	Count int

	// ObsWidth is the width of an Obs/NewObs row: the model's observation input row (the
	// observation after the agent connectors).
	ObsWidth int
	// ActionWidth is the width of an Actions row (the raw layout of ActionSpace).
	ActionWidth int
	// DistWidth is the width of an ActionDistInputs row (0 for a random policy).
	DistWidth int
	// StateWidths are the widths of the per-agent RNN states, one per state input.
	StateWidths []int
	// ActionSpace is the policy's action space; it tells integer actions from real ones.
	ActionSpace spaces.Space
	// Model is the model whose actions fill the batch (nil for a random policy): after
	// Runner.SwapPolicy, the first batch handed over with the new model is the first whose
	// rows it chose.
	Model *models.Policy

	Obs         []float32
	NewObs      []float32
	Actions     []float32 // the policy's actions (before unsquash/clip), or the env's off-policy ones
	Rewards     []float32
	Terminateds []bool
	Truncateds  []bool
	EpsID       []int64
	EnvID       []int32
	AgentIndex  []int32
	// AgentID is the agent id the environment gave (env.DefaultAgentID for single-agent
	// environments), RLlib's agent_id; empty for batches read from files written before it
	// was recorded.
	AgentID []string
	// T is the episode's env step at which the agent observed the row's obs (RLlib's t: 0 at
	// the reset; an agent that observes at env steps 0, 2, 4 has t 0, 2, 4).
	T []int32

	// Columns of a policy with a model (ActionDistInputs and VfPreds empty for a random
	// policy, whose ActionLogp is that of its uniform sampling).
	ActionDistInputs []float32
	ActionLogp       []float32
	VfPreds          []float32 // empty when the model has no value output

	// RNN state columns (empty for a model without state): the state going into the step
	// that chose the row's action, the state coming out of it, and the length of each
	// sequence (a chunk of one agent episode, at most MaxSeqLen rows). StateIn has a row per
	// row of the batch (see the package documentation; SequenceStateIn gives RLlib's rows),
	// or, with StatePerSequence, RLlib's one per sequence.
	StateIn  [][]float32
	StateOut [][]float32
	SeqLens  []int32
	// StatePerSequence: StateIn holds one row per sequence (per SeqLens entry), the state
	// going into the sequence's first row, as RLlib's view requirement keeps it
	// (Config.StatePerSequence); false: one per row.
	StatePerSequence bool

	// Postprocessing (GAE) columns, empty unless the runner computes them.
	Advantages   []float32
	ValueTargets []float32

	// Infos is RLlib's infos column: the info the environment reported with each row's
	// new_obs (the info after stepping), nil for a row without one. It is empty while no row
	// of the batch has an info, so that environments that report none (most) cost nothing
	// per row; files still have the column (null in Parquet, {} in JSON lines).
	Infos []env.Info

	// staleIDs is how many values of AgentID's storage may still hold ids that empty left
	// there (see empty).
	staleIDs int
}

// Reset empties the batch, keeping its storage.
func (b *SampleBatch) Reset() {
	b.empty()
	b.dropStaleIDs() // the ids may come from an environment that is gone
}

// empty sets every column's length to 0, keeping the storage. The agent ids stay in
// AgentID's storage (staleIDs of them) until dropStaleIDs: a runner that fills the batch
// writes the next fragment's ids over them first, and clears only what is left (most
// fragments, nothing), rather than clearing every id a fragment for the collector's sake
// (16 bytes a row, about 1 ns of Take's 14 a row).
func (b *SampleBatch) empty() {
	b.Count = 0
	b.Obs, b.NewObs, b.Actions = b.Obs[:0], b.NewObs[:0], b.Actions[:0]
	b.Rewards, b.Terminateds, b.Truncateds = b.Rewards[:0], b.Terminateds[:0], b.Truncateds[:0]
	b.EpsID, b.EnvID, b.AgentIndex, b.T = b.EpsID[:0], b.EnvID[:0], b.AgentIndex[:0], b.T[:0]
	b.staleIDs = max(b.staleIDs, len(b.AgentID))
	b.AgentID = b.AgentID[:0]
	b.ActionDistInputs, b.ActionLogp, b.VfPreds = b.ActionDistInputs[:0], b.ActionLogp[:0], b.VfPreds[:0]
	for k := range b.StateIn {
		b.StateIn[k] = b.StateIn[k][:0]
		b.StateOut[k] = b.StateOut[k][:0]
	}
	b.SeqLens = b.SeqLens[:0]
	b.Advantages, b.ValueTargets = b.Advantages[:0], b.ValueTargets[:0]
	if len(b.Infos) > 0 {
		clear(b.Infos) // the infos are the environment's: keep none alive
		b.Infos = b.Infos[:0]
	}
}

// dropStaleIDs clears the agent ids that empty left in AgentID's storage beyond its length,
// so that the batch no longer keeps them (nor what they point into) alive.
func (b *SampleBatch) dropStaleIDs() {
	if n := len(b.AgentID); b.staleIDs > n {
		clear(b.AgentID[n:b.staleIDs])
	}
	b.staleIDs = 0
}

// reserve gives the columns of an empty batch, laid out by setLayout, room for rows rows:
// the model's columns with model, vf_preds with value, the GAE columns with gae. A batch
// that goes back to the runner is sized at once for a fragment like the last one, rather
// than grown by doubling (each doubling a copy of what was written and an array left to
// the collector: at the start of `sample run`, about 0.15 s of its first half second). A
// column with room already keeps its storage.
func (b *SampleBatch) reserve(rows int, model, value, gae bool) {
	columns := func(n int, cols ...*[]float32) {
		for _, c := range cols {
			withRoom(c, n)
		}
	}
	columns(rows*b.ObsWidth, &b.Obs, &b.NewObs)
	columns(rows*b.ActionWidth, &b.Actions)
	columns(rows, &b.Rewards)
	withRoom(&b.Terminateds, rows)
	withRoom(&b.Truncateds, rows)
	withRoom(&b.EpsID, rows)
	withRoom(&b.EnvID, rows)
	withRoom(&b.AgentIndex, rows)
	withRoom(&b.AgentID, rows)
	withRoom(&b.T, rows)
	if model {
		columns(rows*b.DistWidth, &b.ActionDistInputs)
	}
	columns(rows, &b.ActionLogp)
	if value {
		columns(rows, &b.VfPreds)
	}
	for k, w := range b.StateWidths {
		columns(rows*w, &b.StateIn[k], &b.StateOut[k])
	}
	if gae {
		columns(rows, &b.Advantages, &b.ValueTargets)
	}
}

// withRoom gives the empty slice *s a capacity of at least n.
func withRoom[T any](s *[]T, n int) {
	if len(*s) == 0 && cap(*s) < n {
		*s = make([]T, 0, n)
	}
}

// setLayout sets the widths, keeping the storage when they do not change.
func (b *SampleBatch) setLayout(obsW, actW, distW int, stateW []int, act spaces.Space) {
	b.ObsWidth, b.ActionWidth, b.DistWidth, b.ActionSpace = obsW, actW, distW, act
	if len(b.StateWidths) != len(stateW) {
		b.StateWidths = append(b.StateWidths[:0], stateW...)
		b.StateIn = make([][]float32, len(stateW))
		b.StateOut = make([][]float32, len(stateW))
	} else {
		copy(b.StateWidths, stateW)
	}
}

// Row returns the values of row i of a flat column of width w.
func Row(col []float32, w, i int) []float32 { return col[i*w : (i+1)*w] }

// SequenceStateIn appends to dst the rows of state_in_k at the start of each sequence of
// SeqLens, one per sequence, and returns it: RLlib's state_in_k column (its view requirement
// keeps the state going into a sequence only, batch_repeat_value = max_seq_len).
func (b *SampleBatch) SequenceStateIn(k int, dst []float32) []float32 {
	w := b.StateWidths[k]
	if b.StatePerSequence {
		return append(dst, b.StateIn[k]...)
	}
	i := 0
	for _, l := range b.SeqLens {
		dst = append(dst, b.StateIn[k][i*w:(i+1)*w]...)
		i += int(l)
	}
	return dst
}

// Validate checks that every column has Count rows of its width (or is empty where a column
// is optional) and that SeqLens add up to Count.
func (b *SampleBatch) Validate() error {
	n := b.Count
	check := func(name string, got, want int, optional bool) error {
		if got == want || (optional && got == 0) {
			return nil
		}
		return fmt.Errorf("envrunner: sample batch column %s has %d values, want %d", name, got, want)
	}
	errs := []error{
		check("obs", len(b.Obs), n*b.ObsWidth, false),
		check("new_obs", len(b.NewObs), n*b.ObsWidth, false),
		check("actions", len(b.Actions), n*b.ActionWidth, false),
		check("rewards", len(b.Rewards), n, false),
		check("terminateds", len(b.Terminateds), n, false),
		check("truncateds", len(b.Truncateds), n, false),
		check("eps_id", len(b.EpsID), n, false),
		check("env_id", len(b.EnvID), n, false),
		check("agent_index", len(b.AgentIndex), n, false),
		check("agent_id", len(b.AgentID), n, true),
		check("t", len(b.T), n, false),
		check("action_dist_inputs", len(b.ActionDistInputs), n*b.DistWidth, true),
		check("action_logp", len(b.ActionLogp), n, true),
		check("vf_preds", len(b.VfPreds), n, true),
		check("advantages", len(b.Advantages), n, true),
		check("value_targets", len(b.ValueTargets), n, true),
		check("infos", len(b.Infos), n, true),
	}
	inRows := n
	if b.StatePerSequence {
		inRows = len(b.SeqLens)
	}
	for k, w := range b.StateWidths {
		errs = append(errs, check(fmt.Sprintf("state_in_%d", k), len(b.StateIn[k]), inRows*w, false),
			check(fmt.Sprintf("state_out_%d", k), len(b.StateOut[k]), n*w, false))
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if len(b.StateWidths) > 0 {
		sum := 0
		for _, l := range b.SeqLens {
			sum += int(l)
		}
		if sum != n {
			return fmt.Errorf("envrunner: sample batch seq_lens add up to %d, want %d", sum, n)
		}
	}
	return nil
}

// MultiAgentBatch holds the sample batches of every policy of one fragment (RLlib's
// MultiAgentBatch). A runner with one policy and one agent per episode fills one
// DefaultPolicyID batch; it is written as a plain SampleBatch.
type MultiAgentBatch struct {
	// EnvSteps and AgentSteps count the environment steps and agent steps in the batch
	// (RLlib's env_steps() and agent_steps(); "count" in the JSON form is EnvSteps).
	EnvSteps   int
	AgentSteps int
	// PolicyBatches maps each policy that has rows to its batch. Batches of policies without
	// rows in this fragment are kept (empty) for reuse.
	PolicyBatches map[PolicyID]*SampleBatch
}

// Reset empties every policy batch, keeping the storage.
func (m *MultiAgentBatch) Reset() {
	m.EnvSteps, m.AgentSteps = 0, 0
	for _, b := range m.PolicyBatches {
		b.Reset()
	}
}

// empty empties every policy batch as SampleBatch.empty does, for a runner to fill.
func (m *MultiAgentBatch) empty() {
	m.EnvSteps, m.AgentSteps = 0, 0
	for _, b := range m.PolicyBatches {
		b.empty()
	}
}

// Policy returns the batch of policy id, creating it when needed.
func (m *MultiAgentBatch) Policy(id PolicyID) *SampleBatch {
	if m.PolicyBatches == nil {
		m.PolicyBatches = make(map[PolicyID]*SampleBatch)
	}
	b := m.PolicyBatches[id]
	if b == nil {
		b = &SampleBatch{}
		m.PolicyBatches[id] = b
	}
	return b
}

// PolicyIDs returns the ids of the policies with rows, sorted.
func (m *MultiAgentBatch) PolicyIDs() []PolicyID {
	ids := make([]PolicyID, 0, len(m.PolicyBatches))
	for id, b := range m.PolicyBatches {
		if b.Count > 0 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Rows returns the number of rows over all policies.
func (m *MultiAgentBatch) Rows() int {
	n := 0
	for _, b := range m.PolicyBatches {
		n += b.Count
	}
	return n
}
