package inference

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestUserLibraryLookup: the user cache is searched after the project's install and
// before the system path; when it is empty, the message says how to fill it.
func TestUserLibraryLookup(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv(LibraryEnv, "")
	dir, err := UserLibraryDir()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(cache, "onnxrl-sampler", "onnxruntime-"+PinnedVersion, "lib")
	if dir != want {
		t.Fatalf("UserLibraryDir() = %s, want %s", dir, want)
	}
	lib := filepath.Join(dir, "libonnxruntime.so.1")

	try, tried := candidates()
	if slices.Contains(try, lib) {
		t.Fatalf("%s tried before it exists: %v", lib, try)
	}
	note := lib + " (not installed: `sample runtime install`)"
	if !slices.Contains(tried, note) {
		t.Fatalf("tried %q, want the note %q", tried, note)
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lib, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	try, _ = candidates()
	i := slices.Index(try, lib)
	if i < 0 {
		t.Fatalf("%s not among %v", lib, try)
	}
	for _, p := range try[:i] {
		if !strings.HasSuffix(p, projectLibrary) {
			t.Errorf("%s comes before the user cache; only the project's install should", p)
		}
	}
	if got := try[i+1:]; !slices.Equal(got, systemLibraries) {
		t.Errorf("after the user cache: %v, want the system path %v", got, systemLibraries)
	}
	msg := (&LibraryNotFoundError{Tried: tried}).Error()
	if !strings.Contains(msg, "sample runtime install") {
		t.Errorf("the error does not say how to install into the cache: %s", msg)
	}
}
