package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "internal.h"
#include "sampler_internal.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// The exported onnxrl_sampler_* functions (include/onnxrl/sampler.h, "The sampler"), over
// sampler (sampler.go). As in exports.go: every function recovers a panic (catch) and sets
// the thread's message (finish).

//export onnxrl_sampler_open
func onnxrl_sampler_open(options *C.char, out *C.uintptr_t) (status C.int) {
	defer catch(&status)
	return finish(samplerOpen(options, out))
}

func samplerOpen(options *C.char, out *C.uintptr_t) error {
	if out == nil {
		return fmt.Errorf("%w: out", errNull)
	}
	*out = 0
	var o []byte
	if options != nil {
		var err error
		if o, err = cString(options, "options_json", maxPathLen); err != nil {
			return err
		}
	}
	s, err := openSampler(o)
	if err != nil {
		return err
	}
	*out = C.uintptr_t(table.add(kindSampler, s))
	return nil
}

func samplerOf(h C.uintptr_t) (*sampler, error) {
	x, err := table.get(uintptr(h), kindSampler)
	if err != nil {
		return nil, err
	}
	return x.(*sampler), nil
}

//export onnxrl_sampler_info
func onnxrl_sampler_info(h C.uintptr_t, json **C.char, length *C.size_t) (status C.int) {
	defer catch(&status)
	s, err := samplerOf(h)
	if err != nil {
		return finish(err)
	}
	if json == nil || length == nil {
		return finish(fmt.Errorf("%w: json and len", errNull))
	}
	*json, *length = s.infoJSON, C.size_t(s.infoLen)
	return finish(nil)
}

//export onnxrl_sampler_sample
func onnxrl_sampler_sample(h C.uintptr_t, envSteps, agentSteps *C.int64_t) (status C.int) {
	defer catch(&status)
	s, err := samplerOf(h)
	if err != nil {
		return finish(err)
	}
	e, a, err := s.sample()
	if envSteps != nil {
		*envSteps = C.int64_t(e)
	}
	if agentSteps != nil {
		*agentSteps = C.int64_t(a)
	}
	return finish(err)
}

//export onnxrl_sampler_columns
func onnxrl_sampler_columns(h C.uintptr_t, policy C.int64_t, cols **C.capi_column, nCols, rows *C.int64_t) (status C.int) {
	defer catch(&status)
	s, err := samplerOf(h)
	if err != nil {
		return finish(err)
	}
	if cols == nil || nCols == nil {
		return finish(fmt.Errorf("%w: cols and n_cols", errNull))
	}
	c, n, r, err := s.columns(int64(policy))
	if err != nil {
		return finish(err)
	}
	*cols, *nCols = c, C.int64_t(n)
	if rows != nil {
		*rows = C.int64_t(r)
	}
	return finish(nil)
}

//export onnxrl_sampler_export_arrow
func onnxrl_sampler_export_arrow(h C.uintptr_t, array, schema unsafe.Pointer) (status C.int) {
	defer catch(&status)
	s, err := samplerOf(h)
	if err != nil {
		return finish(err)
	}
	if array == nil {
		return finish(fmt.Errorf("%w: array", errNull))
	}
	return finish(s.exportArrow(array, schema))
}

//export onnxrl_sampler_metrics
func onnxrl_sampler_metrics(h C.uintptr_t, json **C.char, length *C.size_t) (status C.int) {
	defer catch(&status)
	s, err := samplerOf(h)
	if err != nil {
		return finish(err)
	}
	if json == nil || length == nil {
		return finish(fmt.Errorf("%w: json and len", errNull))
	}
	p, n, err := s.metrics()
	if err != nil {
		return finish(err)
	}
	*json, *length = p, C.size_t(n)
	return finish(nil)
}

//export onnxrl_sampler_close
func onnxrl_sampler_close(h C.uintptr_t) (status C.int) {
	defer catch(&status)
	if h == 0 {
		return finish(nil)
	}
	x, err := table.remove(uintptr(h), kindSampler)
	if err != nil {
		return finish(err)
	}
	return finish(x.(*sampler).close())
}
