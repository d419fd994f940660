package output

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/onnxrl/sampler/envrunner"
	"github.com/onnxrl/sampler/spaces"
)

// Encode, decode, encode: the same bytes, and the decoded columns equal the originals.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var cases []*envrunner.MultiAgentBatch
	cases = append(cases, single(cartPoleBatch(rng, 100)))
	for range 1000 {
		cases = append(cases, randomMulti(rng))
	}
	for i, m := range cases {
		line := AppendJSON(nil, m)
		got, err := Decode(line)
		if err != nil {
			t.Fatalf("case %d: %v\n%s", i, err, line)
		}
		if d := diffMulti(m, got, false); d != "" {
			t.Fatalf("case %d: %s\n%s", i, d, line)
		}
		if again := AppendJSON(nil, got); !bytes.Equal(again, line) {
			t.Fatalf("case %d: re-encoded line differs\n got %s\nwant %s", i, again, line)
		}
	}
}

func TestDecodeActionSpaces(t *testing.T) {
	tests := []struct {
		actions string
		space   spaces.Space
		width   int
		values  []float32
	}{
		{`[1,0]`, &spaces.Discrete{N: 2}, 1, []float32{1, 0}},
		{`[-1,3]`, &spaces.Discrete{N: 5, Start: -1}, 1, []float32{-1, 3}},
		{`[1.0,2e0]`, nil, 1, []float32{1, 2}}, // written as floats: real actions
		{`[2000000,1]`, &spaces.Discrete{N: 2000000, Start: 1}, 1, []float32{2000000, 1}},
		{`[[2,1],[0,4]]`, &spaces.MultiDiscrete{Nvec: []int64{3, 5}}, 2, []float32{2, 1, 0, 4}},
		{`[[-3],[-1]]`, &spaces.MultiDiscrete{Nvec: []int64{1}}, 1, []float32{-3, -1}},
		{`[[],[]]`, &spaces.MultiDiscrete{Nvec: []int64{}}, 0, nil},
		{`[[0.5,1],[1,1]]`, nil, 2, []float32{0.5, 1, 1, 1}},
		{`[[1e+06],[1]]`, nil, 1, []float32{1e6, 1}},
		{`[[-0],[1]]`, nil, 1, []float32{negZero, 1}},
		{`[[NaN],[1]]`, nil, 1, nil},
		{`[2.5,1]`, nil, 1, []float32{2.5, 1}},                    // flat floats: width 1, written back as rows
		{`[1e20,1]`, nil, 1, []float32{1e20, 1}},                  // beyond 2^53
		{`[100000000000000000000,1]`, nil, 1, []float32{1e20, 1}}, // an integer beyond 2^53
		{`[9007199254740992,1]`, &spaces.Discrete{N: 1 << 53, Start: 1}, 1, []float32{1 << 53, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.actions, func(t *testing.T) {
			line := `{"type":"SampleBatch",` + obs22 + `,"actions":` + tt.actions + `,` + rest2 + `}`
			m, err := Decode([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
			b := m.PolicyBatches[envrunner.DefaultPolicyID]
			if !reflect.DeepEqual(b.ActionSpace, tt.space) {
				t.Errorf("ActionSpace = %#v, want %#v", b.ActionSpace, tt.space)
			}
			if b.ActionWidth != tt.width {
				t.Errorf("ActionWidth = %d, want %d", b.ActionWidth, tt.width)
			}
			if tt.values != nil {
				if d := diffFloats("actions", tt.values, b.Actions, false); d != "" {
					t.Error(d)
				}
			}
			// Reading what it writes gives the same batch again.
			again, err := Decode(AppendJSON(nil, m))
			if err != nil {
				t.Fatal(err)
			}
			if d := diffMulti(m, again, true); d != "" {
				t.Errorf("second decode: %s", d)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	line := []byte(" {\"type\":\"MultiAgentBatch\", \"count\": 3,\n \"policy_batches\": {\"a\\u00e9\\ud83d\\ude00\": {" +
		`"t":[0],"obs":[[1,2]],"new_obs":[[3,4]],"actions":[[0.5]],"rewards":[-1],"terminateds":[true],"truncateds":[false],` +
		`"eps_id":[9223372036854775807],"env_id":[-2147483648],"agent_index":[2],"state_in_0":[[1]],"state_out_0":[[2]],"seq_lens":[1],` +
		`"vf_preds":[]}, "b": {` + noRows + `}}}` + "\r\n")
	m, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	if m.EnvSteps != 3 || m.AgentSteps != 1 || len(m.PolicyBatches) != 2 {
		t.Fatalf("EnvSteps %d AgentSteps %d policies %d, want 3 1 2", m.EnvSteps, m.AgentSteps, len(m.PolicyBatches))
	}
	b := m.PolicyBatches["aé😀"]
	want := &envrunner.SampleBatch{
		Count: 1, ObsWidth: 2, ActionWidth: 1, StateWidths: []int{1},
		Obs: []float32{1, 2}, NewObs: []float32{3, 4}, Actions: []float32{0.5}, Rewards: []float32{-1},
		Terminateds: []bool{true}, Truncateds: []bool{false}, EpsID: []int64{9223372036854775807},
		EnvID: []int32{-2147483648}, AgentIndex: []int32{2}, T: []int32{0},
		StateIn: [][]float32{{1}}, StateOut: [][]float32{{2}}, SeqLens: []int32{1},
	}
	if b == nil {
		t.Fatalf("policies %v", m.PolicyIDs())
	}
	if d := diffBatch(want, b, true); d != "" {
		t.Fatal(d)
	}
	if b.VfPreds != nil {
		t.Errorf("an empty vf_preds gives %v, want none", b.VfPreds)
	}
	if m.PolicyBatches["b"].Count != 0 {
		t.Errorf("policy b has %d rows, want 0", m.PolicyBatches["b"].Count)
	}
}

func TestDecodeErrors(t *testing.T) {
	sb := func(cols string) string { return `{"type":"SampleBatch",` + cols + `}` }
	ok := obs22 + `,"actions":[1,0],` + rest2
	tests := []struct{ line, want string }{
		{``, "unexpected end of line, want '{' at byte 0"},
		{`[]`, `unexpected '[', want '{' at byte 0`},
		{sb(ok) + `x`, `unexpected 'x' after the object`},
		{`{"obs":[]}`, `output: missing "type"`},
		{`{"type":"Batch"}`, `"type" is "Batch"`},
		{`{"type":1}`, `"type": unexpected '1'`},
		{sb(`"obs":[[1]]`), `missing column "new_obs"`},
		{sb(strings.Replace(ok, `"infos":[{},{}]`, `"infos":[{}]`, 1)), `column "infos" has 1 rows, want 2`},
		{sb(strings.Replace(ok, `"infos":[{},{}]`, `"infos":[{},[]]`, 1)), `want an object`},
		{sb(ok + `,"state_in_01":[]`), `unknown column "state_in_01"`},
		{sb(ok + `,"state_in_1024":[]`), `unknown column "state_in_1024"`},
		{sb(ok + `,"obs":[]`), `duplicate key "obs"`},
		{sb(`"obs":[[1,2],[3]],"new_obs":[]`), `column "obs": row 1 has 1 values, want 2 (the length of row 0) at byte 35`},
		{sb(`"obs":[[1,2],3]`), `column "obs": unexpected '3', want '['`},
		{sb(`"obs":[[1,x]]`), `column "obs": unexpected 'x', want a number`},
		{sb(`"obs":[[1,]]`), `column "obs": unexpected ']', want a number`},
		{sb(`"obs":[[01]]`), `column "obs": unexpected '1', want ',' or ']'`},
		{sb(`"obs":[[1.]]`), `want a digit`},
		{sb(`"obs":[[1e]]`), `want a digit`},
		{sb(`"obs":[[nan]]`), `want a number`},
		{sb(`"obs":[[Inf]]`), `want a number`},
		{sb(`"obs":[[1e39]]`), `column "obs": number 1e39 is out of the float32 range`},
		{`{"type":"SampleBatch","obs":[[1]`, `unexpected end of line, want ',' or ']'`},
		{sb(`"actions":[1,[2]]`), `column "actions": row 1 is a list in a flat list of actions`},
		{sb(`"actions":[[1],2]`), `column "actions": unexpected '2', want '['`},
		{sb(`"terminateds":[1]`), `column "terminateds": unexpected '1', want true or false`},
		{sb(`"t":[1.5]`), `column "t": 1.5 is not an integer`},
		{sb(`"t":[2147483648]`), `column "t": integer 2147483648 is out of range`},
		{sb(`"eps_id":[9223372036854775808]`), `column "eps_id": integer 9223372036854775808 is out of range`},
		{sb(`"rewards":"x"`), `column "rewards": unexpected '"', want '['`},
		{sb(`"obs":[[0,0.25],[0.5,0.75]],"new_obs":[[1]],"actions":[1,0],` + rest2), `column "new_obs" has 1 rows, want 2`},
		{sb(obs22 + `,"actions":[1],` + rest2), `column "actions" has 1 rows, want 2`},
		{sb(`"obs":[[1,2]],"new_obs":[[1]],"actions":[1],` + rest1), `column "new_obs" has rows of 1 values, want 2`},
		{sb(ok + `,"vf_preds":[1]`), `column "vf_preds" has 1 rows, want 2`},
		{sb(ok + `,"state_in_0":[[1],[2]]`), `missing column "state_out_0"`},
		{sb(ok + `,"state_in_1":[[1],[2]],"state_out_1":[[1],[2]]`), `missing column "state_in_0"`},
		{sb(ok + `,"state_in_0":[[1],[2]],"state_out_0":[[1,2],[3,4]],"seq_lens":[2]`), `column "state_out_0" has rows of 2 values, want 1`},
		{sb(ok + `,"state_in_0":[[1],[2]],"state_out_0":[[1],[2]],"seq_lens":[1]`), `column "seq_lens" adds up to 1, want 2`},
		{sb(ok + `,"state_in_0":[[1],[2]],"state_out_0":[[1],[2]],"seq_lens":[3,-1]`), `column "seq_lens" has a negative length -1`},
		{sb(ok + `,"count":2`), `a SampleBatch has no "count"`},
		{`{"type":"MultiAgentBatch","count":1}`, `MultiAgentBatch without "policy_batches"`},
		{`{"type":"MultiAgentBatch","policy_batches":{}}`, `MultiAgentBatch without "count"`},
		{`{"type":"MultiAgentBatch","count":-1,"policy_batches":{}}`, `"count": integer -1 is out of range`},
		{`{"type":"MultiAgentBatch","count":1,"policy_batches":{},` + ok + `}`, `unexpected column "obs" in a MultiAgentBatch`},
		{`{"type":"MultiAgentBatch","count":1,"policy_batches":{"p":{"obs":[]}}}`, `output: policy "p": missing column "new_obs"`},
		{`{"type":"MultiAgentBatch","count":1,"policy_batches":{"p":{"obs":[[1,2]]}}}`, `output: policy "p": missing column "new_obs"`},
		{`{"type":"MultiAgentBatch","count":1,"policy_batches":{"p":{"obs":[[1],[2,3]]}}}`, `policy "p": column "obs": row 1 has 2 values`},
		{`{"type":"MultiAgentBatch","count":1,"policy_batches":{"p":{},"p":{}}}`, `duplicate key "p"`},
		{`{"type":"MultiAgentBatch","count":1,"policy_batches":{"p":{` + ok + `,"type":"SampleBatch"}}}`, `unknown column "type"`},
		{"{\"type\":\"Sample\x01\"}", `control character '\x01' in string`},
		{"{\"type\":\"\xff\"}", `invalid UTF-8 in string`},
		{`{"type":"\x"}`, `invalid escape \x in string`},
		{`{"type":"\u12`, `short \u escape`},
		{`{"type":"\u12g4"}`, `invalid \u escape`},
		{`{"type":"abc`, `unterminated string`},
		{`{"type":"a\`, `unterminated string`},
		{`{type:1}`, `want a string key`},
		{`{"type" 1}`, `want ':'`},
		{`{"type":"SampleBatch" "obs":[]}`, `want ',' or '}'`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			m, err := Decode([]byte(tt.line))
			if err == nil {
				t.Fatalf("no error, decoded %+v", m)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "output: ") {
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
	var se *SyntaxError
	if _, err := Decode([]byte(`{"type":"SampleBatch","obs":[[1,2],[3]]}`)); !errors.As(err, &se) || se.Offset != 35 {
		t.Errorf("error %v, want a *SyntaxError at byte 35", err)
	}
}

func TestDecodeStrings(t *testing.T) {
	ids := []string{"", "a", "é", "😀", "\u2028", "\"\\/\b\f\n\r\t\x00\x1f", "\ufffd"}
	for _, id := range ids {
		m := &envrunner.MultiAgentBatch{EnvSteps: 1, PolicyBatches: map[string]*envrunner.SampleBatch{
			id: withActions(base(1, 1), &spaces.Discrete{N: 2}, 1, 1)}}
		got, err := Decode(AppendJSON(nil, m))
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		if got.PolicyBatches[id] == nil {
			t.Errorf("%q: decoded policies %q", id, got.PolicyIDs())
		}
	}
	// Escapes that the encoder does not write, and lone surrogates.
	for esc, want := range map[string]string{
		`\/\b\f\u0041`:        "/\b\fA",
		`\ud83d\ude00`:        "😀",
		`\ud83d`:              "\ufffd",
		`\ude00\ud83d`:        "\ufffd\ufffd",
		`\ud83dx`:             "\ufffdx",
		`\ud83d\n`:            "\ufffd\n",
		`\ud83d\u0041`:        "\ufffdA",
		`\ud83d\ud83d\ude00`:  "\ufffd😀",
		`raw é and \u00e9`:    "raw é and é",
		`\uD83D\uDE00\u00E9`:  "😀é",
		`\"quoted\" \\ slash`: `"quoted" \ slash`,
	} {
		line := `{"type":"MultiAgentBatch","count":0,"policy_batches":{"` + esc + `":{` + noRows + `}}}`
		got, err := Decode([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", esc, err)
		}
		if got.PolicyBatches[want] == nil {
			t.Errorf("%s: decoded ids %q, want %q", esc, keys(got.PolicyBatches), want)
		}
	}
}

func keys(m map[string]*envrunner.SampleBatch) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// FuzzDecode: Decode never panics, and what it reads, written and read again, is the same
// batch (and the same bytes).
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 8))
	f.Add(AppendJSON(nil, single(cartPoleBatch(rng, 3))))
	for range 30 {
		f.Add(AppendJSON(nil, randomMulti(rng)))
	}
	f.Add([]byte(`{"type":"SampleBatch",` + obs22 + `,"actions":[[1.0],[-0.0]],` + rest2 + `}`))
	f.Add([]byte(`{"type":"SampleBatch",` + obs22 + `,"actions":[1e20,16777217],` + rest2 + `}`))
	f.Add([]byte(`{"type":"MultiAgentBatch","count":0,"policy_batches":{"\ud83d":{` + noRows + `}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			if m != nil {
				t.Fatal("a batch with an error")
			}
			return
		}
		for id, b := range m.PolicyBatches {
			if err := b.Validate(); err != nil {
				t.Fatalf("policy %q: decoded batch is not valid: %v", id, err)
			}
		}
		enc := AppendJSON(nil, m)
		m2, err := Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded line does not decode: %v\n%s", err, enc)
		}
		if d := diffMulti(m, m2, true); d != "" {
			t.Fatalf("second decode differs: %s\n%s", d, enc)
		}
		if enc2 := AppendJSON(nil, m2); !bytes.Equal(enc, enc2) {
			t.Fatalf("second encoding differs\n%s\n%s", enc, enc2)
		}
	})
}
