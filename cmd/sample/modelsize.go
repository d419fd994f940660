package main

import (
	"flag"

	"github.com/onnxrl/sampler/inference"
)

// modelSizeFlag is --max-model-size of the commands that read model files: a model must be
// a regular file of at most this size, checked before it is read (issue 35: /dev/zero was
// read until memory ran out).
type modelSizeFlag struct {
	text  string
	bytes int64
}

func (m *modelSizeFlag) register(fs *flag.FlagSet) {
	fs.StringVar(&m.text, "max-model-size", "1GiB", "refuse a model file larger than this (bytes, or with KiB/MiB/GiB), checked before it is read")
}

// parse reads the flag's value; call it after the flag set is parsed.
func (m *modelSizeFlag) parse() error {
	n, err := parseSize(m.text)
	if err != nil || n < 1 {
		return usagef("--max-model-size %q: want a positive size (bytes, or with KiB, MiB or GiB)", m.text)
	}
	m.bytes = n
	return nil
}

// limit returns the parsed limit (the default before parse).
func (m *modelSizeFlag) limit() int64 {
	if m.bytes < 1 {
		return inference.DefaultMaxModelBytes
	}
	return m.bytes
}
