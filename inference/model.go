package inference

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ElemType is an ONNX tensor element type (the TensorProto.DataType enum).
type ElemType int32

// The element types of ONNX.
const (
	ElemUndefined  ElemType = 0
	ElemFloat32    ElemType = 1
	ElemUint8      ElemType = 2
	ElemInt8       ElemType = 3
	ElemUint16     ElemType = 4
	ElemInt16      ElemType = 5
	ElemInt32      ElemType = 6
	ElemInt64      ElemType = 7
	ElemString     ElemType = 8
	ElemBool       ElemType = 9
	ElemFloat16    ElemType = 10
	ElemFloat64    ElemType = 11
	ElemUint32     ElemType = 12
	ElemUint64     ElemType = 13
	ElemComplex64  ElemType = 14
	ElemComplex128 ElemType = 15
	ElemBFloat16   ElemType = 16
)

var elemNames = map[ElemType]string{
	ElemUndefined: "undefined", ElemFloat32: "float32", ElemUint8: "uint8", ElemInt8: "int8",
	ElemUint16: "uint16", ElemInt16: "int16", ElemInt32: "int32", ElemInt64: "int64",
	ElemString: "string", ElemBool: "bool", ElemFloat16: "float16", ElemFloat64: "float64",
	ElemUint32: "uint32", ElemUint64: "uint64", ElemComplex64: "complex64",
	ElemComplex128: "complex128", ElemBFloat16: "bfloat16",
}

// String returns the numpy-style name of the type ("float32", "int64", "bool", ...).
func (t ElemType) String() string {
	if s, ok := elemNames[t]; ok {
		return s
	}
	return fmt.Sprintf("elem(%d)", int32(t))
}

// Supported reports whether sessions of this package can bind tensors of this type: float32,
// float64, int32, int64, uint8 and bool.
func (t ElemType) Supported() bool {
	switch t {
	case ElemFloat32, ElemFloat64, ElemInt32, ElemInt64, ElemUint8, ElemBool:
		return true
	}
	return false
}

// ValueInfo describes one input or output of a model.
type ValueInfo struct {
	Name     string
	ElemType ElemType
	// Shape holds the dimensions; -1 marks a dynamic dimension.
	Shape []int64
	// DimNames holds the symbolic name of each dimension ("batch", "seq", ...), or "" for a
	// fixed or unnamed one. Same length as Shape.
	DimNames []string
	// NotTensor is set for sequence, map, optional and sparse values, which sessions of this
	// package do not bind.
	NotTensor bool
}

// Dynamic reports whether dimension i is dynamic.
func (v ValueInfo) Dynamic(i int) bool { return v.Shape[i] < 0 }

// ShapeString formats the shape with symbolic names, like [batch,4] or [1,?,32].
func (v ValueInfo) ShapeString() string {
	parts := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		switch {
		case d >= 0:
			parts[i] = fmt.Sprint(d)
		case i < len(v.DimNames) && v.DimNames[i] != "":
			parts[i] = v.DimNames[i]
		default:
			parts[i] = "?"
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func (v ValueInfo) String() string {
	return fmt.Sprintf("%s %s%s", v.Name, v.ElemType, v.ShapeString())
}

// Model is a parsed ONNX model: its bytes, inputs, outputs and metadata. Loading a model does
// not need the runtime; sessions are made from it with NewSession. A Model is immutable and
// safe to share between goroutines.
type Model struct {
	// Path is the file the model was loaded from, or the name given to LoadBytes.
	Path string
	// Inputs and Outputs in graph order (initializers excluded).
	Inputs  []ValueInfo
	Outputs []ValueInfo
	// Metadata is the model's metadata_props map; MetadataKeys lists its keys in file order.
	Metadata     map[string]string
	MetadataKeys []string
	// Descriptive fields of the ModelProto.
	IRVersion       int64
	ProducerName    string
	ProducerVersion string
	GraphName       string
	Opsets          map[string]int64

	data []byte
}

// ErrNotONNX is wrapped by the error for data that is not an ONNX model (garbage or truncated
// bytes, or a protobuf that has no graph).
var ErrNotONNX = errors.New("inference: not an ONNX model")

// ModelError reports a model that could not be read.
type ModelError struct {
	Path string
	Err  error
}

func (e *ModelError) Error() string { return fmt.Sprintf("inference: model %s: %v", e.Path, e.Err) }
func (e *ModelError) Unwrap() error { return e.Err }

// notONNXError carries the detail of why data is not an ONNX model; it matches ErrNotONNX.
type notONNXError struct{ detail string }

func (e *notONNXError) Error() string        { return "not an ONNX model: " + e.detail }
func (e *notONNXError) Is(target error) bool { return target == ErrNotONNX }

func notONNX(format string, args ...any) error {
	return &notONNXError{detail: fmt.Sprintf(format, args...)}
}

// LoadFile reads and parses the ONNX model at path, a regular file of at most
// DefaultMaxModelBytes. A missing file yields an error that wraps fs.ErrNotExist; garbage or
// truncated data an error that wraps ErrNotONNX; a device or pipe a *NotRegularError and a
// larger file a *FileSizeError, before anything is read.
func LoadFile(path string) (*Model, error) { return LoadFileLimit(path, DefaultMaxModelBytes) }

// LoadFileLimit is LoadFile for a file of at most limit bytes (limit <= 0: DefaultMaxModelBytes).
func LoadFileLimit(path string, limit int64) (*Model, error) {
	if limit <= 0 {
		limit = DefaultMaxModelBytes
	}
	data, err := ReadFileLimit(path, limit)
	if err != nil {
		return nil, &ModelError{Path: path, Err: unpath(err, path)}
	}
	return LoadBytes(path, data)
}

// unpath drops the path from the size and file-kind errors, which ModelError names already.
func unpath(err error, path string) error {
	var se *FileSizeError
	var ne *NotRegularError
	switch {
	case errors.As(err, &se):
		return &FileSizeError{Size: se.Size, Limit: se.Limit}
	case errors.As(err, &ne):
		return &NotRegularError{Mode: ne.Mode}
	}
	return err
}

// LoadBytes parses an ONNX model held in memory; name is used in messages. data is kept (not
// copied): the caller must not modify it afterwards.
func LoadBytes(name string, data []byte) (*Model, error) {
	if len(data) == 0 {
		return nil, &ModelError{Path: name, Err: notONNX("empty file")}
	}
	p, err := parseModel(data)
	if err != nil {
		return nil, &ModelError{Path: name, Err: notONNX("%v", err)}
	}
	if len(p.inputs) == 0 || len(p.outputs) == 0 {
		return nil, &ModelError{Path: name, Err: notONNX("the graph has no inputs or no outputs")}
	}
	for _, v := range slices.Concat(p.inputs, p.outputs) {
		if len(v.Shape) == 0 && !v.NotTensor && v.ElemType == ElemUndefined {
			return nil, &ModelError{Path: name, Err: notONNX("value %q has no type", v.Name)}
		}
	}
	return &Model{
		Path: name, Inputs: p.inputs, Outputs: p.outputs,
		Metadata: p.metadata, MetadataKeys: p.metadataKeys,
		IRVersion: p.irVersion, ProducerName: p.producerName, ProducerVersion: p.producerVersion,
		GraphName: p.graphName, Opsets: p.opsets, data: data,
	}, nil
}

// Bytes returns the serialized model. The caller must not modify it.
func (m *Model) Bytes() []byte { return m.data }

// Input returns the input named name.
func (m *Model) Input(name string) (ValueInfo, bool) { return find(m.Inputs, name) }

// Output returns the output named name.
func (m *Model) Output(name string) (ValueInfo, bool) { return find(m.Outputs, name) }

func find(vs []ValueInfo, name string) (ValueInfo, bool) {
	for _, v := range vs {
		if v.Name == name {
			return v, true
		}
	}
	return ValueInfo{}, false
}

// WithMetadata returns a copy of m whose serialized form carries metadata key=value (added to,
// or replacing, the metadata_props map), for example the policy spec under "onnxrl.policy".
func (m *Model) WithMetadata(key, value string) (*Model, error) {
	return LoadBytes(m.Path, appendMetadataProp(m.data, key, value))
}
