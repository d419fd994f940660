package jsonscan

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// walk reads any value into the types encoding/json gives an any.
func walk(s *Scanner, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, s.Errorf("nested deeper than %d", MaxDepth)
	}
	switch s.Peek() {
	case '{':
		m := map[string]any{}
		err := s.ObjectDepth(depth, func(k []byte) error {
			key := string(k)
			v, err := walk(s, depth+1)
			m[key] = v
			return err
		})
		return m, err
	case '[':
		a := []any{}
		err := s.Array(func(int) error {
			v, err := walk(s, depth+1)
			a = append(a, v)
			return err
		})
		return a, err
	case '"':
		b, err := s.String()
		return string(b), err
	case 't', 'f':
		return s.Bool()
	case 'n':
		if s.Null() {
			return nil, nil
		}
		return nil, s.Unexpected("a value")
	}
	return s.Float64()
}

func TestScanValues(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want any
	}{
		{`{"a": [1, 2.5, -0.125e1, true, false, null, "x\u00e9\n"], "b": {}}`,
			map[string]any{"a": []any{1.0, 2.5, -1.25, true, false, nil, "xé\n"}, "b": map[string]any{}}},
		{`"\ud83d\ude00 \ud83d x"`, "😀 \uFFFD x"},
		{`  []  `, []any{}},
	} {
		var s Scanner
		s.Reset([]byte(tt.in))
		got, err := walk(&s, 0)
		if err == nil {
			err = s.End()
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %#v, %v; want %#v", tt.in, got, err, tt.want)
		}
	}
}

func TestScanSpecialNumbers(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`[NaN, Infinity, -Infinity, 3]`))
	var got []float64
	err := s.Array(func(int) error {
		v, err := s.Float64()
		got = append(got, v)
		return err
	})
	if err != nil || len(got) != 4 || !math.IsNaN(got[0]) || !math.IsInf(got[1], 1) || !math.IsInf(got[2], -1) || got[3] != 3 {
		t.Fatalf("got %v, %v", got, err)
	}
	for in, isInt := range map[string]bool{"12": true, "-0": true, "1.0": false, "2e3": false, "NaN": false} {
		s.Reset([]byte(in))
		if _, got, err := s.Number(); err != nil || got != isInt {
			t.Errorf("%s: isInt %v, %v; want %v", in, got, err, isInt)
		}
	}
}

func TestScanErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, "unexpected end of the input, want a number at byte 0"},
		{`[1,]`, "unexpected ']', want a number at byte 3"},
		{`[1 2]`, "want ',' or ']' at byte 3"},
		{`{"a" 1}`, "want ':'"},
		{`{1:1}`, "want a string key"},
		{`[-NaN]`, "want a number"},
		{`[1e999]`, "out of the float64 range"},
		{`"\u12`, `short \u escape`},
		{`"\q"`, `invalid escape \q`},
		{"\"\x01\"", `control character '\x01' in string`},
		{"\"\xff\"", "invalid UTF-8"},
		{`"abc`, "unterminated string"},
		{strings.Repeat("[", MaxDepth+2), "nested deeper than 64"},
		{"[\x00]", "unexpected byte 0x00"},
		{`[1] x`, "want the end of the input"},
	} {
		var s Scanner
		s.Reset([]byte(tt.in))
		_, err := walk(&s, 0)
		if err == nil {
			err = s.End()
		}
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want a *SyntaxError with %q", tt.in, err, tt.want)
		}
	}
}

func TestScanInt(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`[7, 2.0, 300, -9223372036854775809]`))
	want := []string{"", "is not an integer", "out of range [0, 255]", "out of range"}
	i := 0
	for elems, err := s.ArrayStart(); elems; elems, err = s.ArrayNext() {
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.Int(0, 255)
		switch {
		case want[i] == "" && (err != nil || v != 7):
			t.Errorf("element %d: %d, %v", i, v, err)
		case want[i] != "" && (err == nil || !strings.Contains(err.Error(), want[i])):
			t.Errorf("element %d: error %v, want %q", i, err, want[i])
		}
		if err != nil {
			if err := s.Skip(); err != nil {
				t.Fatal(err)
			}
		}
		i++
	}
	if i != 4 {
		t.Fatalf("read %d elements, want 4", i)
	}
}

// TestScanAllocs: reading a flat array of numbers and a plain string allocates nothing.
func TestScanAllocs(t *testing.T) {
	data := []byte(`{"observation": [0.25, -1, 3e-2, 4], "id": "abc"}`)
	var s Scanner
	n := testing.AllocsPerRun(100, func() {
		s.Reset(data)
		_ = s.Object(func(key []byte) error {
			if string(key) == "id" {
				_, err := s.String()
				return err
			}
			for elems, err := s.ArrayStart(); elems; elems, err = s.ArrayNext() {
				if err != nil {
					return err
				}
				if _, err := s.Float32(); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if n != 0 {
		t.Errorf("%v allocations per read, want 0", n)
	}
}

// FuzzScanner: any input either scans or fails with a *SyntaxError, never panics; what
// encoding/json reads (valid UTF-8, nested less than MaxDepth) scans to the same value, and
// what scans without NaN or Infinity is valid JSON.
func FuzzScanner(f *testing.F) {
	for _, seed := range []string{`{"a":[1,2.5,{"b":null}],"c":"\u00e9\ud83d\ude00"}`, `[NaN,-Infinity]`, `"\ud800\u0041"`,
		`[1e400]`, `{"a":1,"a":2}`, `[-0.0e-0, 0, 1E+2]`, `[[[[]]]]`, `"\x"`, `{`, `tru`, ` null `} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Scanner
		s.Reset(data)
		got, err := walk(&s, 0)
		if err == nil {
			err = s.End()
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %T %v", data, err, err)
			}
			if se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("%q: offset %d out of the data", data, se.Offset)
			}
		}
		var want any
		jerr := json.Unmarshal(data, &want)
		special := strings.Contains(string(data), "NaN") || strings.Contains(string(data), "Infinity")
		switch {
		case err == nil && !special && !json.Valid(data):
			t.Fatalf("%q scans but is not JSON", data)
		case jerr == nil && utf8.Valid(data) && err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("%q: scanned %#v, encoding/json %#v", data, got, want)
		case jerr == nil && utf8.Valid(data) && err != nil && !strings.Contains(err.Error(), "nested deeper"):
			t.Fatalf("%q: encoding/json reads it, the scanner fails: %v", data, err)
		}
	})
}
