// Package onnxtest builds tiny ONNX models in memory for tests: a graph of single-operator
// nodes with typed inputs and outputs, serialized straight to the protobuf wire format.
package onnxtest

import (
	"encoding/binary"
	"math"
)

// Element types (onnx.TensorProto.DataType).
const (
	Float32 = 1
	Int32   = 6
	Int64   = 7
	Bool    = 9
	Float64 = 11
	String  = 8
)

// Value is a graph input or output. Dims holds fixed sizes; a negative entry is dynamic and
// takes its symbolic name from Names (same index), "" for an unnamed dynamic dimension.
// NoShape leaves the shape out (rank unknown; Dims is then ignored).
type Value struct {
	Name     string
	ElemType int
	Dims     []int64
	Names    []string
	NoShape  bool
}

// Node is one operator: op_type with its inputs and outputs, and an optional name and
// attributes.
type Node struct {
	Op      string
	Inputs  []string
	Outputs []string
	Name    string
	Attrs   []Attr
}

// Attribute kinds (onnx.AttributeProto.AttributeType).
const (
	AttrFloat = 1
	AttrInt   = 2
	AttrInts  = 7
)

// Attr is a node attribute of kind AttrInt (Int), AttrFloat (Float) or AttrInts (Ints).
type Attr struct {
	Name  string
	Kind  int
	Int   int64
	Float float32
	Ints  []int64
}

// IntAttr, FloatAttr and IntsAttr make an attribute of each kind.
func IntAttr(name string, v int64) Attr     { return Attr{Name: name, Kind: AttrInt, Int: v} }
func FloatAttr(name string, v float32) Attr { return Attr{Name: name, Kind: AttrFloat, Float: v} }
func IntsAttr(name string, v ...int64) Attr { return Attr{Name: name, Kind: AttrInts, Ints: v} }

// Initializer is a constant tensor of the graph: float32 (Data) unless ElemType is Int64, whose
// values are Ints.
type Initializer struct {
	Name     string
	Dims     []int64
	Data     []float32
	ElemType int // 0: Float32
	Ints     []int64
}

// Model is a whole model.
type Model struct {
	Inputs, Outputs []Value
	Nodes           []Node
	Initializers    []Initializer
	Metadata        [][2]string
	Opset           int64 // 0: 17
}

// Bytes serializes the model.
func (m Model) Bytes() []byte {
	var graph []byte
	for _, n := range m.Nodes {
		var nb []byte
		for _, in := range n.Inputs {
			nb = str(nb, 1, in)
		}
		for _, out := range n.Outputs {
			nb = str(nb, 2, out)
		}
		if n.Name != "" {
			nb = str(nb, 3, n.Name)
		}
		nb = str(nb, 4, n.Op)
		for _, a := range n.Attrs {
			nb = msg(nb, 5, attribute(a))
		}
		graph = msg(graph, 1, nb)
	}
	graph = str(graph, 2, "test")
	for _, in := range m.Initializers {
		var tb []byte
		for _, d := range in.Dims {
			tb = varint(tb, 1, uint64(d))
		}
		var raw []byte
		if in.ElemType == Int64 {
			tb = varint(tb, 2, Int64)
			for _, v := range in.Ints {
				raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
			}
		} else {
			tb = varint(tb, 2, Float32)
			for _, f := range in.Data {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
			}
		}
		tb = str(tb, 8, in.Name)
		tb = msg(tb, 9, raw)
		graph = msg(graph, 5, tb)
	}
	for _, v := range m.Inputs {
		graph = msg(graph, 11, valueInfo(v))
	}
	for _, v := range m.Outputs {
		graph = msg(graph, 12, valueInfo(v))
	}
	opset := m.Opset
	if opset == 0 {
		opset = 17
	}
	var b []byte
	b = varint(b, 1, 8) // ir_version
	b = str(b, 2, "onnxtest")
	b = msg(b, 7, graph)
	var os []byte
	os = str(os, 1, "")
	os = varint(os, 2, uint64(opset))
	b = msg(b, 8, os)
	for _, kv := range m.Metadata {
		var e []byte
		e = str(e, 1, kv[0])
		e = str(e, 2, kv[1])
		b = msg(b, 14, e)
	}
	return b
}

func attribute(a Attr) []byte {
	b := str(nil, 1, a.Name)
	switch a.Kind {
	case AttrFloat:
		b = binary.LittleEndian.AppendUint32(key(b, 2, 5), math.Float32bits(a.Float))
	case AttrInt:
		b = varint(b, 3, uint64(a.Int))
	case AttrInts:
		for _, v := range a.Ints {
			b = varint(b, 8, uint64(v))
		}
	}
	return varint(b, 20, uint64(a.Kind))
}

func valueInfo(v Value) []byte {
	var shape []byte
	for i, d := range v.Dims {
		var dim []byte
		if d >= 0 {
			dim = varint(dim, 1, uint64(d))
		} else if i < len(v.Names) && v.Names[i] != "" {
			dim = str(dim, 2, v.Names[i])
		}
		shape = msg(shape, 1, dim)
	}
	var tt []byte
	tt = varint(tt, 1, uint64(v.ElemType))
	if !v.NoShape {
		tt = msg(tt, 2, shape)
	}
	var typ []byte
	typ = msg(typ, 1, tt)
	var vi []byte
	vi = str(vi, 1, v.Name)
	return msg(vi, 2, typ)
}

func key(b []byte, num, wire int) []byte { return binary.AppendUvarint(b, uint64(num)<<3|uint64(wire)) }

func varint(b []byte, num int, v uint64) []byte {
	return binary.AppendUvarint(key(b, num, 0), v)
}

func msg(b []byte, num int, data []byte) []byte {
	b = binary.AppendUvarint(key(b, num, 2), uint64(len(data)))
	return append(b, data...)
}

func str(b []byte, num int, s string) []byte { return msg(b, num, []byte(s)) }
