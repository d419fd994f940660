package infojson

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/env"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		info env.Info
		json string
		back env.Info
	}{
		{nil, `{}`, nil},
		{env.Info{}, `{}`, nil},
		{env.Info{"b": 1, "a": "x\"y"}, `{"a":"x\"y","b":1}`, env.Info{"a": "x\"y", "b": int64(1)}},
		{env.Info{"f": 2.0, "g": float32(0.5), "n": math.NaN(), "i": math.Inf(-1)}, `{"f":2.0,"g":0.5,"i":-Infinity,"n":NaN}`, nil},
		{env.Info{"l": []any{1, true, nil, []float32{1, 2.5}}, "m": map[string]any{"k": []float64{3}}},
			`{"l":[1,true,null,[1.0,2.5]],"m":{"k":[3.0]}}`,
			env.Info{"l": []any{int64(1), true, nil, []any{1.0, 2.5}}, "m": map[string]any{"k": []any{3.0}}}},
		{env.Info{"s": struct{ A int }{2}, "c": make(chan int)}, ``, nil},
	} {
		got := string(Append(nil, tc.info))
		if tc.json != "" {
			assert.Equal(t, tc.json, got)
		}
		back, err := Decode([]byte(got))
		require.NoError(t, err, got)
		if tc.back != nil || len(tc.info) == 0 {
			assert.Equal(t, tc.back, back, got)
		}
		assert.Equal(t, got, string(Append(nil, back)), "written again: the same bytes")
	}
	n, err := Decode([]byte(`{"n":NaN}`))
	require.NoError(t, err)
	assert.True(t, math.IsNaN(n["n"].(float64)))
	for _, bad := range []string{`[]`, `{"a":1,"a":2}`, `{"a":}`, `{} x`} {
		_, err := Decode([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"a":[1,2.5,{"b":null}],"c":"d"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Decode(Append(nil, info))
		require.NoError(t, err)
		assert.Equal(t, string(Append(nil, info)), string(Append(nil, again)))
	})
}
