package inference

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	ort "github.com/yalue/onnxruntime_go"
)

// DefaultCapacity is the largest batch a Session runs when Options.Capacity is 0.
const DefaultCapacity = 256

// Options configures a Session. The zero value runs on the CPU with the runtime's defaults.
type Options struct {
	// Device selects the execution provider: "" or "cpu", "cuda" or "cuda:N", "tensorrt" or
	// "tensorrt:N" (N is the device id, 0 when left out), "native" (the project's own provider,
	// libonnxrl_ep.so, host backend) or "native:cuda:N" (its CUDA backend).
	Device string
	// IntraOpThreads and InterOpThreads set the runtime's thread pools (0: the runtime's
	// default, which uses every core; set IntraOpThreads to 1 when running one session per
	// worker goroutine).
	IntraOpThreads int
	InterOpThreads int
	// GraphOptimization is "disable", "basic", "extended" or "all" ("" = "all").
	GraphOptimization string
	// Capacity is the largest batch size the session runs (0: DefaultCapacity). Models with a
	// fixed batch dimension run at exactly that size, padded when fewer rows are used.
	Capacity int
	// DimValues gives values for dynamic dimensions other than the batch axis, by symbolic
	// name (for example {"seq": 1}).
	DimValues map[string]int64
	// CUDA holds CUDA execution provider options, used when Device is cuda.
	CUDA CUDAOptions
	// ProviderOptions are passed verbatim to the CUDA, TensorRT or native provider (keys as in
	// the ONNX Runtime documentation, for example "trt_fp16_enable": "1").
	ProviderOptions map[string]string
	// RecordAssignment keeps the runtime's record of which provider runs which node, for
	// Session.Assignment.
	RecordAssignment bool
	// LogWarnings lets the session log the runtime's and the providers' warnings to stderr
	// (for example why the native provider leaves a node to the CPU provider); by default only
	// errors are logged.
	LogWarnings bool
}

// CUDAOptions are the commonly used options of ONNX Runtime's CUDA execution provider.
type CUDAOptions struct {
	// EnableCUDAGraph captures the model in a CUDA graph and replays it (enable_cuda_graph).
	// Sessions bind their tensors once per batch size, as CUDA graphs require.
	EnableCUDAGraph bool
	// GPUMemLimit caps the provider's memory arena in bytes (gpu_mem_limit; 0: no cap).
	GPUMemLimit int64
	// ArenaExtendStrategy is "kNextPowerOfTwo" or "kSameAsRequested" ("" = default).
	ArenaExtendStrategy string
	// CudnnConvAlgoSearch is "EXHAUSTIVE", "HEURISTIC" or "DEFAULT" ("" = default).
	CudnnConvAlgoSearch string
	// DoCopyInDefaultStream (do_copy_in_default_stream); nil leaves the default.
	DoCopyInDefaultStream *bool
}

// Device is a parsed Options.Device.
type Device struct {
	Provider string // "cpu", "cuda", "tensorrt" or "native"
	ID       int
	Backend  string // native only: "host" or "cuda"
}

func (d Device) String() string {
	switch {
	case d.Provider == "cpu":
		return "cpu"
	case d.Provider == "native" && d.Backend == "host":
		return "native"
	case d.Provider == "native":
		return fmt.Sprintf("native:%s:%d", d.Backend, d.ID)
	}
	return fmt.Sprintf("%s:%d", d.Provider, d.ID)
}

// ParseDevice parses a device string: "cpu", "cuda", "cuda:1", "tensorrt:0", "native",
// "native:cuda:0", ...
func ParseDevice(s string) (Device, error) {
	name, id, hasID := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	if name == "" {
		name = "cpu"
	}
	d := Device{Provider: name}
	switch name {
	case "native":
		return parseNativeDevice(s, id, hasID)
	case "cpu":
		if hasID {
			return d, fmt.Errorf("inference: device %q: cpu takes no device id", s)
		}
		return d, nil
	case "cuda", "tensorrt":
	default:
		return d, fmt.Errorf("inference: unknown device %q (want cpu, cuda[:id], tensorrt[:id], native or native:cuda[:id])", s)
	}
	if hasID {
		n, err := strconv.Atoi(id)
		if err != nil || n < 0 {
			return d, fmt.Errorf("inference: device %q: the device id must be a non-negative integer", s)
		}
		d.ID = n
	}
	return d, nil
}

var optimizationLevels = map[string]ort.GraphOptimizationLevel{
	"":         ort.GraphOptimizationLevelEnableAll,
	"all":      ort.GraphOptimizationLevelEnableAll,
	"extended": ort.GraphOptimizationLevelEnableExtended,
	"basic":    ort.GraphOptimizationLevelEnableBasic,
	"disable":  ort.GraphOptimizationLevelDisableAll,
}

// Session runs one model on batches of 1 to Capacity rows.
//
// All inputs and outputs are bound once per batch size in use (through an I/O binding to
// buffers the session allocates at construction), so Run allocates nothing once each batch
// size has been seen.
//
// A Session is owned by one goroutine: SetBatch, the tensors' data and Run must not be used
// concurrently. For N worker goroutines make N sessions from the same Model (each holds its
// own runtime session and buffers) and consider IntraOpThreads = 1.
type Session struct {
	model    *Model
	device   Device
	sess     *ort.DynamicAdvancedSession
	inputs   []*Tensor
	outputs  []*Tensor
	inBase   [][]int64 // shapes with the batch axis at 0 (filled at bind time)
	outBase  [][]int64
	capacity int
	fixed    int // > 0: the model's batch size is fixed at this value
	batch    int
	bindings []*binding // indexed by batch size
	closed   bool
	pins     *pinSet // the tensors' buffers page-locked for the GPU (native:cuda), or nil
}

type binding struct {
	io     *ort.IoBinding
	values []ort.Value
}

// NewSession makes a session for m with the given options. It initializes the runtime (Init)
// if needed.
func NewSession(m *Model, opts Options) (*Session, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	dev, err := ParseDevice(opts.Device)
	if err != nil {
		return nil, err
	}
	s := &Session{model: m, device: dev}
	if dev.Provider == "native" && dev.Backend == "cuda" {
		s.pins = &pinSet{}
	}
	if err := s.planTensors(opts); err != nil {
		return nil, err
	}
	so, err := sessionOptions(dev, opts)
	if err != nil {
		return nil, deviceError(dev, err)
	}
	defer so.Destroy()
	names := func(vs []ValueInfo) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = v.Name
		}
		return out
	}
	s.sess, err = ort.NewDynamicAdvancedSessionWithONNXData(m.data, names(m.Inputs), names(m.Outputs), so)
	if err != nil {
		return nil, deviceError(dev, &ModelError{Path: m.Path, Err: fmt.Errorf("the runtime rejected the model: %w", errors.Unwrap(err))})
	}
	if err := s.resolveOutputs(opts); err != nil {
		s.Close()
		return nil, err
	}
	if s.pins != nil {
		s.pinTensors(opts.LogWarnings)
	}
	s.bindings = make([]*binding, s.capacity+1)
	if err := s.SetBatch(1); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func sessionOptions(dev Device, opts Options) (*ort.SessionOptions, error) {
	so, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("inference: session options: %w", err)
	}
	fail := func(err error) (*ort.SessionOptions, error) {
		so.Destroy()
		return nil, err
	}
	level, ok := optimizationLevels[strings.ToLower(opts.GraphOptimization)]
	if !ok {
		return fail(fmt.Errorf("inference: unknown graph optimization level %q (want disable, basic, extended or all)", opts.GraphOptimization))
	}
	if err := so.SetGraphOptimizationLevel(level); err != nil {
		return fail(fmt.Errorf("inference: graph optimization level: %w", err))
	}
	if opts.IntraOpThreads < 0 || opts.InterOpThreads < 0 {
		return fail(fmt.Errorf("inference: thread counts must not be negative"))
	}
	if opts.IntraOpThreads > 0 {
		if err := so.SetIntraOpNumThreads(opts.IntraOpThreads); err != nil {
			return fail(fmt.Errorf("inference: intra-op threads: %w", err))
		}
	}
	if opts.InterOpThreads > 0 {
		if err := so.SetInterOpNumThreads(opts.InterOpThreads); err != nil {
			return fail(fmt.Errorf("inference: inter-op threads: %w", err))
		}
	}
	switch dev.Provider {
	case "cuda":
		if err := appendCUDA(so, dev, opts); err != nil {
			return fail(&ProviderError{Provider: dev.String(), Library: LibraryPath(), Version: Version(), Err: err})
		}
	case "tensorrt":
		if err := appendTensorRT(so, dev, opts); err != nil {
			return fail(&ProviderError{Provider: dev.String(), Library: LibraryPath(), Version: Version(), Err: err})
		}
	case "native":
		if err := appendNative(so, dev, opts); err != nil {
			return fail(err)
		}
	}
	if opts.LogWarnings {
		if err := so.SetLogSeverityLevel(ort.LoggingLevelWarning); err != nil {
			return fail(fmt.Errorf("inference: session log level: %w", err))
		}
	}
	if opts.RecordAssignment {
		if err := so.AddSessionConfigEntry("session.record_ep_graph_assignment_info", "1"); err != nil {
			return fail(fmt.Errorf("inference: recording the provider assignment: %w", err))
		}
	}
	return so, nil
}

// cudaProviderOptions turns the options into the CUDA provider's key/value form.
func cudaProviderOptions(dev Device, opts Options) map[string]string {
	kv := map[string]string{"device_id": strconv.Itoa(dev.ID)}
	c := opts.CUDA
	if c.EnableCUDAGraph {
		kv["enable_cuda_graph"] = "1"
	}
	if c.GPUMemLimit > 0 {
		kv["gpu_mem_limit"] = strconv.FormatInt(c.GPUMemLimit, 10)
	}
	if c.ArenaExtendStrategy != "" {
		kv["arena_extend_strategy"] = c.ArenaExtendStrategy
	}
	if c.CudnnConvAlgoSearch != "" {
		kv["cudnn_conv_algo_search"] = c.CudnnConvAlgoSearch
	}
	if c.DoCopyInDefaultStream != nil {
		kv["do_copy_in_default_stream"] = map[bool]string{true: "1", false: "0"}[*c.DoCopyInDefaultStream]
	}
	for k, v := range opts.ProviderOptions {
		kv[k] = v
	}
	return kv
}

func appendCUDA(so *ort.SessionOptions, dev Device, opts Options) error {
	co, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer co.Destroy()
	if err := co.Update(cudaProviderOptions(dev, opts)); err != nil {
		return err
	}
	return so.AppendExecutionProviderCUDA(co)
}

func appendTensorRT(so *ort.SessionOptions, dev Device, opts Options) error {
	to, err := ort.NewTensorRTProviderOptions()
	if err != nil {
		return err
	}
	defer to.Destroy()
	kv := map[string]string{"device_id": strconv.Itoa(dev.ID)}
	for k, v := range opts.ProviderOptions {
		kv[k] = v
	}
	if err := to.Update(kv); err != nil {
		return err
	}
	return so.AppendExecutionProviderTensorRT(to)
}

// planTensors decides each input's batch axis and the session's capacity, and allocates
// the input buffers.
func (s *Session) planTensors(opts Options) error {
	dynamic, err := s.checkInputs(opts)
	if err != nil {
		return err
	}
	s.capacity = opts.Capacity
	if s.capacity == 0 {
		s.capacity = DefaultCapacity
	}
	if s.capacity < 0 {
		return fmt.Errorf("inference: capacity %d must be positive", opts.Capacity)
	}
	if !dynamic {
		s.fixed = fixedBatch(s.model.Inputs)
		s.capacity = max(s.fixed, 1)
	}
	for _, in := range s.model.Inputs {
		if err := s.planInput(in, opts); err != nil {
			return err
		}
	}
	return nil
}

// checkInputs refuses inputs that are not tensors of a supported element type, and says
// whether any input has a batch axis (a dynamic dimension not given in opts.DimValues).
func (s *Session) checkInputs(opts Options) (dynamic bool, err error) {
	for _, in := range s.model.Inputs {
		if in.NotTensor {
			return false, &TypeError{Name: in.Name, Detail: "input is not a tensor (sequences and maps are not supported)"}
		}
		if !in.ElemType.Supported() {
			return false, &TypeError{Name: in.Name, Want: in.ElemType, Detail: "element type not supported (float32, float64, int32, int64, uint8 and bool are)"}
		}
		if batchAxis(in, opts.DimValues) >= 0 {
			dynamic = true
		}
	}
	return dynamic, nil
}

// fixedBatch is the batch of a model exported with a fixed one: every input's axis 0 is the
// batch, and all of them agree. 0 when they do not (or no input has an axis).
func fixedBatch(inputs []ValueInfo) int {
	fixed := -1
	for _, in := range inputs {
		switch {
		case len(in.Shape) == 0:
		case fixed < 0:
			fixed = int(in.Shape[0])
		case int64(fixed) != in.Shape[0]:
			fixed = 0
		}
	}
	return max(fixed, 0)
}

// planInput allocates the tensor of input in: its shape with every dynamic dimension other
// than the batch axis given by opts.DimValues, the batch axis at s.capacity.
func (s *Session) planInput(in ValueInfo, opts Options) error {
	t := &Tensor{Info: in, BatchAxis: batchAxis(in, opts.DimValues)}
	if s.fixed > 0 && len(in.Shape) > 0 {
		t.BatchAxis = 0
	}
	base := slices.Clone(in.Shape)
	for i, d := range base {
		if d >= 0 || i == t.BatchAxis {
			continue
		}
		v, ok := opts.DimValues[in.DimNames[i]]
		if !ok || v <= 0 {
			return fmt.Errorf("inference: input %q has shape %s: dimension %d is dynamic but is not the batch axis; "+
				"give it a positive value in Options.DimValues (by its symbolic name)", in.Name, in.ShapeString(), i)
		}
		base[i] = v
	}
	if t.BatchAxis >= 0 {
		base[t.BatchAxis] = 1
	}
	s.inBase = append(s.inBase, base)
	elems, err := tensorElems(in.Name, base, t.BatchAxis, s.capacity)
	if err != nil {
		return err
	}
	if err := s.allocTensor(t, elems); err != nil {
		return err
	}
	s.inputs = append(s.inputs, t)
	return nil
}

// batchAxis returns the input's batch axis: the first dynamic dimension not given a value
// in dimValues, or -1.
func batchAxis(v ValueInfo, dimValues map[string]int64) int {
	for i, d := range v.Shape {
		if d >= 0 {
			continue
		}
		if _, given := dimValues[v.DimNames[i]]; given && v.DimNames[i] != "" {
			continue
		}
		return i
	}
	return -1
}

// resolveOutputs finds each output's batch axis and shape by running the model at batch 1
// and 2 (zeros in every input) and comparing the output shapes, then allocates the output
// buffers. Probing is what makes exported models with odd output dimension names (or none)
// work: the shapes the runtime produces are the truth.
func (s *Session) resolveOutputs(opts Options) error {
	first := 1
	if s.fixed > 0 {
		first = s.fixed
	}
	one, err := s.probe(first)
	if err != nil {
		return err
	}
	var two [][]int64
	if s.fixed == 0 && s.capacity >= 2 {
		if two, err = s.probe(2); err != nil {
			return err
		}
	}
	for i, info := range s.model.Outputs {
		if !info.ElemType.Supported() {
			return &TypeError{Name: info.Name, Want: info.ElemType, Detail: "output element type not supported (float32, float64, int32, int64, uint8 and bool are)"}
		}
		var at2 []int64
		if two != nil {
			at2 = two[i]
		}
		t := &Tensor{Info: info}
		if t.BatchAxis, err = s.outputBatchAxis(info, one[i], at2, opts); err != nil {
			return err
		}
		base := slices.Clone(one[i])
		if s.fixed > 0 && t.BatchAxis == 0 {
			base[0] = 1
		}
		s.outBase = append(s.outBase, base)
		elems, err := tensorElems(info.Name, base, t.BatchAxis, s.capacity)
		if err != nil {
			return err
		}
		if err := s.allocTensor(t, elems); err != nil {
			return err
		}
		s.outputs = append(s.outputs, t)
	}
	return nil
}

// outputBatchAxis decides an output's batch axis (-1 for none) from its shapes at the first
// probe (base: batch 1, or the model's fixed batch) and at batch 2 (two, nil when not probed).
func (s *Session) outputBatchAxis(info ValueInfo, base, two []int64, opts Options) (int, error) {
	switch {
	case s.fixed > 0:
		if len(base) > 0 && base[0] == int64(s.fixed) {
			return 0, nil
		}
		return -1, nil
	case two != nil:
		if len(two) != len(base) {
			return 0, &ModelError{Path: s.model.Path, Err: fmt.Errorf("output %q changes rank with the batch size (%v at batch 1, %v at batch 2)", info.Name, base, two)}
		}
		axis := -1
		for ax := range base {
			if base[ax] == two[ax] {
				continue
			}
			if axis >= 0 || base[ax] != 1 || two[ax] != 2 {
				return 0, &ModelError{Path: s.model.Path, Err: fmt.Errorf("output %q does not have one batch axis (%v at batch 1, %v at batch 2)", info.Name, base, two)}
			}
			axis = ax
		}
		return axis, nil
	default:
		return batchAxis(info, opts.DimValues), nil
	}
}

// probe runs the model at batch n with zeros in every input and returns the outputs' shapes
// (nil for an output the runtime left out).
func (s *Session) probe(n int) ([][]int64, error) {
	ins := make([]ort.Value, len(s.inputs))
	defer func() {
		for _, v := range ins {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for i, t := range s.inputs {
		shape := t.shapeAt(nil, s.inBase[i], n)
		tmp := &Tensor{Info: t.Info}
		elems, err := tensorElems(t.Info.Name, shape, -1, 0)
		if err != nil {
			return nil, err
		}
		if err := tmp.alloc(elems); err != nil {
			return nil, err
		}
		v, err := tmp.ortValue(shape)
		if err != nil {
			return nil, fmt.Errorf("inference: probe input %q: %w", t.Info.Name, err)
		}
		ins[i] = v
	}
	outs := make([]ort.Value, len(s.model.Outputs))
	if err := s.sess.Run(ins, outs); err != nil {
		return nil, &ModelError{Path: s.model.Path, Err: fmt.Errorf("running the model at batch %d with zero inputs failed: %w", n, err)}
	}
	shapes := make([][]int64, len(outs))
	var err error
	for i, v := range outs {
		if v == nil {
			continue
		}
		switch {
		case err != nil: // only destroyed
		case v.GetONNXType() != ort.ONNXTypeTensor:
			err = &TypeError{Name: s.model.Outputs[i].Name, Detail: "output is not a tensor (sequences and maps are not supported)"}
		default:
			shapes[i] = slices.Clone([]int64(v.GetShape()))
		}
		v.Destroy()
	}
	if err != nil {
		return nil, err
	}
	return shapes, nil
}

// allocTensor allocates a tensor's buffer, on pages of its own where the session pins them.
func (s *Session) allocTensor(t *Tensor, elems int) error {
	if s.pins != nil {
		return t.allocPinnable(elems)
	}
	return t.alloc(elems)
}

// bind creates the I/O binding for batch size n.
func (s *Session) bind(n int) (*binding, error) {
	b := &binding{}
	var err error
	if b.io, err = s.sess.CreateIoBinding(); err != nil {
		return nil, fmt.Errorf("inference: creating the I/O binding for batch %d: %w", n, err)
	}
	add := func(t *Tensor, base []int64, input bool) error {
		v, err := t.ortValue(t.shapeAt(nil, base, n))
		if err != nil {
			return fmt.Errorf("inference: binding %q at batch %d: %w", t.Info.Name, n, err)
		}
		b.values = append(b.values, v)
		if input {
			err = b.io.BindInput(t.Info.Name, v)
		} else {
			err = b.io.BindOutput(t.Info.Name, v)
		}
		if err != nil {
			return fmt.Errorf("inference: binding %q at batch %d: %w", t.Info.Name, n, err)
		}
		return nil
	}
	for i, t := range s.inputs {
		if err := add(t, s.inBase[i], true); err != nil {
			b.destroy()
			return nil, err
		}
	}
	for i, t := range s.outputs {
		if err := add(t, s.outBase[i], false); err != nil {
			b.destroy()
			return nil, err
		}
	}
	return b, nil
}

func (b *binding) destroy() {
	if b.io != nil {
		b.io.Destroy()
		b.io = nil
	}
	for _, v := range b.values {
		v.Destroy()
	}
	b.values = nil
}

// SetBatch sets the batch size of the next Run to n (1..Capacity) and points every tensor's
// view at it. The first use of a batch size binds its tensors (that allocates); later uses
// allocate nothing. Input data written before a SetBatch that changes the size must be
// written again when a tensor's batch axis is not 0.
func (s *Session) SetBatch(n int) error {
	if s.closed {
		return ErrClosed
	}
	if n < 1 || n > s.capacity {
		return &BatchError{Batch: n, Capacity: s.capacity}
	}
	bn := n
	if s.fixed > 0 {
		bn = s.fixed
	}
	if s.bindings[bn] == nil {
		b, err := s.bind(bn)
		if err != nil {
			return err
		}
		s.bindings[bn] = b
	}
	s.batch = n
	for i, t := range s.inputs {
		t.setBatch(s.inBase[i], n)
	}
	for i, t := range s.outputs {
		t.setBatch(s.outBase[i], n)
	}
	return nil
}

// Run runs the model on the current batch: it reads the inputs' data and writes the
// outputs' data. It allocates nothing.
func (s *Session) Run() error {
	if s.closed {
		return ErrClosed
	}
	bn := s.batch
	if s.fixed > 0 {
		bn = s.fixed
	}
	if err := s.sess.RunWithBinding(s.bindings[bn].io); err != nil {
		return fmt.Errorf("inference: run %s at batch %d: %w", s.model.Path, s.batch, err)
	}
	return nil
}

// Close releases the runtime session and every binding. It is safe to call more than once.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var unpinErr error
	if s.pins != nil {
		unpinErr = s.pins.release()
		s.pins = nil
	}
	for i, b := range s.bindings {
		if b != nil {
			b.destroy()
			s.bindings[i] = nil
		}
	}
	if s.sess != nil {
		if err := s.sess.Destroy(); err != nil {
			return fmt.Errorf("inference: closing the session: %w", err)
		}
	}
	return unpinErr
}

// Model returns the session's model.
func (s *Session) Model() *Model { return s.model }

// Device returns the device the session runs on.
func (s *Session) Device() Device { return s.device }

// Capacity returns the largest batch size the session runs.
func (s *Session) Capacity() int { return s.capacity }

// FixedBatch returns the model's fixed batch size, or 0 when the batch axis is dynamic.
func (s *Session) FixedBatch() int { return s.fixed }

// Batch returns the current batch size.
func (s *Session) Batch() int { return s.batch }

// Inputs returns the input tensors in model order.
func (s *Session) Inputs() []*Tensor { return s.inputs }

// Outputs returns the output tensors in model order.
func (s *Session) Outputs() []*Tensor { return s.outputs }

// Input returns the input tensor named name.
func (s *Session) Input(name string) (*Tensor, error) { return lookup(s.inputs, "input", name) }

// Output returns the output tensor named name.
func (s *Session) Output(name string) (*Tensor, error) { return lookup(s.outputs, "output", name) }

func lookup(ts []*Tensor, kind, name string) (*Tensor, error) {
	for _, t := range ts {
		if t.Info.Name == name {
			return t, nil
		}
	}
	known := make([]string, len(ts))
	for i, t := range ts {
		known[i] = t.Info.Name
	}
	return nil, &UnknownNameError{Kind: kind, Name: name, Known: known}
}
