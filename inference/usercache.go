package inference

import (
	"fmt"
	"os"
	"path/filepath"
)

// UserLibraryDir is the folder in the user's cache where `sample runtime install` puts the
// pinned runtime: $XDG_CACHE_HOME/onnxrl-sampler/onnxruntime-<PinnedVersion>/lib (by default
// under ~/.cache). Programs built outside the project (go install, another module using the
// library) find the runtime there.
func UserLibraryDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("inference: no user cache directory: %w", err)
	}
	return filepath.Join(cache, "onnxrl-sampler", "onnxruntime-"+PinnedVersion, "lib"), nil
}

// userLibrary is the runtime's path in UserLibraryDir, or "" when there is no cache directory.
func userLibrary() string {
	dir, err := UserLibraryDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "libonnxruntime.so.1")
}
