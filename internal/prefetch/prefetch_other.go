//go:build !amd64

package prefetch

import "unsafe"

func line(unsafe.Pointer) {}

func lines(unsafe.Pointer, uintptr) {}
