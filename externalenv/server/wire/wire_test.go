package wire

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onnxrl/sampler/spaces"
)

func testSpaces() map[string]spaces.Space {
	return map[string]spaces.Space{
		"discrete":      &spaces.Discrete{N: 5, Start: -2},
		"multidiscrete": &spaces.MultiDiscrete{Nvec: []int64{3, 4}},
		"multibinary":   &spaces.MultiBinary{N: 3},
		"box":           spaces.NewBox(-10, 10, 4),
		"box2x3":        spaces.NewBox(-10, 10, 2, 3),
		"scalar":        spaces.NewBox(-1, 1),
		"tuple":         &spaces.Tuple{Spaces: []spaces.Space{&spaces.Discrete{N: 2}, spaces.NewBox(0, 1, 2)}},
		"dict":          &spaces.Dict{Keys: []string{"a", "z"}, Spaces: []spaces.Space{spaces.NewBox(-1, 1, 2), &spaces.Discrete{N: 3}}},
		"nested": &spaces.Tuple{Spaces: []spaces.Space{
			spaces.NewDict(map[string]spaces.Space{"p": spaces.NewBox(-1, 1, 1), "q": &spaces.MultiBinary{N: 2}}),
			&spaces.Discrete{N: 4}}},
	}
}

// TestValueRoundTrip: AppendValue's form reads back to the same raw value, the form is valid
// JSON, and the flat raw layout reads back too.
func TestValueRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, s := range testSpaces() {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.Validate())
			for range 20 {
				raw := s.Sample(rng, make([]float32, s.Size()))
				enc := AppendValue(nil, s, raw)
				require.True(t, json.Valid(enc), "%s", enc)
				d := NewDecoder(enc)
				got, err := d.Value(nil, s)
				require.NoError(t, err, "%s", enc)
				require.NoError(t, d.End())
				assert.Equal(t, raw, got, "%s", enc)

				flat := AppendFloats(nil, raw)
				got, err = NewDecoder(flat).Value(nil, s)
				require.NoError(t, err, "%s", flat)
				assert.Equal(t, raw, got)
			}
		})
	}
}

func TestValueForms(t *testing.T) {
	sp := testSpaces()
	cases := []struct {
		space string
		in    string
		want  []float32
	}{
		{"discrete", "3", []float32{3}},
		{"discrete", "[3]", []float32{3}},
		{"box", " [ 0.5 , -1e-3,2E1 ,0 ] ", []float32{0.5, -0.001, 20, 0}},
		{"box2x3", "[[1,2,3],[4,5,6]]", []float32{1, 2, 3, 4, 5, 6}},
		{"box2x3", "[1,2,3,4,5,6]", []float32{1, 2, 3, 4, 5, 6}},
		{"scalar", "-0.25", []float32{-0.25}},
		{"multibinary", "[true,false,1]", []float32{1, 0, 1}},
		{"dict", `{"a":[0.5,0.25],"z":2}`, []float32{0.5, 0.25, 2}},
		{"dict", `{"z":2,"a":[0.5,0.25]}`, []float32{0.5, 0.25, 2}},
		{"dict", `[0.5,0.25,2]`, []float32{0.5, 0.25, 2}},
		{"nested", `[{"q":[1,0],"p":[0.5]},3]`, []float32{0.5, 1, 0, 3}},
		{"box", "[]", nil},
	}
	for _, c := range cases {
		got, err := NewDecoder([]byte(c.in)).Value(nil, sp[c.space])
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	// Python's NaN and infinities.
	got, err := NewDecoder([]byte("[NaN,Infinity,-Infinity,1]")).Value(nil, sp["box"])
	require.NoError(t, err)
	assert.True(t, math.IsNaN(float64(got[0])))
	assert.Equal(t, []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 1}, got[1:])
}

func TestValueErrors(t *testing.T) {
	sp := testSpaces()
	cases := []struct {
		space, in, want string
	}{
		{"box", "", "unexpected end"},
		{"box", "[1,2", "unexpected end"},
		{"box", "[1,,2]", "want a number"},
		{"box", "[1 2]", "want ',' or ']'"},
		{"box", `["1"]`, "want a number"},
		{"box", "[01]", "want ',' or ']'"},
		{"box", "[1.]", "want a digit"},
		{"box", "[1e]", "want a digit"},
		{"box", "[-]", "want a number"},
		{"box", "[-NaN]", "want a number"},
		{"box", "[1e39]", "out of the float32 range"},
		{"box", "null", "want a number"},
		{"box", `{"a":1}`, "want a value of Box"},
		{"dict", `{"a":[1,1],"z":1,"a":[1,1]}`, "duplicate Dict key"},
		{"dict", `{"a":[1,1]}`, `missing Dict key "z"`},
		{"dict", `{"b":1}`, `unknown Dict key "b"`},
		{"box", strings.Repeat("[", 100) + strings.Repeat("]", 100), "nested deeper"},
	}
	for _, c := range cases {
		_, err := NewDecoder([]byte(c.in)).Value(nil, sp[c.space])
		var se *SyntaxError
		require.True(t, errors.As(err, &se), "%q: %v", c.in, err)
		assert.Contains(t, err.Error(), c.want, c.in)
	}
}

func TestStrings(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uo\te`, "tab\tnl\n\x01\x7f", "ünïcødé ✓ 😀", "\u2028", "bad\xffutf8"} {
		enc := AppendString(nil, s)
		require.True(t, json.Valid(enc), "%q -> %s", s, enc)
		var want string
		require.NoError(t, json.Unmarshal(enc, &want))
		got, err := NewDecoder(enc).String()
		require.NoError(t, err, "%s", enc)
		assert.Equal(t, want, string(got))
	}
	// Escapes written by other encoders.
	got, err := NewDecoder([]byte(`"a\/b\u00e9\ud83d\ude00\b\f"`)).String()
	require.NoError(t, err)
	assert.Equal(t, "a/bé😀\b\f", string(got))
	for _, bad := range []string{`"abc`, "\"a\x01\"", `"\x"`, `"\u12"`, "\"\xff\""} {
		_, err := NewDecoder([]byte(bad)).String()
		assert.Error(t, err, bad)
	}
}

func TestObjectAndSkip(t *testing.T) {
	in := `{"skip":{"a":[1,{"b":null}],"c":"x\"y","d":true,"e":-1.5e3},"keep":[1,2], "flag": false}`
	d := NewDecoder([]byte(in))
	var keep []float32
	var flag = true
	require.NoError(t, d.Object(func(key []byte) error {
		var err error
		switch string(key) {
		case "keep":
			keep, err = d.Value(keep, nil)
		case "flag":
			flag, err = d.Bool()
		default:
			err = d.Skip()
		}
		return err
	}))
	require.NoError(t, d.End())
	assert.Equal(t, []float32{1, 2}, keep)
	assert.False(t, flag)

	d = NewDecoder([]byte(`{"a":1} x`))
	require.NoError(t, d.Object(func([]byte) error { return d.Skip() }))
	assert.Error(t, d.End())

	raw, err := NewDecoder([]byte(` {"x": [1, "two"]} `)).Raw()
	require.NoError(t, err)
	assert.Equal(t, `{"x": [1, "two"]}`, string(raw))
}

func TestFloatsShortest(t *testing.T) {
	for _, v := range []float32{0, 1, -1, 0.1, 1.0 / 3, 3.4028235e38, 1e-45, -2.5e-8} {
		enc := AppendFloat32(nil, v)
		got, err := NewDecoder(enc).Float32()
		require.NoError(t, err)
		assert.Equal(t, v, got, "%s", enc)
	}
	assert.Equal(t, "NaN", string(AppendFloat32(nil, float32(math.NaN()))))
	assert.Equal(t, "-Infinity", string(AppendFloat64(nil, math.Inf(-1))))
	assert.Equal(t, "[1,2.5]", string(AppendValue(nil, &spaces.MultiDiscrete{Nvec: []int64{3, 3}}, []float32{1, 2.5})))
}

// TestValueAllocs: a reused decoder reading a flat array into a reused buffer allocates
// nothing.
func TestValueAllocs(t *testing.T) {
	body := []byte(`{"observation":[0.0123456,-0.98765432,0.03,1.5e-3]}`)
	d := NewDecoder(nil)
	buf := make([]float32, 0, 8)
	s := spaces.NewBox(-10, 10, 4)
	allocs := testing.AllocsPerRun(100, func() {
		d.Reset(body)
		buf = buf[:0]
		err := d.Object(func(key []byte) error {
			var err error
			if string(key) == "observation" {
				buf, err = d.Value(buf, s)
			} else {
				err = d.Skip()
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
	assert.Len(t, buf, 4)
	out := make([]byte, 0, 64)
	allocs = testing.AllocsPerRun(100, func() {
		out = AppendValue(out[:0], s, buf)
	})
	assert.Zero(t, allocs)
}

// FuzzValue: any body either decodes or fails with a *SyntaxError, never panics; what decodes
// as a flat array of numbers agrees with encoding/json.
func FuzzValue(f *testing.F) {
	for _, seed := range []string{"[1,2,3,4]", "[[1,2,3],[4,5,6]]", `{"a":[1,2],"z":1}`, "[NaN,-Infinity]",
		"3", "[true,false]", `[{"q":[1,0],"p":[0.5]},3]`, "[1e39]", `"x"`, "[", "{", "[-0.0e-0]"} {
		f.Add([]byte(seed))
	}
	sp := testSpaces()
	names := []string{"box", "box2x3", "dict", "nested", "tuple", "discrete"}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, n := range names {
			d := NewDecoder(data)
			got, err := d.Value(nil, sp[n])
			if err == nil {
				err = d.End()
			}
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("%s: %q: error %T %v", n, data, err, err)
				}
				continue
			}
			var plain []float64
			if n == "box" && json.Unmarshal(data, &plain) == nil {
				if len(plain) != len(got) {
					t.Fatalf("%q: %v vs %v", data, got, plain)
				}
				for i := range plain {
					if float32(plain[i]) != got[i] && !(math.Abs(plain[i]) > math.MaxFloat32) {
						// ParseFloat(…, 32) rounds once; float32(float64) may round twice,
						// but both are within one float32 ulp.
						if math.Abs(float64(float32(plain[i])-got[i])) > math.Abs(float64(got[i]))*1e-6 {
							t.Fatalf("%q: element %d: %v vs %v", data, i, got[i], plain[i])
						}
					}
				}
			}
		}
	})
}
