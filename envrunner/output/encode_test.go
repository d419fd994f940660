package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/internal/jsonappend"
	"github.com/onnxrl/sampler/spaces"
)

// base returns a batch of n rows with the required columns filled in a recognisable way:
// obs row i = (i*w .. i*w+w-1)/4, new_obs shifted by 1/4, rewards 1, the last row terminated,
// eps_id 7, t = i. Actions are left to the caller.
func base(n, obsW int) *envrunner.SampleBatch {
	b := &envrunner.SampleBatch{Count: n, ObsWidth: obsW}
	for i := range n * obsW {
		b.Obs = append(b.Obs, float32(i)/4)
		b.NewObs = append(b.NewObs, float32(i+1)/4)
	}
	for i := range n {
		b.Rewards = append(b.Rewards, 1)
		b.Terminateds = append(b.Terminateds, i == n-1)
		b.Truncateds = append(b.Truncateds, false)
		b.EpsID = append(b.EpsID, 7)
		b.EnvID = append(b.EnvID, 0)
		b.AgentIndex = append(b.AgentIndex, 0)
		b.T = append(b.T, int32(i))
	}
	return b
}

func withActions(b *envrunner.SampleBatch, space spaces.Space, width int, a ...float32) *envrunner.SampleBatch {
	b.ActionSpace, b.ActionWidth, b.Actions = space, width, a
	return b
}

// the required columns of base(2, 2) after obs/new_obs, and after actions
const (
	obs22  = `"obs":[[0.0,0.25],[0.5,0.75]],"new_obs":[[0.25,0.5],[0.75,1.0]]`
	rest2  = `"rewards":[1.0,1.0],"terminateds":[false,true],"truncateds":[false,false],"eps_id":[7,7],"env_id":[0,0],"agent_index":[0,0],"t":[0,1],"infos":[{},{}]`
	obs11  = `"obs":[[0.0]],"new_obs":[[0.25]]`
	rest1  = `"rewards":[1.0],"terminateds":[true],"truncateds":[false],"eps_id":[7],"env_id":[0],"agent_index":[0],"t":[0],"infos":[{}]`
	rest3  = `"rewards":[1.0,1.0,1.0],"terminateds":[false,false,true],"truncateds":[false,false,false],"eps_id":[7,7,7],"env_id":[0,0,0],"agent_index":[0,0,0],"t":[0,1,2],"infos":[{},{},{}]`
	obs31  = `"obs":[[0.0],[0.25],[0.5]],"new_obs":[[0.25],[0.5],[0.75]]`
	noRows = `"obs":[],"new_obs":[],"actions":[],"rewards":[],"terminateds":[],"truncateds":[],"eps_id":[],"env_id":[],"agent_index":[],"t":[],"infos":[]`
)

func TestAppendJSON(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))

	cartPole := withActions(base(2, 2), &spaces.Discrete{N: 2}, 1, 1, 0)
	cartPole.Rewards = []float32{1, 0.5}
	cartPole.EpsID = []int64{42, -9223372036854775808}
	cartPole.DistWidth = 2
	cartPole.ActionDistInputs = []float32{0.1, -0.6931472, 1e-7, 3e38}
	cartPole.ActionLogp = []float32{-0.6931472, -0.1}
	cartPole.VfPreds = []float32{10.5, -3}

	rnn := withActions(base(3, 1), &spaces.Discrete{N: 3, Start: -1}, 1, -1, 1, 0)
	rnn.StateWidths = []int{2, 1}
	rnn.StateIn = [][]float32{{0, 0, 0.5, -0.5, 0, 0}, {0, 1, 0}}
	rnn.StateOut = [][]float32{{0.5, -0.5, 0.25, 0.125, 1, 1}, {1, 2, 3}}
	rnn.SeqLens = []int32{2, 1}

	gae := withActions(base(2, 2), spaces.NewBox(-1, 1, 1), 1, 0.5, -1)
	gae.VfPreds = []float32{2, 1}
	gae.Advantages = []float32{-1.5, 0.25}
	gae.ValueTargets = []float32{0.5, 1.25}

	special := withActions(base(1, 9), nil, 0)
	special.Obs = []float32{nan, inf, -inf, negZero, 1e6, 999999, 16777216, math.SmallestNonzeroFloat32, math.MaxFloat32}
	special.NewObs = []float32{-999999, 0.33333334, 1e21, 123456.5, 2.5e-5, -1e6, 1, -1, 0}
	special.Rewards = []float32{nan}

	badDiscrete := withActions(base(2, 2), &spaces.Discrete{N: 2}, 1, 2.5, nan)
	bigDiscrete := withActions(base(2, 2), &spaces.Discrete{N: 1 << 60}, 1, 1e15, 1e20)

	a := withActions(base(2, 1), &spaces.MultiDiscrete{Nvec: []int64{3, 2}}, 2, 2, 1, 0, 1)
	b := withActions(base(1, 1), spaces.NewBox(-1, 1, 2), 2, 0.5, -1)
	mb := withActions(base(1, 1), &spaces.MultiBinary{N: 3}, 3, 1, 0, 1)

	tests := []struct {
		name string
		m    *envrunner.MultiAgentBatch
		want string
	}{
		{"discrete with model columns", single(cartPole),
			`{"type":"SampleBatch",` + obs22 + `,"actions":[1,0],"rewards":[1.0,0.5],"terminateds":[false,true],"truncateds":[false,false],"eps_id":[42,-9223372036854775808],"env_id":[0,0],"agent_index":[0,0],"t":[0,1],"infos":[{},{}],"action_dist_inputs":[[0.1,-0.6931472],[1e-07,3e+38]],"action_logp":[-0.6931472,-0.1],"vf_preds":[10.5,-3.0]}`},
		{"rnn state and seq_lens", single(rnn),
			`{"type":"SampleBatch",` + obs31 + `,"actions":[-1,1,0],` + rest3 + `,"state_in_0":[[0.0,0.0],[0.5,-0.5],[0.0,0.0]],"state_in_1":[[0.0],[1.0],[0.0]],"state_out_0":[[0.5,-0.5],[0.25,0.125],[1.0,1.0]],"state_out_1":[[1.0],[2.0],[3.0]],"seq_lens":[2,1]}`},
		{"box actions and gae", single(gae),
			`{"type":"SampleBatch",` + obs22 + `,"actions":[[0.5],[-1.0]],` + rest2 + `,"vf_preds":[2.0,1.0],"advantages":[-1.5,0.25],"value_targets":[0.5,1.25]}`},
		{"nan inf and number forms", single(special),
			`{"type":"SampleBatch","obs":[[NaN,Infinity,-Infinity,-0.0,1e+06,999999.0,1.6777216e+07,1e-45,3.4028235e+38]],"new_obs":[[-999999.0,0.33333334,1e+21,123456.5,2.5e-05,-1e+06,1.0,-1.0,0.0]],"actions":[[]],"rewards":[NaN],"terminateds":[true],"truncateds":[false],"eps_id":[7],"env_id":[0],"agent_index":[0],"t":[0],"infos":[{}]}`},
		{"discrete actions that are not integers", single(badDiscrete),
			`{"type":"SampleBatch",` + obs22 + `,"actions":[2.5,NaN],` + rest2 + `}`},
		{"discrete actions beyond float32 integers", single(bigDiscrete),
			`{"type":"SampleBatch",` + obs22 + `,"actions":[999999986991104,1e+20],` + rest2 + `}`},
		{"two policies", &envrunner.MultiAgentBatch{EnvSteps: 2, PolicyBatches: map[string]*envrunner.SampleBatch{
			"b": b, "a": a, "empty": {}, envrunner.DefaultPolicyID: {},
		}}, `{"type":"MultiAgentBatch","count":2,"policy_batches":{"a":{"obs":[[0.0],[0.25]],"new_obs":[[0.25],[0.5]],"actions":[[2,1],[0,1]],"rewards":[1.0,1.0],"terminateds":[false,true],"truncateds":[false,false],"eps_id":[7,7],"env_id":[0,0],"agent_index":[0,0],"t":[0,1],"infos":[{},{}]},` +
			`"b":{` + obs11 + `,"actions":[[0.5,-1.0]],` + rest1 + `}}}`},
		{"multibinary under an escaped id", &envrunner.MultiAgentBatch{EnvSteps: 1, PolicyBatches: map[string]*envrunner.SampleBatch{
			"p\"\\\n\r\t\x01é\u2028\u2029\xff/<": mb,
		}}, `{"type":"MultiAgentBatch","count":1,"policy_batches":{"p\"\\\n\r\t\u0001é\u2028\u2029\ufffd/<":{` + obs11 + `,"actions":[[1,0,1]],` + rest1 + `}}}`},
		{"default policy with another", &envrunner.MultiAgentBatch{EnvSteps: 1, PolicyBatches: map[string]*envrunner.SampleBatch{
			envrunner.DefaultPolicyID: withActions(base(1, 1), &spaces.Discrete{N: 2}, 1, 1),
			"z":                       withActions(base(1, 1), &spaces.Discrete{N: 2}, 1, 0),
		}}, `{"type":"MultiAgentBatch","count":1,"policy_batches":{"default_policy":{` + obs11 + `,"actions":[1],` + rest1 + `},"z":{` + obs11 + `,"actions":[0],` + rest1 + `}}}`},
		{"default policy alone is a SampleBatch whatever the count", &envrunner.MultiAgentBatch{EnvSteps: 5, PolicyBatches: map[string]*envrunner.SampleBatch{
			envrunner.DefaultPolicyID: withActions(base(1, 1), &spaces.Discrete{N: 2}, 1, 1),
		}}, `{"type":"SampleBatch",` + obs11 + `,"actions":[1],` + rest1 + `}`},
		{"another policy alone is a MultiAgentBatch", &envrunner.MultiAgentBatch{EnvSteps: 1, PolicyBatches: map[string]*envrunner.SampleBatch{
			"x": withActions(base(1, 1), &spaces.Discrete{N: 2}, 1, 1),
		}}, `{"type":"MultiAgentBatch","count":1,"policy_batches":{"x":{` + obs11 + `,"actions":[1],` + rest1 + `}}}`},
		{"no rows", &envrunner.MultiAgentBatch{}, `{"type":"MultiAgentBatch","count":0,"policy_batches":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(AppendJSON(nil, tt.m))
			if got != tt.want {
				t.Fatalf("AppendJSON\n got %s\nwant %s", got, tt.want)
			}
			// Appending keeps what is in dst, and the bytes do not change from call to call.
			again := AppendJSON([]byte("x"), tt.m)
			if string(again) != "x"+tt.want {
				t.Fatalf("AppendJSON after a prefix differs: %s", again)
			}
		})
	}
}

func TestAppendSampleBatchJSON(t *testing.T) {
	b := withActions(base(1, 1), &spaces.Discrete{N: 2}, 1, 1)
	if got, want := string(AppendSampleBatchJSON(nil, b, false)), `{`+obs11+`,"actions":[1],`+rest1+`}`; got != want {
		t.Errorf("without type\n got %s\nwant %s", got, want)
	}
	if got, want := string(AppendSampleBatchJSON(nil, &envrunner.SampleBatch{ObsWidth: 4}, true)), `{"type":"SampleBatch",`+noRows+`}`; got != want {
		t.Errorf("no rows\n got %s\nwant %s", got, want)
	}
}

func TestAppendJSONPanicsOnBadLayout(t *testing.T) {
	b := withActions(base(2, 2), &spaces.Discrete{N: 2}, 1, 1) // one action for two rows
	defer func() {
		r := recover()
		err, ok := r.(error)
		if !ok || !strings.Contains(err.Error(), "column actions has 1 values, want 2") {
			t.Fatalf("recovered %v, want the actions column error", r)
		}
	}()
	AppendJSON(nil, single(b))
}

// The fast path for small integers writes the same bytes as the float formatter.
func TestAppendFloatMatchesStrconv(t *testing.T) {
	check := func(v float32) {
		got := string(jsonappend.Float32(nil, v))
		want := strconv.FormatFloat(float64(v), 'g', -1, 32)
		if v != v || math.IsInf(float64(v), 0) {
			return
		}
		if got != want {
			t.Fatalf("appendFloat(%v) = %s, want %s", v, got, want)
		}
	}
	for i := -1_000_001; i <= 1_000_001; i++ {
		check(float32(i))
	}
	check(float32(math.Copysign(0, -1)))
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		check(math.Float32frombits(rng.Uint32()))
		check(randomFloat(rng))
	}
}

// jsonCompatible replaces the non-standard number words by null so that encoding/json reads
// the line (inside strings the replacement keeps the JSON valid as well).
func jsonCompatible(line []byte) []byte {
	line = bytes.ReplaceAll(line, []byte("-Infinity"), []byte("null"))
	line = bytes.ReplaceAll(line, []byte("Infinity"), []byte("null"))
	return bytes.ReplaceAll(line, []byte("NaN"), []byte("null"))
}

// Random batches give valid JSON whose keys are in the documented order and whose numbers
// read back (through float64, as Python reads them) to the same float32 values.
func TestAppendJSONIsValidJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		m := randomMulti(rng)
		line := AppendJSON(nil, m)
		if bytes.ContainsAny(line, "\n") {
			t.Fatalf("line %d contains a newline: %s", i, line)
		}
		if !json.Valid(jsonCompatible(line)) {
			t.Fatalf("line %d is not valid JSON: %s", i, line)
		}

		// Key order of every object.
		dec := json.NewDecoder(bytes.NewReader(jsonCompatible(line)))
		if err := walkKeyOrder(dec, false); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}

		// Values through encoding/json.
		var doc map[string]any
		if err := json.Unmarshal(jsonCompatible(line), &doc); err != nil {
			t.Fatal(err)
		}
		pbs := map[string]any{}
		if doc["type"] == "SampleBatch" {
			pbs[envrunner.DefaultPolicyID] = doc
		} else {
			pbs = doc["policy_batches"].(map[string]any)
			if int(doc["count"].(float64)) != m.EnvSteps {
				t.Fatalf("line %d: count %v, want %d", i, doc["count"], m.EnvSteps)
			}
		}
		if len(pbs) != len(m.PolicyIDs()) {
			t.Fatalf("line %d: %d policies, want %d", i, len(pbs), len(m.PolicyIDs()))
		}
		for id, pb := range pbs {
			b := m.PolicyBatches[id]
			if b == nil {
				t.Fatalf("line %d: unknown policy %q", i, id)
			}
			cols := pb.(map[string]any)
			checkFloatRows(t, "obs", cols["obs"], b.Obs, b.Count, b.ObsWidth)
			checkFloatRows(t, "new_obs", cols["new_obs"], b.NewObs, b.Count, b.ObsWidth)
			if _, ok := b.ActionSpace.(*spaces.Discrete); ok {
				checkFloats(t, "actions", cols["actions"], b.Actions)
			} else {
				checkFloatRows(t, "actions", cols["actions"], b.Actions, b.Count, b.ActionWidth)
			}
			checkFloats(t, "rewards", cols["rewards"], b.Rewards)
			if len(b.ActionDistInputs) > 0 {
				checkFloatRows(t, "action_dist_inputs", cols["action_dist_inputs"], b.ActionDistInputs, b.Count, b.DistWidth)
			} else if _, ok := cols["action_dist_inputs"]; ok {
				t.Fatalf("line %d: empty action_dist_inputs written", i)
			}
			for k, w := range b.StateWidths {
				checkFloatRows(t, "state_in", cols["state_in_"+strconv.Itoa(k)], b.StateIn[k], b.Count, w)
				checkFloatRows(t, "state_out", cols["state_out_"+strconv.Itoa(k)], b.StateOut[k], b.Count, w)
			}
			eps := cols["eps_id"].([]any)
			for r, v := range eps {
				// float64 loses large ids; compare what it can hold.
				if v.(float64) != float64(b.EpsID[r]) {
					t.Fatalf("eps_id[%d] = %v, want %d", r, v, b.EpsID[r])
				}
			}
		}
	}
}

func checkFloats(t *testing.T, name string, got any, want []float32) {
	t.Helper()
	list := got.([]any)
	if len(list) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(list), len(want))
	}
	for i, v := range list {
		w := want[i]
		if w != w || math.IsInf(float64(w), 0) {
			if v != nil {
				t.Fatalf("%s[%d] = %v, want %v", name, i, v, w)
			}
			continue
		}
		if f := float32(v.(float64)); f != w {
			t.Fatalf("%s[%d] = %v, want %v", name, i, f, w)
		}
	}
}

func checkFloatRows(t *testing.T, name string, got any, want []float32, n, w int) {
	t.Helper()
	rows := got.([]any)
	if len(rows) != n {
		t.Fatalf("%s: %d rows, want %d", name, len(rows), n)
	}
	for i, row := range rows {
		checkFloats(t, name, row, want[i*w:i*w+w])
	}
}

// keyRank is the position of a key in the documented order.
func keyRank(key string) (int, bool) {
	fixed := []string{"type", "count", "policy_batches", "obs", "new_obs", "actions", "rewards",
		"terminateds", "truncateds", "eps_id", "env_id", "agent_index", "agent_id", "t", "infos", "action_dist_inputs",
		"action_logp", "vf_preds"}
	if i := slices.Index(fixed, key); i >= 0 {
		return i, true
	}
	if k, ok := strings.CutPrefix(key, "state_in_"); ok {
		n, err := strconv.Atoi(k)
		return 100 + n, err == nil
	}
	if k, ok := strings.CutPrefix(key, "state_out_"); ok {
		n, err := strconv.Atoi(k)
		return 200 + n, err == nil
	}
	i := slices.Index([]string{"seq_lens", "advantages", "value_targets"}, key)
	return 300 + i, i >= 0
}

// walkKeyOrder reads one value and checks that the keys of every object in it come in the
// documented order (policy ids: sorted).
func walkKeyOrder(dec *json.Decoder, policyIDs bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		last, prev := -1, ""
		for first := true; dec.More(); first = false {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key := kt.(string)
			if policyIDs {
				if !first && key <= prev {
					return fmt.Errorf("policy %q after %q", key, prev)
				}
			} else {
				r, ok := keyRank(key)
				if !ok || r <= last {
					return fmt.Errorf("key %q out of order or unknown", key)
				}
				last = r
			}
			prev = key
			if key == "infos" { // the environment's objects: their keys are sorted, not ranked
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return err
				}
				continue
			}
			if err := walkKeyOrder(dec, key == "policy_batches"); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for dec.More() {
			if err := walkKeyOrder(dec, false); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// TestAppendJSONFloatsAreFloats: every number of a float column has a point or an exponent,
// and the integer columns have neither, so that readers that type numbers by their form
// (Python's json, pandas, Arrow) get float and integer columns back.
func TestAppendJSONFloatsAreFloats(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	floatCols := map[string]bool{"obs": true, "new_obs": true, "rewards": true, "action_dist_inputs": true,
		"action_logp": true, "vf_preds": true, "advantages": true, "value_targets": true,
		"state_in_0": true, "state_in_1": true, "state_out_0": true, "state_out_1": true}
	intCols := map[string]bool{"eps_id": true, "env_id": true, "agent_index": true, "t": true, "seq_lens": true}
	var walk func(col string, v any)
	walk = func(col string, v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(col, e)
			}
		case json.Number:
			s := string(x)
			isFloat := strings.ContainsAny(s, ".e")
			if floatCols[col] && !isFloat {
				t.Fatalf("column %s: %s is written as an integer", col, s)
			}
			if intCols[col] && isFloat {
				t.Fatalf("column %s: %s is written as a float", col, s)
			}
		}
	}
	for range 300 {
		b := randomBatch(rng, 1+rng.IntN(6))
		for i := range b.Obs {
			if rng.IntN(3) == 0 {
				b.Obs[i] = float32(rng.IntN(5) - 2) // whole numbers, -0 included below
			}
		}
		if len(b.Obs) > 0 {
			b.Obs[0] = negZero
		}
		line := AppendJSON(nil, single(b))
		dec := json.NewDecoder(bytes.NewReader(jsonCompatible(line)))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			t.Fatalf("%v\n%s", err, line)
		}
		for col, v := range obj {
			walk(col, v)
		}
	}
}

// TestNewObsCopiedTextIsExact: new_obs rows copied from obs's text are the bytes formatting
// would give, for rows equal to the next obs, rows that differ only in the sign of a zero or
// in a NaN's payload, rows of width 0 and 1, and batches of one row.
func TestNewObsCopiedTextIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 2000 {
		n, w := 1+rng.IntN(6), rng.IntN(4)
		obs := make([]float32, n*w)
		for i := range obs {
			obs[i] = randomFloat(rng)
		}
		next := make([]float32, n*w)
		for i := range n {
			for k := range w {
				v := randomFloat(rng)
				if i+1 < n && rng.IntN(3) > 0 {
					v = obs[(i+1)*w+k]
					switch rng.IntN(8) {
					case 0:
						v = -v // a zero changes its sign, a NaN keeps its text
					case 1:
						v = math.Float32frombits(math.Float32bits(v) ^ 1) // one bit off
					}
				}
				next[i*w+k] = v
			}
		}
		want := appendRows([]byte(`{`), `"obs":`, obs, n, w)
		want = appendRows(want, `,"new_obs":`, next, n, w)
		got := appendRows([]byte(`{`), `"obs":`, obs, n, w)
		got = appendNextRows(got, `,"new_obs":`, next, obs, n, w, len(`{"obs":[`))
		if string(got) != string(want) {
			t.Fatalf("trial %d (n=%d w=%d):\n got %s\nwant %s", trial, n, w, got, want)
		}
	}
}
