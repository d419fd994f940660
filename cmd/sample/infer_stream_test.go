package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// endlessData is an input whose "obs" data array never ends, counting the bytes read.
type endlessData struct {
	head string
	read int64
}

func (e *endlessData) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if int(e.read) < len(e.head) {
			c := copy(p[n:], e.head[e.read:])
			n += c
			e.read += int64(c)
			continue
		}
		p[n] = "0,"[e.read%2]
		n++
		e.read++
	}
	return n, nil
}

// TestInferStopsReadingAtLimit: issue 35's repro. `sample infer` read a whole 200 MB input
// (22.8 s, 1.0 GB on the machine; 5.2 s and 1.0 GB here) before its limit error,
// because the input and then each data array were read whole before their values were
// counted. Now reading stops at the first value over the limit: an endless input ends.
func TestInferStopsReadingAtLimit(t *testing.T) {
	r := &endlessData{head: `{"inputs": {"obs": {"shape": [1, 4], "data": [`}
	const limit = 1000
	_, err := parseInferInput("endless.json", r, map[string]int64{"obs": limit})
	require.Error(t, err)
	assert.EqualError(t, err, `input endless.json: "obs": more than 1000 values, the most the model's input takes (at batch 1048576)`)
	assert.Less(t, r.read, int64(64<<10), "bytes read before the limit error")
}

func TestBoundedReader(t *testing.T) {
	b := &boundedReader{r: strings.NewReader(strings.Repeat("x", 10)), left: 5}
	got, err := io.ReadAll(b)
	assert.True(t, errors.Is(err, errInputTooLarge), "%v", err)
	assert.Len(t, got, 5)
	b = &boundedReader{r: strings.NewReader("abc"), left: 4} // under the bound: EOF as usual
	got, err = io.ReadAll(b)
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got))
	// The parser names the input and the bound (the bound's own error, as a reader that
	// reached it gives it: reading 256 MiB here takes a minute under -race).
	_, err = parseInferInput("x.json", io.MultiReader(strings.NewReader(`{"inputs": {`), &boundedReader{r: strings.NewReader("  "), left: 1}), nil)
	assert.EqualError(t, err, "input x.json: larger than 268435456 bytes")
}
