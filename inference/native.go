package inference

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// The project's own execution provider (libonnxrl_ep.so, built by `make native` from ep/):
// device "native" runs a policy through its host backend, "native:cuda:N" through its CUDA
// backend where the library has one.

// NativeLibraryEnv names the provider library to register, overriding the look-up.
const NativeLibraryEnv = "ONNXRL_EP_LIBRARY"

// NativeProvider is the provider's name in the runtime (and in the assignment record).
const NativeProvider = "OnnxrlNative"

// nativeRegistration is the name the library is registered under.
const nativeRegistration = "onnxrl_native"

// nativeLibrary is where `make native` puts the library, relative to the project root.
const nativeLibrary = "build/lib/libonnxrl_ep.so"

// ErrNativeNotFound is wrapped by the error returned when the provider library is not found.
var ErrNativeNotFound = errors.New("inference: the native execution provider library (libonnxrl_ep.so) was not found")

// ErrNativeRegistered is returned by RegisterNative once a library is registered.
var ErrNativeRegistered = errors.New("inference: the native execution provider is already registered")

var (
	nativeMu   sync.Mutex
	nativePath string // registered library, "" before
	nativeErr  error  // the automatic registration's failure, sticky
)

// RegisterNative registers the provider library at path with the runtime (initializing the
// runtime if needed). A process registers one library once: a second call returns an error
// wrapping ErrNativeRegistered (or ErrNativeNotFound, whenever path does not exist). Sessions
// with device "native" register the library found by the look-up (NativeLibraryEnv, the
// AlsoLookIn directories, the project's build/lib, the system's library path) when
// RegisterNative was not called first.
func RegisterNative(path string) error {
	if err := Init(); err != nil {
		return err
	}
	nativeMu.Lock()
	defer nativeMu.Unlock()
	// A path that is not there is reported as such, registered library or not.
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNativeNotFound, path, errors.Unwrap(err))
	}
	if nativePath != "" {
		return fmt.Errorf("%w (from %s)", ErrNativeRegistered, nativePath)
	}
	return registerNative(path)
}

// NativeLibraryPath returns the registered provider library, or "".
func NativeLibraryPath() string {
	nativeMu.Lock()
	defer nativeMu.Unlock()
	return nativePath
}

func registerNative(path string) error {
	// The runtime resolves a relative path against its own directory: make it absolute.
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := capiOpen(LibraryPath()); err != nil {
		return fmt.Errorf("inference: reaching the runtime's C API: %w", err)
	}
	if err := ort.RegisterExecutionProviderLibrary(nativeRegistration, path); err != nil {
		return fmt.Errorf("inference: registering the native execution provider %s: %w", path, err)
	}
	nativePath = path
	return nil
}

// EnsureNative registers the provider library found by the look-up unless one is registered
// (sessions on device "native" call it). The error wraps ErrNativeNotFound when there is none.
func EnsureNative() error {
	if err := Init(); err != nil {
		return err
	}
	return ensureNative()
}

// ensureNative registers the looked-up library unless one is registered.
func ensureNative() error {
	nativeMu.Lock()
	defer nativeMu.Unlock()
	if nativePath != "" {
		return nil
	}
	if nativeErr != nil {
		return nativeErr
	}
	var tried []string
	for _, p := range nativeCandidates() {
		if _, err := os.Stat(p); err != nil {
			tried = append(tried, p+" (not there)")
			continue
		}
		nativeErr = registerNative(p)
		return nativeErr
	}
	nativeErr = fmt.Errorf("%w; tried: %s. Build it with `make native` in the project root, or set %s to its path",
		ErrNativeNotFound, strings.Join(tried, "; "), NativeLibraryEnv)
	return nativeErr
}

func nativeCandidates() []string {
	if p := os.Getenv(NativeLibraryEnv); p != "" {
		return []string{p}
	}
	initMu.Lock()
	dirs := append([]string(nil), alsoDirs...)
	initMu.Unlock()
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Join(d, "libonnxrl_ep.so"))
	}
	for _, root := range projectRoots() {
		out = append(out, filepath.Join(root, nativeLibrary))
	}
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if d != "" {
			out = append(out, filepath.Join(d, "libonnxrl_ep.so"))
		}
	}
	return out
}

// appendNative adds the native provider to so: backend and device_id from the device, then
// Options.ProviderOptions verbatim (the provider rejects keys it does not know when the
// session is created).
func appendNative(so *ort.SessionOptions, dev Device, opts Options) error {
	if err := ensureNative(); err != nil {
		return err
	}
	kv := map[string]string{"backend": dev.Backend, "device_id": strconv.Itoa(dev.ID)}
	for k, v := range opts.ProviderOptions {
		kv[k] = v
	}
	return capiAppend(so, NativeProvider, kv)
}

// Assignment returns the runtime's record of which execution provider runs which nodes of the
// model. The session must have been made with Options.RecordAssignment.
func (s *Session) Assignment() ([]AssignedSubgraph, error) {
	if s.closed {
		return nil, ErrClosed
	}
	subs, err := capiAssignment(s.sess)
	if err != nil {
		return nil, fmt.Errorf("inference: the execution provider assignment (needs Options.RecordAssignment): %w", err)
	}
	return subs, nil
}

// parseNativeDevice parses what follows "native": nothing (host), ":host", ":cuda" or ":cuda:N".
func parseNativeDevice(s, rest string, hasRest bool) (Device, error) {
	d := Device{Provider: "native", Backend: "host"}
	if !hasRest {
		return d, nil
	}
	backend, id, hasID := strings.Cut(rest, ":")
	switch backend {
	case "host":
		if hasID {
			return d, fmt.Errorf("inference: device %q: the host backend takes no device id", s)
		}
		return d, nil
	case "cuda":
		d.Backend = "cuda"
	default:
		return d, fmt.Errorf("inference: device %q: unknown native backend %q (want native, native:host or native:cuda[:id])", s, backend)
	}
	if hasID {
		n, err := strconv.Atoi(id)
		if err != nil || n < 0 {
			return d, fmt.Errorf("inference: device %q: the device id must be a non-negative integer", s)
		}
		d.ID = n
	}
	return d, nil
}
