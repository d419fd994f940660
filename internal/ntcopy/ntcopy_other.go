//go:build !amd64

package ntcopy

import "unsafe"

func stridedLines(dst, src unsafe.Pointer, stride, w, lines uintptr) {
	stridedLinesGo(dst, src, stride, w, lines)
}

func stridedWords(dst, src unsafe.Pointer, stride, w, rows uintptr) {
	stridedWordsGo(dst, src, stride, w, rows)
}

func fill64Lines(dst unsafe.Pointer, v uint64, lines uintptr) { fill64LinesGo(dst, v, lines) }

func iota32Lines(dst unsafe.Pointer, v0 int32, lines uintptr) { iota32LinesGo(dst, v0, lines) }

func fence() {}
