package inference

// Pinned tensors for the CUDA backend of the native provider: a session on native:cuda:N
// allocates its input and output buffers page-aligned and has the provider page-lock them
// (OnnxrlEpPinHost, ep/src/cuda/pinned.h), so that each run's copies to and from the GPU are
// one asynchronous DMA each, with no staging copy. The buffers stay Go memory, held in place by
// a runtime.Pinner until Close unpins them; a session that is never closed keeps them (the
// package holds its pins: heldPins).

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

typedef int (*onnxrl_pin_fn)(int, void *, size_t, char *, size_t);
typedef int (*onnxrl_unpin_fn)(void *, char *, size_t);

// onnxrl_ep_symbol finds name in the provider library the runtime already loaded from lib.
static void *onnxrl_ep_symbol(const char *lib, const char *name) {
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	if (h == NULL) return NULL;
	void *f = dlsym(h, name);
	dlclose(h);  // the runtime's reference keeps the library loaded
	return f;
}

static int onnxrl_ep_pin(void *f, int dev, void *p, size_t n, char *msg, size_t m) {
	return ((onnxrl_pin_fn)f)(dev, p, n, msg, m);
}

static int onnxrl_ep_unpin(void *f, void *p, char *msg, size_t m) {
	return ((onnxrl_unpin_fn)f)(p, msg, m);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// pageSize is the alignment and size granule of pinned buffers: the driver page-locks whole
// pages, and two registrations may not share one.
const pageSize = 4096

var (
	pinFnsOnce       sync.Once
	pinFn, unpinFn   unsafe.Pointer
	errPinningOff    = errors.New("pinning is turned off")
	errNoPinEntryFns = errors.New("the native provider library has no OnnxrlEpPinHost (an older build: run `make native`)")
)

// pinFuncs finds the provider's pinning entry points (once).
func pinFuncs() (pin, unpin unsafe.Pointer) {
	pinFnsOnce.Do(func() {
		lib := C.CString(NativeLibraryPath())
		defer C.free(unsafe.Pointer(lib))
		p, u := C.CString("OnnxrlEpPinHost"), C.CString("OnnxrlEpUnpinHost")
		defer C.free(unsafe.Pointer(p))
		defer C.free(unsafe.Pointer(u))
		pinFn, unpinFn = C.onnxrl_ep_symbol(lib, p), C.onnxrl_ep_symbol(lib, u)
	})
	return pinFn, unpinFn
}

// pageAligned returns n bytes (at least one page's worth, rounded up to whole pages) starting
// on a page boundary: a slice of a larger Go allocation.
func pageAligned(n int) []byte {
	rounded := (max(n, 1) + pageSize - 1) / pageSize * pageSize
	buf := make([]byte, rounded+pageSize)
	off := (pageSize - int(uintptr(unsafe.Pointer(&buf[0]))%pageSize)) % pageSize
	return buf[off : off+rounded : off+rounded]
}

// pinSet is a session's pinned buffers.
type pinSet struct {
	pinner runtime.Pinner
	starts []unsafe.Pointer
	held   bool // in heldPins
}

// heldPins holds every pinSet that pins something until it is released, so that a session
// dropped without Close keeps its buffers pinned (a leak) instead of its Pinner being
// collected while it pins, which the Go runtime answers with a panic that ends the process.
var heldPins sync.Map // *pinSet -> struct{}

// pin page-locks buf for device id's executors. It returns errPinningOff when the provider
// has pinning turned off ($ONNXRL_CUDA_PIN=0).
func (ps *pinSet) pin(id int, buf []byte) error {
	pin, _ := pinFuncs()
	if pin == nil {
		return errNoPinEntryFns
	}
	p := unsafe.Pointer(&buf[0])
	ps.pinner.Pin(p) // the provider and the driver keep the address
	if !ps.held {
		heldPins.Store(ps, struct{}{})
		ps.held = true
	}
	var msg [512]C.char
	switch C.onnxrl_ep_pin(pin, C.int(id), p, C.size_t(len(buf)), &msg[0], C.size_t(len(msg))) {
	case 0:
		ps.starts = append(ps.starts, p)
		return nil
	case 1:
		return errPinningOff
	default:
		return errors.New(C.GoString(&msg[0]))
	}
}

// release unpins every buffer; the first failure is returned.
func (ps *pinSet) release() error {
	var first error
	_, unpin := pinFuncs()
	for _, p := range ps.starts {
		var msg [512]C.char
		if C.onnxrl_ep_unpin(unpin, p, &msg[0], C.size_t(len(msg))) != 0 && first == nil {
			first = fmt.Errorf("inference: %s", C.GoString(&msg[0]))
		}
	}
	ps.starts = nil
	ps.pinner.Unpin()
	if ps.held {
		heldPins.Delete(ps)
		ps.held = false
	}
	return first
}

// pinTensors page-locks every tensor's buffer for the session's GPU. Pinning only speeds the
// copies up: a buffer the provider cannot pin is copied through its own staging buffers, and
// the reason is logged when the session logs warnings.
func (s *Session) pinTensors(logWarnings bool) {
	for _, list := range [][]*Tensor{s.inputs, s.outputs} {
		for _, t := range list {
			if t.pinBuf == nil {
				continue
			}
			if err := s.pins.pin(s.device.ID, t.pinBuf); err != nil {
				if logWarnings && !errors.Is(err, errPinningOff) {
					fmt.Fprintf(os.Stderr, "inference: %s: copies of %q go through staging buffers: %v\n", s.device, t.Info.Name, err)
				}
				return
			}
		}
	}
}
