package inference

import (
	"fmt"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
)

// Tensor is one input or output of a Session: a buffer that holds up to the session's capacity
// along the batch axis, viewed at the current batch size (Session.SetBatch). The buffer is
// allocated once; the views returned by Float32, Int64, ... alias it. Write inputs after
// SetBatch and before Run; read outputs after Run. Data stays valid until the next SetBatch or
// Run of the same session.
//
// Layout: row-major in the current Shape. For a tensor whose batch axis is not 0 (PyTorch's
// LSTM state is [layers, batch, hidden]), row i of the batch is spread over Outer() chunks of
// Inner() elements: chunk k of row i starts at (k*batch+i)*Inner().
type Tensor struct {
	Info ValueInfo
	// BatchAxis is the axis that grows with the batch, or -1 for a tensor that does not
	// depend on the batch size.
	BatchAxis int

	shape        []int64 // at the current batch size
	outer, inner int
	n            int // elements at the current batch size

	f32 []float32
	f64 []float64
	i32 []int32
	i64 []int64
	u8  []uint8
	b   []bool

	pinBuf []byte // the buffer's pages, when it was allocated to be pinned (allocPinnable)
}

// Shape returns the shape at the current batch size. The caller must not modify it.
func (t *Tensor) Shape() []int64 { return t.shape }

// Len returns the number of elements at the current batch size.
func (t *Tensor) Len() int { return t.n }

// Outer returns the product of the dimensions before the batch axis (1 when it is axis 0).
func (t *Tensor) Outer() int { return t.outer }

// Inner returns the product of the dimensions after the batch axis: the number of elements
// one batch row holds in each outer chunk.
func (t *Tensor) Inner() int { return t.inner }

// RowSize returns the number of elements one batch row holds in all: Outer()*Inner().
func (t *Tensor) RowSize() int { return t.outer * t.inner }

func (t *Tensor) typePanic(want ElemType) {
	panic(fmt.Sprintf("inference: tensor %q holds %s, not %s", t.Info.Name, t.Info.ElemType, want))
}

// Float32 returns the data at the current batch size. It panics if the tensor is not float32.
func (t *Tensor) Float32() []float32 {
	if t.f32 == nil {
		t.typePanic(ElemFloat32)
	}
	return t.f32[:t.n]
}

// Float64 returns the data at the current batch size. It panics if the tensor is not float64.
func (t *Tensor) Float64() []float64 {
	if t.f64 == nil {
		t.typePanic(ElemFloat64)
	}
	return t.f64[:t.n]
}

// Int32 returns the data at the current batch size. It panics if the tensor is not int32.
func (t *Tensor) Int32() []int32 {
	if t.i32 == nil {
		t.typePanic(ElemInt32)
	}
	return t.i32[:t.n]
}

// Int64 returns the data at the current batch size. It panics if the tensor is not int64.
func (t *Tensor) Int64() []int64 {
	if t.i64 == nil {
		t.typePanic(ElemInt64)
	}
	return t.i64[:t.n]
}

// Uint8 returns the data at the current batch size. It panics if the tensor is not uint8.
func (t *Tensor) Uint8() []uint8 {
	if t.u8 == nil {
		t.typePanic(ElemUint8)
	}
	return t.u8[:t.n]
}

// Bool returns the data at the current batch size. It panics if the tensor is not bool.
func (t *Tensor) Bool() []bool {
	if t.b == nil {
		t.typePanic(ElemBool)
	}
	return t.b[:t.n]
}

// Values returns the data at the current batch size as float64 values, whatever the element
// type (bool as 0 or 1). It allocates; it is meant for tools and tests, not the hot path.
func (t *Tensor) Values() []float64 {
	out := make([]float64, t.n)
	for i := range out {
		switch {
		case t.f32 != nil:
			out[i] = float64(t.f32[i])
		case t.f64 != nil:
			out[i] = t.f64[i]
		case t.i32 != nil:
			out[i] = float64(t.i32[i])
		case t.i64 != nil:
			out[i] = float64(t.i64[i])
		case t.u8 != nil:
			out[i] = float64(t.u8[i])
		case t.b != nil && t.b[i]:
			out[i] = 1
		}
	}
	return out
}

// SetValues writes float64 values into the data at the current batch size, converting to the
// element type (integers must be integral, bools 0 or 1). It is meant for tools and tests.
func (t *Tensor) SetValues(v []float64) error {
	if len(v) != t.n {
		return fmt.Errorf("inference: input %q: %d values for shape %v (%d elements)", t.Info.Name, len(v), t.shape, t.n)
	}
	for i, x := range v {
		integral := x == float64(int64(x))
		switch {
		case t.f32 != nil:
			t.f32[i] = float32(x)
		case t.f64 != nil:
			t.f64[i] = x
		case t.i32 != nil && integral && x == float64(int32(x)):
			t.i32[i] = int32(x)
		case t.i64 != nil && integral:
			t.i64[i] = int64(x)
		case t.u8 != nil && integral && x >= 0 && x <= 255:
			t.u8[i] = uint8(x)
		case t.b != nil && (x == 0 || x == 1):
			t.b[i] = x == 1
		default:
			return &TypeError{Name: t.Info.Name, Want: t.Info.ElemType, Detail: fmt.Sprintf("value %v at index %d does not fit", x, i)}
		}
	}
	return nil
}

// alloc makes the capacity buffer for elems elements.
func (t *Tensor) alloc(elems int) error {
	switch t.Info.ElemType {
	case ElemFloat32:
		t.f32 = make([]float32, elems)
	case ElemFloat64:
		t.f64 = make([]float64, elems)
	case ElemInt32:
		t.i32 = make([]int32, elems)
	case ElemInt64:
		t.i64 = make([]int64, elems)
	case ElemUint8:
		t.u8 = make([]uint8, elems)
	case ElemBool:
		t.b = make([]bool, elems)
	default:
		return &TypeError{Name: t.Info.Name, Want: t.Info.ElemType, Detail: "element type not supported (float32, float64, int32, int64, uint8 and bool are)"}
	}
	return nil
}

// allocPinnable allocates the buffer on whole pages of its own (pinBuf), so that it can be
// page-locked for the GPU (pinned.go).
func (t *Tensor) allocPinnable(elems int) error {
	size := map[ElemType]int{ElemFloat32: 4, ElemFloat64: 8, ElemInt32: 4, ElemInt64: 8, ElemUint8: 1, ElemBool: 1}[t.Info.ElemType]
	if size == 0 {
		return t.alloc(elems) // the same error
	}
	t.pinBuf = pageAligned(elems * size)
	p := unsafe.Pointer(&t.pinBuf[0])
	switch t.Info.ElemType {
	case ElemFloat32:
		t.f32 = unsafe.Slice((*float32)(p), elems)
	case ElemFloat64:
		t.f64 = unsafe.Slice((*float64)(p), elems)
	case ElemInt32:
		t.i32 = unsafe.Slice((*int32)(p), elems)
	case ElemInt64:
		t.i64 = unsafe.Slice((*int64)(p), elems)
	case ElemUint8:
		t.u8 = unsafe.Slice((*uint8)(p), elems)
	case ElemBool:
		t.b = unsafe.Slice((*bool)(p), elems)
	}
	return nil
}

// ortValue makes a runtime tensor over the first elements of the buffer, with shape.
func (t *Tensor) ortValue(shape []int64) (ort.Value, error) {
	s := ort.NewShape(shape...)
	switch {
	case t.f32 != nil:
		return ort.NewTensor(s, t.f32)
	case t.f64 != nil:
		return ort.NewTensor(s, t.f64)
	case t.i32 != nil:
		return ort.NewTensor(s, t.i32)
	case t.i64 != nil:
		return ort.NewTensor(s, t.i64)
	case t.u8 != nil:
		return ort.NewTensor(s, t.u8)
	case t.b != nil:
		return ort.NewTensor(s, t.b)
	}
	return nil, fmt.Errorf("inference: tensor %q has no buffer", t.Info.Name)
}

// shapeAt writes the tensor's shape at batch size n into dst and returns dst.
func (t *Tensor) shapeAt(dst []int64, base []int64, n int) []int64 {
	dst = append(dst[:0], base...)
	if t.BatchAxis >= 0 {
		dst[t.BatchAxis] = int64(n)
	}
	return dst
}

// setBatch points the views at batch size n.
func (t *Tensor) setBatch(base []int64, n int) {
	t.shape = t.shapeAt(t.shape, base, n)
	t.n = 1
	for _, d := range t.shape {
		t.n *= int(d)
	}
	t.outer, t.inner = 1, 1
	for i, d := range t.shape {
		switch {
		case t.BatchAxis < 0 || i > t.BatchAxis:
			t.inner *= int(d)
		case i < t.BatchAxis:
			t.outer *= int(d)
		}
	}
}
