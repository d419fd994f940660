package spaces

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMarshalJSON(t *testing.T) {
	tests := []struct {
		s    Space
		want string
	}{
		{NewBox(-1, 1, 3), `{"type":"Box","low":-1,"high":1,"shape":[3],"dtype":"float32"}`},
		{NewBox(negInf, inf), `{"type":"Box","low":"-inf","high":"inf","shape":[],"dtype":"float32"}`},
		{NewBoxBounds([]float32{0, negInf, 0.1, 0, 0, 0}, []float32{1, 1, 1, 1, 1, 1e9}, 2, 3),
			`{"type":"Box","low":[0,"-inf",0.1,0,0,0],"high":[1,1,1,1,1,1e+09],"shape":[2,3],"dtype":"float32"}`},
		{&Box{Low: []float32{0}, High: []float32{255}}, `{"type":"Box","low":0,"high":255,"shape":[],"dtype":"float32"}`},
		{&Discrete{N: 2}, `{"type":"Discrete","n":2,"start":0}`},
		{&Discrete{N: 3, Start: -1}, `{"type":"Discrete","n":3,"start":-1}`},
		{&MultiDiscrete{Nvec: []int64{3, 4}}, `{"type":"MultiDiscrete","nvec":[3,4]}`},
		{&MultiBinary{N: 5}, `{"type":"MultiBinary","n":5}`},
		{nested(), `{"type":"Dict","spaces":{"m":{"type":"Discrete","n":3,"start":1},"z":{"type":"Tuple","spaces":[{"type":"Discrete","n":2,"start":0},{"type":"MultiBinary","n":2}]}}}`},
		{NewDict(map[string]Space{`q"<`: &MultiBinary{N: 1}}), `{"type":"Dict","spaces":{"q\"\u003c":{"type":"MultiBinary","n":1}}}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(tt.s)
		require.NoError(t, err)
		assert.Equal(t, tt.want, string(got))
		back, err := Unmarshal(got)
		require.NoError(t, err)
		assert.True(t, Equal(tt.s, back), "round trip of %s gave %s", String(tt.s), String(back))
	}
}

func TestRoundTrip(t *testing.T) {
	all := sampleSpaces()
	all["deep"] = deepTuple(MaxDepth)
	all["dict of everything"] = NewDict(map[string]Space{
		"box": NewBoxBounds([]float32{negInf, -1, 0.123456789, 3e-40}, []float32{inf, 2, 1, 1}, 2, 2),
		"t":   &Tuple{Spaces: []Space{&MultiDiscrete{Nvec: []int64{2, 5}}, NewDict(map[string]Space{"x": &Discrete{N: 4, Start: 100}})}},
		"":    &MultiBinary{N: 2},
		"üñí": &Box{Low: []float32{-5}, High: []float32{5}, Shape: []int{1, 1}, Dtype: "int16"},
	})
	for name, s := range all {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(s)
			require.NoError(t, err)
			back, err := Unmarshal(b)
			require.NoError(t, err, "%s", b)
			assert.True(t, Equal(s, back), "%s", b)
			b2, err := json.Marshal(back)
			require.NoError(t, err)
			assert.Equal(t, string(b), string(b2))
		})
	}
}

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Space
	}{
		{"box scalar bounds", `{"type":"Box","low":-1.0,"high":1.0,"shape":[3],"dtype":"float32"}`, NewBox(-1, 1, 3)},
		{"box default dtype", `{"type":"Box","low":-1,"high":1,"shape":[3]}`, NewBox(-1, 1, 3)},
		{"box no shape scalar", `{"type":"Box","low":0,"high":1}`, NewBox(0, 1)},
		{"box nested arrays infer shape", `{"type":"Box","low":[[0,1,2],[3,4,5]],"high":10}`,
			NewBoxBounds([]float32{0, 1, 2, 3, 4, 5}, []float32{10, 10, 10, 10, 10, 10}, 2, 3)},
		{"box nested arrays with shape", `{"type":"Box","low":[[0,1],[2,3]],"high":[[4,5],[6,7]],"shape":[2,2]}`,
			NewBoxBounds([]float32{0, 1, 2, 3}, []float32{4, 5, 6, 7}, 2, 2)},
		{"box flat arrays with shape", `{"type":"Box","low":[0,1,2,3],"high":9,"shape":[2,2]}`,
			NewBoxBounds([]float32{0, 1, 2, 3}, []float32{9, 9, 9, 9}, 2, 2)},
		{"box infinities", `{"type":"Box","low":["-inf","-Infinity",0],"high":["inf","+inf","Infinity"]}`,
			NewBoxBounds([]float32{negInf, negInf, 0}, []float32{inf, inf, inf})},
		{"box overflow is inf", `{"type":"Box","low":-1e39,"high":1e400,"shape":[1]}`, NewBox(negInf, inf, 1)},
		{"box int dtype", `{"type":"Box","low":0,"high":255,"shape":[2],"dtype":"uint8"}`,
			&Box{Low: []float32{0, 0}, High: []float32{255, 255}, Shape: []int{2}, Dtype: "uint8"}},
		{"discrete", `{"type":"Discrete","n":2}`, &Discrete{N: 2}},
		{"discrete start float", `{"type":"Discrete","n":3.0,"start":-1,"dtype":"int64"}`, &Discrete{N: 3, Start: -1}},
		{"multidiscrete", `{"type":"MultiDiscrete","nvec":[3,4]}`, &MultiDiscrete{Nvec: []int64{3, 4}}},
		{"multibinary", `{"type":"MultiBinary","n":5}`, &MultiBinary{N: 5}},
		{"dict sorts keys", `{"type":"Dict","spaces":{"b":{"type":"Discrete","n":2},"a":{"type":"MultiBinary","n":1}}}`,
			&Dict{Keys: []string{"a", "b"}, Spaces: []Space{&MultiBinary{N: 1}, &Discrete{N: 2}}}},
		{"empty dict", `{"type":"Dict","spaces":{}}`, &Dict{Keys: []string{}, Spaces: []Space{}}},
		{"tuple", ` {"type":"Tuple","spaces":[{"type":"Discrete","n":2},{"type":"Box","low":0,"high":1,"shape":[2]}]} `,
			&Tuple{Spaces: []Space{&Discrete{N: 2}, NewBox(0, 1, 2)}}},
		{"policy spec example", `{"type": "Box", "low": -1e9, "high": 1e9, "shape": [4], "dtype": "float32"}`, NewBox(-1e9, 1e9, 4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unmarshal([]byte(tt.in))
			require.NoError(t, err)
			assert.True(t, Equal(tt.want, got), "got %s, want %s", String(got), String(tt.want))
			assert.NoError(t, got.Validate())
		})
	}
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"invalid JSON", `{"type":`, "spaces: invalid JSON: "},
		{"trailing data", `{"type":"MultiBinary","n":1} x`, "spaces: invalid JSON: "},
		{"not an object", `[1,2]`, "spaces: must be an object, got [1,2]"},
		{"missing type", `{"n":2}`, "spaces: type: required field missing"},
		{"type not a string", `{"type":3}`, "spaces: type: must be a string, got 3"},
		{"unknown type", `{"type":"Sequence"}`, `spaces: type: unknown space type "Sequence"`},
		{"unknown field", `{"type":"Discrete","n":2,"size":3}`, "spaces: Discrete.size: unknown field for Discrete"},
		{"multidiscrete start unsupported", `{"type":"MultiDiscrete","nvec":[2],"start":[1]}`, "spaces: MultiDiscrete.start: unknown field"},
		{"duplicate key", `{"type":"Discrete","n":2,"n":3}`, `spaces: Discrete: duplicate key "n"`},
		{"discrete missing n", `{"type":"Discrete"}`, "spaces: Discrete.n: required field missing"},
		{"discrete n zero", `{"type":"Discrete","n":0}`, "spaces: Discrete.n: must be positive, got 0"},
		{"discrete n negative", `{"type":"Discrete","n":-4}`, "spaces: Discrete.n: must be positive, got -4"},
		{"discrete n fractional", `{"type":"Discrete","n":2.5}`, "spaces: Discrete.n: must be an integer, got 2.5"},
		{"discrete n string", `{"type":"Discrete","n":"2"}`, `spaces: Discrete.n: must be an integer, got "2"`},
		{"discrete start", `{"type":"Discrete","n":2,"start":null}`, "spaces: Discrete.start: must be an integer, got null"},
		{"multidiscrete missing", `{"type":"MultiDiscrete"}`, "spaces: MultiDiscrete.nvec: required field missing"},
		{"multidiscrete entry", `{"type":"MultiDiscrete","nvec":[3,0]}`, "spaces: MultiDiscrete.nvec[1]: must be positive, got 0"},
		{"multidiscrete nested", `{"type":"MultiDiscrete","nvec":[[3,4]]}`, "spaces: MultiDiscrete.nvec[0]: must be an integer, got [3,4]"},
		{"multidiscrete not array", `{"type":"MultiDiscrete","nvec":3}`, "spaces: MultiDiscrete.nvec: must be an array of integers, got 3"},
		{"multibinary zero", `{"type":"MultiBinary","n":0}`, "spaces: MultiBinary.n: must be positive, got 0"},
		{"multibinary huge", `{"type":"MultiBinary","n":1e15}`, "spaces: MultiBinary.n: 1000000000000000 exceeds the limit"},
		{"box missing low", `{"type":"Box","high":1,"shape":[2]}`, "spaces: Box.low: required field missing"},
		{"box missing high", `{"type":"Box","low":1,"shape":[2]}`, "spaces: Box.high: required field missing"},
		{"box shape negative", `{"type":"Box","low":0,"high":1,"shape":[2,-2]}`, "spaces: Box.shape[1]: must be positive, got -2"},
		{"box shape zero", `{"type":"Box","low":0,"high":1,"shape":[0]}`, "spaces: Box.shape[0]: must be positive, got 0"},
		{"box shape huge", `{"type":"Box","low":0,"high":1,"shape":[100000,100000]}`, "spaces: Box.shape: (100000, 100000) has more than 16777216 elements"},
		{"box shape not ints", `{"type":"Box","low":0,"high":1,"shape":"3"}`, `spaces: Box.shape: must be an array of integers, got "3"`},
		{"box low > high", `{"type":"Box","low":[0,5],"high":[1,1]}`, "spaces: Box.low[1]: 5.0 is greater than high 1.0"},
		{"box bounds length", `{"type":"Box","low":[0,0,0],"high":1,"shape":[2]}`, "spaces: Box.low: array of shape (3,) does not match shape (2,)"},
		{"box nested wrong shape", `{"type":"Box","low":[[0,0],[0,0]],"high":1,"shape":[4]}`, "spaces: Box.low: array of shape (2, 2) does not match shape (4,)"},
		{"box low high shapes differ", `{"type":"Box","low":[0,0],"high":[1,1,1]}`, "spaces: Box.high: shape (3,) does not match low's shape (2,)"},
		{"box ragged", `{"type":"Box","low":[[0,0],[0]],"high":1}`, "spaces: Box.low[1]: array is not rectangular: 1 elements, want 2"},
		{"box ragged scalar", `{"type":"Box","low":[[0,0],1],"high":1}`, "spaces: Box.low[1]: array is not rectangular: want an array of 2 here"},
		{"box ragged deeper", `{"type":"Box","low":[1,[0]],"high":1}`, "spaces: Box.low[1]: array is not rectangular: want a number here"},
		{"box empty array", `{"type":"Box","low":[],"high":1}`, "spaces: Box.low: must not contain an empty array"},
		{"box bad string", `{"type":"Box","low":"-huge","high":1}`, `spaces: Box.low: must be a number or an infinity ("inf", "-inf"), got "-huge"`},
		{"box nan", `{"type":"Box","low":"nan","high":1}`, `spaces: Box.low: must be a number or an infinity`},
		{"box bool", `{"type":"Box","low":[0,true],"high":1}`, "spaces: Box.low[1]: must be a number or an array, got true"},
		{"box null", `{"type":"Box","low":null,"high":1}`, "spaces: Box.low: must be a number or an array, got null"},
		{"box object", `{"type":"Box","low":{},"high":1}`, "spaces: Box.low: must be a number or an array, got an object"},
		{"box unknown dtype", `{"type":"Box","low":0,"high":1,"dtype":"complex64"}`, `spaces: Box.dtype: unknown dtype "complex64"`},
		{"box empty dtype", `{"type":"Box","low":0,"high":1,"dtype":""}`, `spaces: Box.dtype: unknown dtype ""`},
		{"box int fractional", `{"type":"Box","low":0.5,"high":1,"dtype":"int32"}`, "spaces: Box.low[0]: must be an integer for dtype int32, got 0.5"},
		{"box uint8 range", `{"type":"Box","low":0,"high":256,"dtype":"uint8"}`, "spaces: Box.high[0]: 256.0 is out of range for dtype uint8"},
		{"box too many dims", `{"type":"Box","low":` + strings.Repeat("[", 33) + "0" + strings.Repeat("]", 33) + `,"high":1}`, "spaces: Box.low: more than 32 dimensions"},
		{"dict missing spaces", `{"type":"Dict"}`, "spaces: Dict.spaces: required field missing"},
		{"dict spaces array", `{"type":"Dict","spaces":[]}`, "spaces: Dict.spaces: must be an object, got []"},
		{"dict child", `{"type":"Dict","spaces":{"pos":{"type":"Box","low":0,"high":1,"shape":[3,-2]}}}`, `spaces: Dict.spaces["pos"].shape[1]: must be positive, got -2`},
		{"dict child type", `{"type":"Dict","spaces":{"a":{"type":"Box2"}}}`, `spaces: Dict.spaces["a"].type: unknown space type "Box2"`},
		{"dict child not object", `{"type":"Dict","spaces":{"a":3}}`, `spaces: Dict.spaces["a"]: must be an object, got 3`},
		{"dict duplicate key", `{"type":"Dict","spaces":{"a":{"type":"MultiBinary","n":1},"a":{"type":"MultiBinary","n":1}}}`, `spaces: Dict.spaces: duplicate key "a"`},
		{"tuple spaces object", `{"type":"Tuple","spaces":{}}`, "spaces: Tuple.spaces: must be an array, got {}"},
		{"tuple spaces null", `{"type":"Tuple","spaces":null}`, "spaces: Tuple.spaces: must be an array, got null"},
		{"dict spaces null", `{"type":"Dict","spaces":null}`, "spaces: Dict.spaces: must be an object, got null"},
		{"tuple child", `{"type":"Tuple","spaces":[{"type":"Discrete","n":2},{"type":"Discrete"}]}`, "spaces: Tuple.spaces[1].n: required field missing"},
		{"nested path", `{"type":"Tuple","spaces":[{"type":"Dict","spaces":{"x y":{"type":"MultiDiscrete","nvec":[2,-1]}}}]}`,
			`spaces: Tuple.spaces[0].spaces["x y"].nvec[1]: must be positive, got -1`},
		{"too deep", strings.Repeat(`{"type":"Tuple","spaces":[`, MaxDepth+1) + `{"type":"Discrete","n":2}` + strings.Repeat("]}", MaxDepth+1), "nesting deeper than 32 levels"},
		{"very deep", strings.Repeat(`{"type":"Tuple","spaces":[`, 5000) + strings.Repeat("]}", 5000), "nesting deeper than 32 levels"},
		{"total too big", `{"type":"Tuple","spaces":[{"type":"Discrete","n":16777216},{"type":"Discrete","n":1}]}`, "spaces: Tuple: size exceeds the limit of 16777216"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Unmarshal([]byte(tt.in))
			require.Error(t, err, "decoded %s", String(s))
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tt.want)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
		})
	}
	// A JSON syntax error stays reachable.
	_, err := Unmarshal([]byte(`{`))
	var se *json.SyntaxError
	assert.ErrorAs(t, err, &se)
	// Exactly MaxDepth levels is fine.
	ok := strings.Repeat(`{"type":"Tuple","spaces":[`, MaxDepth) + `{"type":"Discrete","n":2}` + strings.Repeat("]}", MaxDepth)
	s, err := Unmarshal([]byte(ok))
	require.NoError(t, err)
	assert.True(t, Equal(deepTuple(MaxDepth), s))
}

// fuzzSeeds are valid and invalid documents for FuzzUnmarshal's corpus.
var fuzzSeeds = []string{
	`{"type":"Box","low":-1.0,"high":1.0,"shape":[3],"dtype":"float32"}`,
	`{"type":"Box","low":[[0,"-inf"],[1,2]],"high":"inf"}`,
	`{"type":"Box","low":0,"high":255,"shape":[2,2],"dtype":"uint8"}`,
	`{"type":"Box","low":[0,1,2,3],"high":9,"shape":[2,2],"dtype":"int64"}`,
	`{"type":"Discrete","n":2,"start":-1}`,
	`{"type":"MultiDiscrete","nvec":[3,4]}`,
	`{"type":"MultiBinary","n":5}`,
	`{"type":"Dict","spaces":{"b":{"type":"Discrete","n":3},"a":{"type":"Tuple","spaces":[{"type":"MultiBinary","n":2}]}}}`,
	`{"type":"Tuple","spaces":[]}`,
	`{"type":"Box","low":[0,5],"high":[1,1]}`,
	`{"type":"Box","low":0,"high":1,"shape":[3,-2]}`,
	`{"type":"Discrete","n":0}`,
	`[1, {"type": null}]`,
}

func FuzzUnmarshal(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Unmarshal(data)
		if err != nil {
			var fe *FieldError
			if !strings.HasPrefix(err.Error(), "spaces: ") || !errors.As(err, &fe) {
				t.Fatalf("error %q is not a *FieldError with the package prefix", err)
			}
			if s != nil {
				t.Fatalf("non-nil space with error %v", err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("decoded space does not validate: %v", err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		back, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("unmarshal of %s: %v", b, err)
		}
		if !Equal(s, back) {
			t.Fatalf("round trip: %s != %s", String(s), String(back))
		}
		_ = String(s)
		if s.Size() <= 1<<12 && s.FlatDim() <= 1<<12 {
			rng := rand.New(rand.NewPCG(1, 2))
			raw := s.Sample(rng, make([]float32, s.Size()))
			if !s.Contains(raw) {
				t.Fatalf("sample %v not in %s", raw, String(s))
			}
			s.Flatten(make([]float32, s.FlatDim()), raw)
		}
	})
}
