package main

import (
	"encoding/json"
	"fmt"
	"github.com/onnxrl/sampler/envrunner/runspec"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/onnxrl/sampler/inference"
)

// maxInputFile bounds the size of an infer input file.
const maxInputFile = 256 << 20

type inferInput struct {
	Inputs map[string]tensorJSON `json:"inputs"`
}

type tensorJSON struct {
	Shape []int64     `json:"shape"`
	Data  []jsonFloat `json:"data"`
}

// jsonFloat is a number that may also be written "nan", "inf" or "-inf" (JSON has none of them).
type jsonFloat float64

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		switch s {
		case "nan", "NaN":
			*f = jsonFloat(math.NaN())
		case "inf", "+inf", "Infinity":
			*f = jsonFloat(math.Inf(1))
		case "-inf", "-Infinity":
			*f = jsonFloat(math.Inf(-1))
		default:
			return fmt.Errorf("%q is not a number", s)
		}
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", b)
	}
	*f = jsonFloat(v)
	return nil
}

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"nan"`), nil
	case math.IsInf(v, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-inf"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func runInfer(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("infer", "--model MODEL --input FILE [--device cpu|cuda:0|native]", stdout)
	model := fs.String("model", "", "model: a path to an .onnx file or a bundled model name (required)")
	input := fs.String("input", "", `JSON file {"inputs": {"<name>": {"shape": [...], "data": [...]}}}, or - for stdin (required)`)
	device := fs.String("device", "cpu", "execution provider: cpu, cuda[:id], tensorrt[:id], native (the project's provider) or native:cuda[:id]")
	threads := fs.Int("threads", 0, "intra-op threads (0: the runtime's default)")
	var maxModel modelSizeFlag
	maxModel.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if err := maxModel.parse(); err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *model == "" || *input == "" {
		return usagef("--model and --input are required")
	}
	if _, err := inference.ParseDevice(*device); err != nil {
		return &usageError{err.Error()}
	}
	p, err := runspec.OpenPolicy(*model, maxModel.limit())
	if err != nil {
		return err
	}
	in, err := readInferInput(*input, inputLimits(p.Model))
	if err != nil {
		return err
	}
	sess, err := inference.NewSession(p.Model, inference.Options{Device: *device, Capacity: inputCapacity(in), IntraOpThreads: *threads})
	if err != nil {
		return err
	}
	defer sess.Close()
	outs, err := sess.Infer(in.data())
	if err != nil {
		return err
	}
	b, err := json.Marshal(outputsJSON(sess, outs))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// inputCapacity is the session's batch capacity for in: its largest dimension up to 2^20.
func inputCapacity(in *inferInput) int {
	capacity := 1
	for _, t := range in.Inputs {
		for _, d := range t.Shape {
			if d > int64(capacity) && d <= 1<<20 {
				capacity = int(d)
			}
		}
	}
	return capacity
}

// data is the session's inputs of in.
func (in *inferInput) data() map[string]inference.Data {
	data := make(map[string]inference.Data, len(in.Inputs))
	for name, t := range in.Inputs {
		vals := make([]float64, len(t.Data))
		for i, v := range t.Data {
			vals[i] = float64(v)
		}
		data[name] = inference.Data{Shape: t.Shape, Values: vals}
	}
	return data
}

// inferOutput is what sample infer prints.
type inferOutput struct {
	Outputs map[string]tensorJSON `json:"outputs"`
}

// outputsJSON is the session's outputs as sample infer prints them: a float32 output's
// values as the shortest decimals that read back as the same float32.
func outputsJSON(sess *inference.Session, outs map[string]inference.Data) inferOutput {
	res := inferOutput{Outputs: map[string]tensorJSON{}}
	for name, d := range outs {
		vals := make([]jsonFloat, len(d.Values))
		t, _ := sess.Output(name)
		for i, v := range d.Values {
			if t.Info.ElemType == inference.ElemFloat32 {
				v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 32), 64)
			}
			vals[i] = jsonFloat(v)
		}
		res.Outputs[name] = tensorJSON{Shape: d.Shape, Data: vals}
	}
	return res
}

func readInferInput(path string, limits map[string]int64) (*inferInput, error) {
	var r io.Reader
	if path == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		defer f.Close()
		r = f
	}
	in, err := parseInferInput(path, r, limits)
	if err != nil {
		return nil, err
	}
	return checkInferInput(path, in)
}

// checkInferInput checks what parseInferInput read.
func checkInferInput(path string, in *inferInput) (*inferInput, error) {
	if len(in.Inputs) == 0 {
		return nil, fmt.Errorf(`input %s: no inputs; want {"inputs": {"<name>": {"shape": [...], "data": [...]}}}`, path)
	}
	for name, t := range in.Inputs {
		n := int64(1)
		for _, d := range t.Shape {
			if d < 0 || d > 1<<31 {
				return nil, fmt.Errorf("input %s: %q: invalid dimension %d in shape %v", path, name, d, t.Shape)
			}
			n *= d
			if n > 1<<31 {
				return nil, fmt.Errorf("input %s: %q: shape %v is too large", path, name, t.Shape)
			}
		}
		if int64(len(t.Data)) != n {
			return nil, fmt.Errorf("input %s: %q: shape %v holds %d values, but data has %d", path, name, t.Shape, n, len(t.Data))
		}
	}
	return in, nil
}
