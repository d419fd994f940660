package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteBundled writes the bundled model name (with its sidecar spec, if it has one) into
// dir and returns the model's path, for programs that need the model as a file (another
// sampler benchmarked against this one, for example).
func WriteBundled(dir, name string) (string, error) {
	name = strings.TrimSuffix(name, ".onnx")
	data, err := bundled.ReadFile(name + ".onnx")
	if err != nil {
		return "", fmt.Errorf("%w %q (bundled: %s)", ErrUnknownBundled, name, strings.Join(BundledNames(), ", "))
	}
	path := filepath.Join(dir, name+".onnx")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	if sc, err := bundled.ReadFile(name + ".policy.json"); err == nil {
		if err := os.WriteFile(SidecarPath(path), sc, 0o644); err != nil {
			return "", err
		}
	}
	return path, nil
}
