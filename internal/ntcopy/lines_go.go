package ntcopy

import "unsafe"

// The line kernels with ordinary stores: the implementation elsewhere than amd64, and the
// reference of the assembly's test.

func stridedLinesGo(dst, src unsafe.Pointer, stride, w, lines uintptr) {
	rows := lines * line / (w * 4)
	d := unsafe.Slice((*float32)(dst), rows*w)
	for i := range rows {
		s := unsafe.Slice((*float32)(unsafe.Add(src, i*stride)), w)
		copy(d[i*w:], s)
	}
}

func fill64LinesGo(dst unsafe.Pointer, v uint64, lines uintptr) {
	fillGo(unsafe.Slice((*uint64)(dst), lines*line/8), v)
}

func iota32LinesGo(dst unsafe.Pointer, v0 int32, lines uintptr) {
	iotaGo(unsafe.Slice((*int32)(dst), lines*line/4), v0)
}

func stridedWordsGo(dst, src unsafe.Pointer, stride, w, rows uintptr) {
	d := unsafe.Slice((*float32)(dst), rows*w)
	for i := range rows {
		copy(d[i*w:], unsafe.Slice((*float32)(unsafe.Add(src, i*stride)), w))
	}
}
