package inference

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// This file reads the parts of an ONNX ModelProto that the sampler needs (graph inputs and
// outputs with their element types, shapes and symbolic dimension names, the metadata map, and
// a few descriptive fields) straight from the protobuf wire format, so a model can be inspected
// without the runtime, and a corrupt file is reported as such before the runtime sees it.
//
// Field numbers follow onnx.proto3: ModelProto{ir_version=1, producer_name=2,
// producer_version=3, domain=4, model_version=5, doc_string=6, graph=7, opset_import=8,
// metadata_props=14}; GraphProto{initializer=5, name=2, input=11, output=12};
// ValueInfoProto{name=1, type=2}; TypeProto{tensor_type=1}; TypeProto.Tensor{elem_type=1,
// shape=2}; TensorShapeProto{dim=1}; Dimension{dim_value=1, dim_param=2};
// StringStringEntryProto{key=1, value=2}; OperatorSetIdProto{domain=1, version=2};
// TensorProto{name=8}.

// errMalformed is wrapped by every wire-format error.
var errMalformed = errors.New("malformed protobuf")

type wireField struct {
	num  int
	typ  int // 0 varint, 1 fixed64, 2 bytes, 5 fixed32
	v    uint64
	data []byte
}

// nextField decodes one field from b, returning it and the rest of b.
func nextField(b []byte) (wireField, []byte, error) {
	key, n := binary.Uvarint(b)
	if n <= 0 {
		return wireField{}, nil, fmt.Errorf("%w: bad field key", errMalformed)
	}
	b = b[n:]
	f := wireField{num: int(key >> 3), typ: int(key & 7)}
	if key>>3 == 0 || key>>3 > math.MaxInt32 {
		return wireField{}, nil, fmt.Errorf("%w: field number %d", errMalformed, key>>3)
	}
	switch f.typ {
	case 0:
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return wireField{}, nil, fmt.Errorf("%w: truncated varint in field %d", errMalformed, f.num)
		}
		f.v, b = v, b[n:]
	case 1:
		if len(b) < 8 {
			return wireField{}, nil, fmt.Errorf("%w: truncated fixed64 in field %d", errMalformed, f.num)
		}
		f.v, b = binary.LittleEndian.Uint64(b), b[8:]
	case 2:
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return wireField{}, nil, fmt.Errorf("%w: truncated length-delimited field %d", errMalformed, f.num)
		}
		f.data, b = b[n:n+int(l)], b[n+int(l):]
	case 5:
		if len(b) < 4 {
			return wireField{}, nil, fmt.Errorf("%w: truncated fixed32 in field %d", errMalformed, f.num)
		}
		f.v, b = uint64(binary.LittleEndian.Uint32(b)), b[4:]
	default:
		return wireField{}, nil, fmt.Errorf("%w: wire type %d in field %d", errMalformed, f.typ, f.num)
	}
	return f, b, nil
}

// eachField calls fn for every field of the message b.
func eachField(b []byte, fn func(f wireField) error) error {
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// modelProto is what parseModel extracts from an ONNX file.
type modelProto struct {
	irVersion       int64
	producerName    string
	producerVersion string
	domain          string
	modelVersion    int64
	docString       string
	graphName       string
	opsets          map[string]int64
	inputs          []ValueInfo
	outputs         []ValueInfo
	metadata        map[string]string
	metadataKeys    []string // in file order
	hasGraph        bool
}

func parseModel(b []byte) (*modelProto, error) {
	m := &modelProto{opsets: map[string]int64{}, metadata: map[string]string{}}
	var graph []byte
	err := eachField(b, func(f wireField) error {
		if f.num == 7 && f.typ == 2 {
			graph, m.hasGraph = f.data, true
			return nil
		}
		return m.modelField(f)
	})
	if err != nil {
		return nil, err
	}
	if !m.hasGraph {
		return nil, fmt.Errorf("%w: no graph", errMalformed)
	}
	if err := m.parseGraph(graph); err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	return m, nil
}

// modelField records one field of ModelProto other than the graph; fields it does not use
// are skipped.
func (m *modelProto) modelField(f wireField) error {
	switch {
	case f.num == 8 && f.typ == 2:
		domain, version, err := parseOpsetImport(f.data)
		if err != nil {
			return fmt.Errorf("opset_import: %w", err)
		}
		m.opsets[domain] = version
	case f.num == 14 && f.typ == 2:
		k, v, err := parseStringEntry(f.data)
		if err != nil {
			return fmt.Errorf("metadata_props: %w", err)
		}
		if _, dup := m.metadata[k]; !dup {
			m.metadataKeys = append(m.metadataKeys, k)
		}
		m.metadata[k] = v
	default:
		m.describingField(f)
	}
	return nil
}

// describingField records the descriptive scalars of ModelProto (fields 1 to 6).
func (m *modelProto) describingField(f wireField) {
	switch {
	case f.num == 1 && f.typ == 0:
		m.irVersion = int64(f.v)
	case f.num == 2 && f.typ == 2:
		m.producerName = string(f.data)
	case f.num == 3 && f.typ == 2:
		m.producerVersion = string(f.data)
	case f.num == 4 && f.typ == 2:
		m.domain = string(f.data)
	case f.num == 5 && f.typ == 0:
		m.modelVersion = int64(f.v)
	case f.num == 6 && f.typ == 2:
		m.docString = string(f.data)
	}
}

// parseOpsetImport reads an OperatorSetIdProto: domain (1) and version (2).
func parseOpsetImport(b []byte) (domain string, version int64, err error) {
	err = eachField(b, func(g wireField) error {
		switch {
		case g.num == 1 && g.typ == 2:
			domain = string(g.data)
		case g.num == 2 && g.typ == 0:
			version = int64(g.v)
		}
		return nil
	})
	return domain, version, err
}

// parseStringEntry reads a StringStringEntryProto: key (1) and value (2).
func parseStringEntry(b []byte) (key, value string, err error) {
	err = eachField(b, func(g wireField) error {
		switch {
		case g.num == 1 && g.typ == 2:
			key = string(g.data)
		case g.num == 2 && g.typ == 2:
			value = string(g.data)
		}
		return nil
	})
	return key, value, err
}

func (m *modelProto) parseGraph(b []byte) error {
	initializers := map[string]bool{}
	var inputs, outputs [][]byte
	err := eachField(b, func(f wireField) error {
		switch {
		case f.num == 2 && f.typ == 2:
			m.graphName = string(f.data)
		case f.num == 5 && f.typ == 2:
			return eachField(f.data, func(g wireField) error {
				if g.num == 8 && g.typ == 2 {
					initializers[string(g.data)] = true
				}
				return nil
			})
		case f.num == 11 && f.typ == 2:
			inputs = append(inputs, f.data)
		case f.num == 12 && f.typ == 2:
			outputs = append(outputs, f.data)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, in := range inputs {
		vi, err := parseValueInfo(in)
		if err != nil {
			return fmt.Errorf("input: %w", err)
		}
		if !initializers[vi.Name] { // inputs that are initializers (IR < 4) are weights
			m.inputs = append(m.inputs, vi)
		}
	}
	for _, out := range outputs {
		vi, err := parseValueInfo(out)
		if err != nil {
			return fmt.Errorf("output: %w", err)
		}
		m.outputs = append(m.outputs, vi)
	}
	return nil
}

func parseValueInfo(b []byte) (ValueInfo, error) {
	vi := ValueInfo{ElemType: ElemUndefined}
	err := eachField(b, func(f wireField) error {
		switch {
		case f.num == 1 && f.typ == 2:
			vi.Name = string(f.data)
		case f.num == 2 && f.typ == 2:
			return eachField(f.data, func(t wireField) error {
				if t.num != 1 || t.typ != 2 { // only tensor_type is used by policies
					if t.typ == 2 && t.num >= 4 && t.num <= 9 {
						vi.NotTensor = true
					}
					return nil
				}
				return parseTensorType(t.data, &vi)
			})
		}
		return nil
	})
	if err != nil {
		return vi, err
	}
	if vi.Name == "" {
		return vi, fmt.Errorf("%w: value without a name", errMalformed)
	}
	return vi, nil
}

func parseTensorType(b []byte, vi *ValueInfo) error {
	return eachField(b, func(f wireField) error {
		switch {
		case f.num == 1 && f.typ == 0:
			vi.ElemType = ElemType(f.v)
		case f.num == 2 && f.typ == 2:
			vi.Shape, vi.DimNames = []int64{}, []string{}
			return eachField(f.data, func(d wireField) error {
				if d.num != 1 || d.typ != 2 {
					return nil
				}
				size, name := int64(-1), ""
				if err := eachField(d.data, func(g wireField) error {
					switch {
					case g.num == 1 && g.typ == 0:
						size = int64(g.v)
					case g.num == 2 && g.typ == 2:
						name = string(g.data)
					}
					return nil
				}); err != nil {
					return err
				}
				if size < -1 {
					size = -1
				}
				vi.Shape = append(vi.Shape, size)
				vi.DimNames = append(vi.DimNames, strings.Clone(name))
				return nil
			})
		}
		return nil
	})
}

// appendMetadataProp appends a metadata_props entry to a serialized ModelProto. Protobuf
// merges repeated fields by concatenation, so the result is a valid model whose metadata map
// also holds key (the last value wins for a key present twice).
func appendMetadataProp(model []byte, key, value string) []byte {
	var entry []byte
	entry = appendBytesField(entry, 1, []byte(key))
	entry = appendBytesField(entry, 2, []byte(value))
	out := make([]byte, 0, len(model)+len(entry)+16)
	out = append(out, model...)
	return appendBytesField(out, 14, entry)
}

func appendBytesField(b []byte, num int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(num)<<3|2)
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}
