// Package ntcopy fills buffers that nothing will read soon with non-temporal stores, which
// write whole cache lines to memory without reading them first.
//
// An ordinary store to a line that is not in the cache first reads the line from memory
// (read-for-ownership), and the stores behind it wait. A sample batch of a few thousand
// sub-environments (tens of megabytes, written into storage last touched two fragments ago)
// pays that for every line it writes. A non-temporal store (MOVNTI, MOVNTPS, MOVNTDQ: SSE2,
// so every amd64) gathers a line in a write-combining buffer and sends it to memory whole,
// with no read; the line is not left in the cache, so the writer must not read it back soon.
//
// Each function writes the whole 64-byte lines of its destination with non-temporal stores,
// and the partial lines at either end (which a non-temporal store would have to merge in
// memory) with ordinary ones. Non-temporal stores are weakly ordered: call Fence before
// another goroutine may read what they wrote. Elsewhere than amd64 every store is ordinary
// and Fence does nothing.
//
// # Usage
//
//	ntcopy.Strided(obs, traj, stride, 4, n) // n rows of 4 floats, one every stride floats
//	ntcopy.Fill64(epsIDs, id)
//	ntcopy.Fence() // before the batch is handed to another goroutine
package ntcopy

import "unsafe"

// line is the size of a cache line and of a write-combining buffer, in bytes.
const line = 64

// Strided sets dst[:n*w] to n rows of w values: row i is src[i*stride:][:w]. It panics
// when src has fewer than (n-1)*stride+w values or dst fewer than n*w.
func Strided(dst, src []float32, stride, w, n int) {
	if n <= 0 || w <= 0 { // rows of no values (the checks below would read index -1)
		return
	}
	_ = src[(n-1)*stride+w-1]
	_ = dst[n*w-1]
	if w != 1 && w != 2 && w != 4 {
		stridedWide(dst, src, stride, w, n)
		return
	}
	head, lines := split(unsafe.Pointer(&dst[0]), n, w*4)
	if lines == 0 {
		StridedCached(dst, src, stride, w, n)
		return
	}
	StridedCached(dst, src, stride, w, head)
	mid := lines * line / (w * 4) // rows in the whole lines
	stridedLines(unsafe.Pointer(&dst[head*w]), unsafe.Pointer(&src[head*stride]), uintptr(stride*4), uintptr(w), uintptr(lines))
	rest := head + mid
	if rest < n {
		StridedCached(dst[rest*w:], src[rest*stride:], stride, w, n-rest)
	}
}

// stridedWide is Strided for rows whose size does not divide a line: the rows from the first
// that starts a line, in whole groups of rows that end where a line ends, take non-temporal
// stores of 8 bytes (even widths) or 4.
func stridedWide(dst, src []float32, stride, w, n int) {
	size := w * 4
	a := uintptr(unsafe.Pointer(&dst[0]))
	head := 0
	for ; head < n && (a+uintptr(head*size))%line != 0; head++ {
		if head == line/4 { // the rows never start a line
			head = n
			break
		}
	}
	group := line / gcd(size, line) // rows of a whole number of lines
	body := (n - head) / group * group
	if body == 0 {
		StridedCached(dst, src, stride, w, n)
		return
	}
	StridedCached(dst, src, stride, w, head)
	stridedWords(unsafe.Pointer(&dst[head*w]), unsafe.Pointer(&src[head*stride]), uintptr(stride*4), uintptr(w), uintptr(body))
	rest := head + body
	if rest < n {
		StridedCached(dst[rest*w:], src[rest*stride:], stride, w, n-rest)
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Fill32 sets every element of dst to v.
func Fill32[T ~int32 | ~uint32 | ~float32](dst []T, v T) {
	u := uint64(*(*uint32)(unsafe.Pointer(&v)))
	fill(dst, v, 4, u|u<<32)
}

// Fill64 sets every element of dst to v.
func Fill64[T ~int64 | ~uint64 | ~float64](dst []T, v T) {
	fill(dst, v, 8, *(*uint64)(unsafe.Pointer(&v)))
}

// Fill8 sets every element of dst to v.
func Fill8[T ~bool | ~int8 | ~uint8](dst []T, v T) {
	fill(dst, v, 1, uint64(*(*uint8)(unsafe.Pointer(&v)))*0x0101010101010101)
}

// fill sets every element of dst (size bytes each) to v: the whole lines by fill64Lines with
// pattern (v repeated to 64 bits, the same in either byte order), the rest by fillGo.
func fill[T any](dst []T, v T, size int, pattern uint64) {
	n := len(dst)
	if n == 0 {
		return
	}
	head, lines := split(unsafe.Pointer(&dst[0]), n, size)
	if lines == 0 {
		fillGo(dst, v)
		return
	}
	fillGo(dst[:head], v)
	fill64Lines(unsafe.Pointer(&dst[head]), pattern, uintptr(lines))
	fillGo(dst[head+lines*line/size:], v)
}

// Iota32 sets dst[i] to v0+i.
func Iota32(dst []int32, v0 int32) {
	n := len(dst)
	if n == 0 {
		return
	}
	head, lines := split(unsafe.Pointer(&dst[0]), n, 4)
	if lines == 0 {
		iotaGo(dst, v0)
		return
	}
	iotaGo(dst[:head], v0)
	iota32Lines(unsafe.Pointer(&dst[head]), v0+int32(head), uintptr(lines))
	rest := head + lines*line/4
	iotaGo(dst[rest:], v0+int32(rest))
}

// Fence orders the non-temporal stores before it ahead of every store after it (SFENCE),
// so that a goroutine that learns of the buffer through a later store (a channel send, a
// mutex) sees what they wrote.
func Fence() { fence() }

// split returns how many of n rows of size bytes at p come before the first whole line
// (head) and how many whole lines follow (lines); lines is 0 when the rows are not aligned
// to their size or size does not divide a line.
func split(p unsafe.Pointer, n, size int) (head, lines int) {
	a := uintptr(p)
	if line%size != 0 || a%uintptr(size) != 0 {
		return n, 0
	}
	head = int(-a&(line-1)) / size
	if head >= n {
		return n, 0
	}
	return head, (n - head) * size / line
}

// StridedCached is Strided with ordinary stores, which leave the lines in the cache: for a
// destination read back soon. The common widths are one array copy a row (no call).
func StridedCached(dst, src []float32, stride, w, n int) {
	if n <= 0 || w <= 0 {
		return
	}
	_ = src[(n-1)*stride+w-1]
	switch w {
	case 1:
		dst = dst[:n]
		for i := range dst {
			dst[i] = src[i*stride]
		}
	case 2:
		dst = dst[:2*n]
		for i := range n {
			*(*[2]float32)(dst[2*i:]) = *(*[2]float32)(src[i*stride:])
		}
	case 4:
		dst = dst[:4*n]
		for i := range n {
			*(*[4]float32)(dst[4*i:]) = *(*[4]float32)(src[i*stride:])
		}
	default:
		for i := range n {
			copy(dst[i*w:(i+1)*w], src[i*stride:i*stride+w])
		}
	}
}

// iotaGo is Iota32 with ordinary stores.
func iotaGo(dst []int32, v0 int32) {
	for i := range dst {
		dst[i] = v0 + int32(i)
	}
}

// fillGo sets every element of dst to v with ordinary stores.
func fillGo[T any](dst []T, v T) {
	for i := range dst {
		dst[i] = v
	}
}
