package output

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"

	"github.com/onnxrl/sampler/env"
	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

var negZero = float32(math.Copysign(0, -1))

// cartPoleBatch returns a batch shaped like CartPole's: obs width 4, Discrete(2), dist width
// 2, value predictions; episodes of 20 steps, whose new_obs rows are the next rows' obs as a
// runner records them (an episode's last new_obs is its own).
func cartPoleBatch(rng *rand.Rand, n int) *envrunner.SampleBatch {
	b := &envrunner.SampleBatch{
		Count: n, ObsWidth: 4, ActionWidth: 1, DistWidth: 2,
		ActionSpace: &spaces.Discrete{N: 2},
	}
	for range 4 * n {
		b.Obs = append(b.Obs, float32(rng.NormFloat64()*0.1))
	}
	for i := range n {
		for k := range 4 {
			if i%20 == 19 || i == n-1 {
				b.NewObs = append(b.NewObs, float32(rng.NormFloat64()*0.1))
			} else {
				b.NewObs = append(b.NewObs, b.Obs[4*(i+1)+k])
			}
		}
		b.Actions = append(b.Actions, float32(rng.IntN(2)))
		b.Rewards = append(b.Rewards, 1)
		done := i%20 == 19
		b.Terminateds = append(b.Terminateds, done)
		b.Truncateds = append(b.Truncateds, false)
		b.EpsID = append(b.EpsID, int64(1000+i/20))
		b.EnvID = append(b.EnvID, int32(i%8))
		b.AgentIndex = append(b.AgentIndex, 0)
		b.AgentID = append(b.AgentID, "agent0")
		b.T = append(b.T, int32(i%20))
		l0, l1 := float32(rng.NormFloat64()), float32(rng.NormFloat64())
		b.ActionDistInputs = append(b.ActionDistInputs, l0, l1)
		b.ActionLogp = append(b.ActionLogp, float32(-rng.ExpFloat64()))
		b.VfPreds = append(b.VfPreds, float32(rng.NormFloat64()*10))
	}
	return b
}

// randomFloat returns a float32 that is now and then an integer, a special value or extreme.
func randomFloat(rng *rand.Rand) float32 {
	switch rng.IntN(20) {
	case 0:
		return float32(math.NaN())
	case 1:
		return float32(math.Inf(1 - 2*rng.IntN(2)))
	case 2:
		return float32(math.Copysign(0, -1))
	case 3:
		return float32(rng.IntN(2000) - 1000)
	case 4:
		return math.Float32frombits(rng.Uint32()) // any bit pattern
	case 5:
		return float32(rng.IntN(1 << 24))
	case 6:
		return float32(rng.NormFloat64() * 1e-30)
	}
	return float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
}

func randomFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = randomFloat(rng)
	}
	return v
}

// randomBatch returns a valid batch of n rows with random widths, action space and optional
// columns.
func randomBatch(rng *rand.Rand, n int) *envrunner.SampleBatch {
	b := &envrunner.SampleBatch{Count: n, ObsWidth: rng.IntN(6), DistWidth: rng.IntN(4)}
	var actionValue func(j int) float32
	switch rng.IntN(5) {
	case 0:
		d := &spaces.Discrete{N: 1 + rng.Int64N(10), Start: rng.Int64N(5) - 2}
		b.ActionSpace, b.ActionWidth = d, 1
		actionValue = func(int) float32 { return float32(d.Start + rng.Int64N(d.N)) }
	case 1:
		md := &spaces.MultiDiscrete{Nvec: make([]int64, 1+rng.IntN(3))}
		for i := range md.Nvec {
			md.Nvec[i] = 1 + rng.Int64N(5)
		}
		b.ActionSpace, b.ActionWidth = md, len(md.Nvec)
		actionValue = func(j int) float32 { return float32(rng.Int64N(md.Nvec[j])) }
	case 2:
		mb := &spaces.MultiBinary{N: 1 + rng.IntN(4)}
		b.ActionSpace, b.ActionWidth = mb, mb.N
		actionValue = func(int) float32 { return float32(rng.IntN(2)) }
	case 3:
		b.ActionSpace = spaces.NewBox(-2, 2, 1+rng.IntN(3))
		b.ActionWidth = b.ActionSpace.Size()
		actionValue = func(int) float32 { return randomFloat(rng) }
	default:
		b.ActionWidth = rng.IntN(3)
		actionValue = func(int) float32 { return randomFloat(rng) }
	}
	b.Obs = randomFloats(rng, n*b.ObsWidth)
	b.NewObs = randomFloats(rng, n*b.ObsWidth)
	for range n {
		for j := range b.ActionWidth {
			b.Actions = append(b.Actions, actionValue(j))
		}
	}
	b.Rewards = randomFloats(rng, n)
	for range n {
		b.Terminateds = append(b.Terminateds, rng.IntN(2) == 0)
		b.Truncateds = append(b.Truncateds, rng.IntN(5) == 0)
		b.EpsID = append(b.EpsID, int64(rng.Uint64()))
		b.EnvID = append(b.EnvID, int32(rng.Uint32()))
		k := rng.Int32N(4)
		b.AgentIndex = append(b.AgentIndex, k)
		b.AgentID = append(b.AgentID, []string{"agent0", "player_1", `q"uo\te`, "émoji 🙂"}[k])
		b.T = append(b.T, rng.Int32N(1000))
	}
	if rng.IntN(2) == 0 {
		b.ActionDistInputs = randomFloats(rng, n*b.DistWidth)
		b.ActionLogp = randomFloats(rng, n)
	}
	if rng.IntN(2) == 0 {
		b.VfPreds = randomFloats(rng, n)
	}
	if rng.IntN(3) == 0 {
		b.StateWidths = make([]int, 1+rng.IntN(2))
		for k := range b.StateWidths {
			b.StateWidths[k] = rng.IntN(4)
			b.StateIn = append(b.StateIn, randomFloats(rng, n*b.StateWidths[k]))
			b.StateOut = append(b.StateOut, randomFloats(rng, n*b.StateWidths[k]))
		}
		for left := n; left > 0; {
			l := min(left, 1+rng.IntN(5))
			b.SeqLens = append(b.SeqLens, int32(l))
			left -= l
		}
	}
	if rng.IntN(2) == 0 {
		b.Advantages = randomFloats(rng, n)
		b.ValueTargets = randomFloats(rng, n)
	}
	b.Infos = randomInfos(rng, n)
	if err := b.Validate(); err != nil {
		panic(err)
	}
	return b
}

// randomInfos returns nil (most batches), or n infos of which some are nil, with values that
// read back as they are (int64, float64, strings that need escaping, nested lists and maps).
func randomInfos(rng *rand.Rand, n int) []env.Info {
	if rng.IntN(3) != 0 {
		return nil
	}
	infos := make([]env.Info, n)
	some := false
	for i := range infos {
		if rng.IntN(2) == 0 {
			continue
		}
		some = true
		infos[i] = env.Info{"step": int64(rng.IntN(1000)), "x": float64(rng.IntN(100)) + 0.5,
			`k"ey\`: "é\n\"", "nested": map[string]any{"l": []any{true, nil, "s", int64(-3)}}}
	}
	if !some {
		return nil
	}
	return infos
}

// randomMulti returns a MultiAgentBatch of one to three policies; with one policy the id is
// now and then the default one (a SampleBatch line).
func randomMulti(rng *rand.Rand) *envrunner.MultiAgentBatch {
	m := &envrunner.MultiAgentBatch{}
	ids := []string{envrunner.DefaultPolicyID, "p0", "pursuer", "évader\"\\\n\u2028", ""}
	np := 1 + rng.IntN(3)
	for i := range np {
		id := ids[rng.IntN(len(ids))]
		if i == 0 && rng.IntN(2) == 0 {
			id = envrunner.DefaultPolicyID
		}
		if m.PolicyBatches[id] != nil {
			continue
		}
		b := randomBatch(rng, rng.IntN(8))
		*m.Policy(id) = *b
		m.AgentSteps += b.Count
	}
	m.EnvSteps = m.AgentSteps
	if len(m.PolicyBatches) > 1 {
		m.EnvSteps = rng.IntN(m.AgentSteps + 1)
	}
	return m
}

func single(b *envrunner.SampleBatch) *envrunner.MultiAgentBatch {
	return &envrunner.MultiAgentBatch{
		EnvSteps: b.Count, AgentSteps: b.Count,
		PolicyBatches: map[string]*envrunner.SampleBatch{envrunner.DefaultPolicyID: b},
	}
}

// sameFloat compares NaN-aware (bitwise when exact is set, so the sign of zero counts).
func sameFloat(a, b float32, exact bool) bool {
	if exact {
		return math.Float32bits(a) == math.Float32bits(b)
	}
	return a == b && math.Signbit(float64(a)) == math.Signbit(float64(b)) || a != a && b != b
}

func diffFloats(name string, a, b []float32, exact bool) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%s: %d values, want %d", name, len(b), len(a))
	}
	for i := range a {
		if !sameFloat(a[i], b[i], exact) {
			return fmt.Sprintf("%s[%d] = %v, want %v", name, i, b[i], a[i])
		}
	}
	return ""
}

func diffSlice[T comparable](name string, a, b []T) string {
	if !slices.Equal(a, b) {
		return fmt.Sprintf("%s = %v, want %v", name, b, a)
	}
	return ""
}

// diffBatch describes the first difference of got from want in the counts, widths and columns
// ("" when there is none). With exact, floats compare bitwise and the action spaces must be
// equal too; without, NaNs match any NaN and the action space is not compared.
func diffBatch(want, got *envrunner.SampleBatch, exact bool) string {
	if want.Count != got.Count {
		return fmt.Sprintf("Count = %d, want %d", got.Count, want.Count)
	}
	if want.Count == 0 {
		return ""
	}
	if want.ObsWidth != got.ObsWidth || want.ActionWidth != got.ActionWidth {
		return fmt.Sprintf("widths obs %d action %d, want %d %d", got.ObsWidth, got.ActionWidth, want.ObsWidth, want.ActionWidth)
	}
	if len(want.ActionDistInputs) > 0 && want.DistWidth != got.DistWidth {
		return fmt.Sprintf("DistWidth = %d, want %d", got.DistWidth, want.DistWidth)
	}
	if exact && !reflect.DeepEqual(want.ActionSpace, got.ActionSpace) {
		return fmt.Sprintf("ActionSpace = %#v, want %#v", got.ActionSpace, want.ActionSpace)
	}
	if d := diffSlice("StateWidths", want.StateWidths, got.StateWidths); d != "" {
		return d
	}
	for _, d := range []string{
		diffFloats("obs", want.Obs, got.Obs, exact),
		diffFloats("new_obs", want.NewObs, got.NewObs, exact),
		diffFloats("actions", want.Actions, got.Actions, exact),
		diffFloats("rewards", want.Rewards, got.Rewards, exact),
		diffSlice("terminateds", want.Terminateds, got.Terminateds),
		diffSlice("truncateds", want.Truncateds, got.Truncateds),
		diffSlice("eps_id", want.EpsID, got.EpsID),
		diffSlice("env_id", want.EnvID, got.EnvID),
		diffSlice("agent_index", want.AgentIndex, got.AgentIndex),
		diffSlice("agent_id", want.AgentID, got.AgentID),
		diffSlice("t", want.T, got.T),
		diffFloats("action_dist_inputs", want.ActionDistInputs, got.ActionDistInputs, exact),
		diffFloats("action_logp", want.ActionLogp, got.ActionLogp, exact),
		diffFloats("vf_preds", want.VfPreds, got.VfPreds, exact),
		diffSlice("seq_lens", want.SeqLens, got.SeqLens),
		diffFloats("advantages", want.Advantages, got.Advantages, exact),
		diffFloats("value_targets", want.ValueTargets, got.ValueTargets, exact),
	} {
		if d != "" {
			return d
		}
	}
	if !reflect.DeepEqual(want.Infos, got.Infos) {
		return fmt.Sprintf("infos = %v, want %v", got.Infos, want.Infos)
	}
	for k := range want.StateWidths {
		if d := diffFloats(fmt.Sprintf("state_in_%d", k), want.StateIn[k], got.StateIn[k], exact); d != "" {
			return d
		}
		if d := diffFloats(fmt.Sprintf("state_out_%d", k), want.StateOut[k], got.StateOut[k], exact); d != "" {
			return d
		}
	}
	return ""
}

// diffMulti compares the policies with rows and the step count as the JSON form carries them:
// a SampleBatch line has no count of its own.
func diffMulti(want, got *envrunner.MultiAgentBatch, exact bool) string {
	wantIDs, gotIDs := want.PolicyIDs(), got.PolicyIDs()
	if !slices.Equal(wantIDs, gotIDs) {
		return fmt.Sprintf("policies %q, want %q", gotIDs, wantIDs)
	}
	wantSteps := want.EnvSteps
	if len(wantIDs) == 1 && wantIDs[0] == envrunner.DefaultPolicyID {
		wantSteps = want.PolicyBatches[wantIDs[0]].Count
	}
	if got.EnvSteps != wantSteps {
		return fmt.Sprintf("EnvSteps = %d, want %d", got.EnvSteps, wantSteps)
	}
	if got.AgentSteps != want.Rows() {
		return fmt.Sprintf("AgentSteps = %d, want %d", got.AgentSteps, want.Rows())
	}
	for _, id := range wantIDs {
		if d := diffBatch(want.PolicyBatches[id], got.PolicyBatches[id], exact); d != "" {
			return fmt.Sprintf("policy %q: %s", id, d)
		}
	}
	return ""
}
