package inference

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	ort "github.com/yalue/onnxruntime_go"
)

// LibraryEnv is the environment variable that names the ONNX Runtime shared library to load.
const LibraryEnv = "ONNXRUNTIME_SHARED_LIBRARY_PATH"

// PinnedVersion is the ONNX Runtime version the project installs and tests against (the C API
// version of the pinned onnxruntime_go). Newer runtimes load too.
const PinnedVersion = "1.24.1"

// projectLibrary is where `make onnxruntime` installs the library, relative to the project root.
const projectLibrary = "third_party/onnxruntime/lib/libonnxruntime.so.1"

// systemLibraries are the names handed to the dynamic loader, which searches the system's
// library path (LD_LIBRARY_PATH, the ld.so cache, the default directories).
var systemLibraries = []string{"libonnxruntime.so.1", "libonnxruntime.so"}

// ErrLibraryNotFound is wrapped by the error Init returns when no ONNX Runtime library could
// be loaded.
var ErrLibraryNotFound = errors.New("inference: ONNX Runtime shared library not found")

// LibraryNotFoundError lists every place Init looked for the runtime and why each failed.
type LibraryNotFoundError struct {
	Tried []string
}

func (e *LibraryNotFoundError) Error() string {
	return fmt.Sprintf("%v; tried: %s. Install it with `sample runtime install` (into your cache directory), "+
		"or `make onnxruntime` in the project's checkout, or set %s to the path of libonnxruntime.so",
		ErrLibraryNotFound, strings.Join(e.Tried, "; "), LibraryEnv)
}

func (e *LibraryNotFoundError) Unwrap() error { return ErrLibraryNotFound }

var (
	initMu      sync.Mutex
	initDone    bool
	initErr     error
	libraryPath string
	ortVersion  string
	alsoDirs    []string // AlsoLookIn's
)

// AlsoLookIn adds dir to the places Init looks for the runtime (libonnxruntime.so.1 in dir),
// after ONNXRUNTIME_SHARED_LIBRARY_PATH and before the project's own install. A shared
// library that embeds this package (the C API's libonnxrl_sampler.so) names its own
// directory, where its install puts the runtime. It has no effect once Init has run.
func AlsoLookIn(dir string) {
	initMu.Lock()
	defer initMu.Unlock()
	if !initDone && dir != "" {
		alsoDirs = append(alsoDirs, dir)
	}
}

// Init loads the ONNX Runtime shared library and creates the process-wide runtime
// environment. It looks, in order, at the file named by ONNXRUNTIME_SHARED_LIBRARY_PATH, in
// the directories given to AlsoLookIn, at the project's own install (third_party/onnxruntime/ under the project root, found from the
// working directory and from the executable's directory upwards), and at the system's library
// path. Init is safe to call from many goroutines and more than once: the first call does the
// work and every later call returns its result. Every other function of the package calls it.
func Init() error {
	initMu.Lock()
	defer initMu.Unlock()
	if initDone {
		return initErr
	}
	initDone = true
	initErr = load()
	return initErr
}

// Version returns the version string of the loaded runtime (for example "1.24.1"), or "" before
// a successful Init.
func Version() string {
	initMu.Lock()
	defer initMu.Unlock()
	return ortVersion
}

// LibraryPath returns the path or name of the shared library that Init loaded, or "".
func LibraryPath() string {
	initMu.Lock()
	defer initMu.Unlock()
	return libraryPath
}

// candidates returns the library paths to try, each with a note for the error message when
// it is not even worth trying.
func candidates() (try []string, tried []string) {
	if p := os.Getenv(LibraryEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			// The user asked for this file: do not fall back silently to another library.
			return nil, []string{fmt.Sprintf("$%s=%s (%v)", LibraryEnv, p, errors.Unwrap(err))}
		}
		return []string{p}, nil
	}
	tried = append(tried, fmt.Sprintf("$%s (unset)", LibraryEnv))
	seen := map[string]bool{}
	for _, dir := range alsoDirs {
		p := filepath.Join(dir, "libonnxruntime.so.1")
		if seen[p] {
			continue
		}
		seen[p] = true
		if _, err := os.Stat(p); err != nil {
			tried = append(tried, p+" (not there)")
			continue
		}
		try = append(try, p)
	}
	for _, root := range projectRoots() {
		p := filepath.Join(root, projectLibrary)
		if seen[p] {
			continue
		}
		seen[p] = true
		if _, err := os.Stat(p); err != nil {
			tried = append(tried, p+" (not installed)")
			continue
		}
		try = append(try, p)
	}
	if p := userLibrary(); p != "" && !seen[p] {
		if _, err := os.Stat(p); err != nil {
			tried = append(tried, p+" (not installed: `sample runtime install`)")
		} else {
			try = append(try, p)
		}
	}
	return append(try, systemLibraries...), tried
}

// projectRoots returns the directories above the working directory and the executable that
// hold a go.mod or a third_party/onnxruntime install, nearest first.
func projectRoots() []string {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			starts = append(starts, filepath.Dir(exe))
		}
	}
	var roots []string
	for _, dir := range starts {
		for {
			if fileExists(filepath.Join(dir, "third_party", "onnxruntime")) || fileExists(filepath.Join(dir, "go.mod")) {
				roots = append(roots, dir)
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return roots
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func load() error {
	try, tried := candidates()
	for _, p := range try {
		ort.SetSharedLibraryPath(p)
		err := ort.InitializeEnvironment(ort.WithLogLevelError())
		if err == nil {
			libraryPath = p
			ortVersion = ort.GetVersion()
			return nil
		}
		what := p
		if !strings.Contains(p, "/") {
			what = p + " on the system library path"
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", what, shortLoadError(err)))
	}
	return &LibraryNotFoundError{Tried: tried}
}

// shortLoadError trims the binding's wrapping from a dlopen failure.
func shortLoadError(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s, "Error loading ONNX shared library") {
		return strings.TrimSpace(s[i+2:])
	}
	return s
}
