package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/inference"
)

// policyOptions are onnxrl_policy_open's options (see the header).
type policyOptions struct {
	Device           string `json:"device"`
	Threads          int    `json:"threads"`
	Seed             uint64 `json:"seed"`
	Workers          int    `json:"workers"`
	NormalizeActions bool   `json:"normalize_actions"`
	ClipActions      bool   `json:"clip_actions"`
	MaxModelBytes    int64  `json:"max_model_bytes"`
}

func defaultPolicyOptions() policyOptions {
	return policyOptions{Device: "cpu", Threads: 1, Workers: 1, NormalizeActions: true, MaxModelBytes: inference.DefaultMaxModelBytes}
}

func (o *policyOptions) check() error {
	if _, err := inference.ParseDevice(o.Device); err != nil {
		return err
	}
	switch {
	case o.Threads < 0:
		return fmt.Errorf("\"threads\" %d: want >= 0 (0: the runtime's default)", o.Threads)
	case o.Workers < 1 || o.Workers > 1024:
		return fmt.Errorf("\"workers\" %d: want 1..1024", o.Workers)
	case o.MaxModelBytes < 1:
		return fmt.Errorf("\"max_model_bytes\" %d: want a positive size in bytes (default %d, 1 GiB)", o.MaxModelBytes, inference.DefaultMaxModelBytes)
	}
	return nil
}

// envOptions are onnxrl_env_open's options (see the header).
type envOptions struct {
	policyOptions
	MaxEpisodes    int    `json:"max_episodes"`
	Explore        bool   `json:"explore"`
	Out            string `json:"out"`
	MaxFileSize    int64  `json:"max_file_size"`
	Format         string `json:"format"`
	Compression    string `json:"compression"`
	MaxWaitUS      int64  `json:"max_wait_us"`
	MaxBatch       int    `json:"max_batch"`
	TimeoutMS      int64  `json:"timeout_ms"`
	FragmentLength int    `json:"fragment_length"`
	// FlushIntervalMS bounds what a crash of the host loses with "out": at least this often
	// the steps collected so far are written and the file made durable (a Parquet file
	// closed with its footer and renamed from .partial), as sample serve's --flush-interval.
	FlushIntervalMS int64 `json:"flush_interval_ms"`
	// RaiseGOMAXPROCS lets the env's waiting threads raise GOMAXPROCS (procs.go).
	RaiseGOMAXPROCS bool `json:"raise_gomaxprocs"`
}

func defaultEnvOptions() envOptions {
	return envOptions{policyOptions: defaultPolicyOptions(), MaxEpisodes: 100, Explore: true,
		MaxFileSize: 64 << 20, TimeoutMS: 60_000, FragmentLength: 200, FlushIntervalMS: 5000, RaiseGOMAXPROCS: true}
}

func (o *envOptions) check() error {
	if o.Workers != 1 {
		return errors.New("\"workers\" is an option of onnxrl_policy_open: an env runs one sampler")
	}
	if err := o.policyOptions.check(); err != nil {
		return err
	}
	switch {
	case o.MaxEpisodes < 1 || o.MaxEpisodes > 1<<20:
		return fmt.Errorf("\"max_episodes\" %d: want 1..%d", o.MaxEpisodes, 1<<20)
	case o.MaxFileSize < 0:
		return fmt.Errorf("\"max_file_size\" %d: want >= 0 (0: one file)", o.MaxFileSize)
	case o.MaxWaitUS < 0 || o.MaxWaitUS > 10_000_000:
		return fmt.Errorf("\"max_wait_us\" %d: want 0..10000000", o.MaxWaitUS)
	case o.MaxBatch < 0:
		return fmt.Errorf("\"max_batch\" %d: want >= 0 (0: min(1024, max_episodes))", o.MaxBatch)
	case o.TimeoutMS == 0:
		return errors.New("\"timeout_ms\" 0: want a positive time (negative: no timeout)")
	case o.FragmentLength < 1:
		return fmt.Errorf("\"fragment_length\" %d: want >= 1", o.FragmentLength)
	case o.FlushIntervalMS < 0 || o.FlushIntervalMS > 86_400_000:
		return fmt.Errorf("\"flush_interval_ms\" %d: want 0..86400000 (0: write only complete fragments and at close)", o.FlushIntervalMS)
	}
	if _, err := o.outputOptions(); err != nil {
		return err
	}
	return nil
}

// readOptions decodes the options JSON into o (holding the defaults) and checks them.
func readOptions(data []byte, o interface{ check() error }) error {
	if err := parseOptions(data, o); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: options: %w", err))
	}
	return nil
}

// parseOptions decodes the options JSON object into o (holding the defaults): NULL (nil),
// "" and "null" leave them; unknown keys, values of the wrong type and anything after the
// object are errors.
func parseOptions(data []byte, o any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	if data[0] != '{' {
		return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: options: want a JSON object, got %.40q", data))
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(o); err != nil {
		return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: options: %w", err))
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return withStatus(statusInvalidArgument, errors.New("onnxrl: options: data after the JSON object"))
	}
	// encoding/json matches keys without regard to case: a key must be spelt as documented.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: options: %w", err))
	}
	known := optionKeys(reflect.TypeOf(o).Elem())
	for k := range keys {
		if !slices.Contains(known, k) {
			return withStatus(statusInvalidArgument, fmt.Errorf("onnxrl: options: unknown key %q (known: %s)", k, strings.Join(known, ", ")))
		}
	}
	return nil
}

// optionKeys returns the JSON keys of struct type t, with those of embedded structs.
func optionKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			keys = append(keys, optionKeys(f.Type)...)
		} else if k, _, _ := strings.Cut(f.Tag.Get("json"), ","); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// outputOptions returns the writer options of "out": "format" (auto: from the extension,
// .parquet is Parquet, anything else JSON lines), "compression" and "max_file_size".
func (o *envOptions) outputOptions() (output.Options, error) {
	f, err := output.ParseFormat(o.Format)
	if err != nil {
		return output.Options{}, fmt.Errorf("\"format\" %q: want auto, json or parquet", o.Format)
	}
	c, err := output.ParseCompression(o.Compression)
	if err != nil {
		return output.Options{}, fmt.Errorf("\"compression\" %q: want snappy, zstd or none", o.Compression)
	}
	return output.Options{MaxFileSize: o.MaxFileSize, Format: f, Compression: c}, nil
}
