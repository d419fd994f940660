package models

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/onnxrl/sampler/inference"
)

// The bundled models and their sidecar specs, compiled into the binary so the CLI works from
// any directory.
//
//go:embed *.onnx *.policy.json
var bundled embed.FS

// BundledNames lists the bundled models by name (the file name without .onnx), sorted.
func BundledNames() []string {
	entries, _ := fs.Glob(bundled, "*.onnx")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e, ".onnx"))
	}
	sort.Strings(names)
	return names
}

// ErrUnknownBundled is wrapped by Bundled for a name that is not bundled.
var ErrUnknownBundled = errors.New("models: no such bundled model")

// Bundled loads the bundled model name (see BundledNames) with its spec.
func Bundled(name string) (*Policy, error) {
	name = strings.TrimSuffix(name, ".onnx")
	data, err := bundled.ReadFile(name + ".onnx")
	if err != nil {
		return nil, fmt.Errorf("%w %q (bundled: %s)", ErrUnknownBundled, name, strings.Join(BundledNames(), ", "))
	}
	m, err := inference.LoadBytes("bundled:"+name, data)
	if err != nil {
		return nil, err
	}
	var spec *Spec
	source := "none"
	if sc, err := bundled.ReadFile(name + ".policy.json"); err == nil {
		source = "bundled:" + name + ".policy.json"
		if spec, err = ParseSpec(source, sc); err != nil {
			return nil, err
		}
	}
	return resolveWithMetadata(m, spec, source)
}

// ErrModelNotFound is wrapped by Open for a name that is neither a file nor a bundled model.
var ErrModelNotFound = errors.New("models: no such model")

// Open loads a policy by path, or by bundled name (see BundledNames) when no file of that
// name exists and the name has no path separator. A name that is neither is an error wrapping
// ErrModelNotFound that lists the bundled models.
func Open(name string) (*Policy, error) { return OpenLimit(name, inference.DefaultMaxModelBytes) }

// OpenLimit is Open for a model file of at most maxModelBytes (<= 0: the default, 1 GiB);
// see LoadLimit.
func OpenLimit(name string, maxModelBytes int64) (*Policy, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: no model given", ErrModelNotFound)
	}
	_, statErr := os.Stat(name)
	if statErr != nil && errors.Is(statErr, fs.ErrNotExist) && !strings.ContainsRune(name, os.PathSeparator) {
		p, err := Bundled(name)
		if errors.Is(err, ErrUnknownBundled) {
			return nil, fmt.Errorf("%w: %q: no such file, and no bundled model of that name (bundled: %s)",
				ErrModelNotFound, name, strings.Join(BundledNames(), ", "))
		}
		return p, err
	}
	return LoadLimit(name, maxModelBytes)
}

// SidecarPath returns the sidecar spec path for a model path: x.onnx -> x.policy.json.
func SidecarPath(modelPath string) string {
	return strings.TrimSuffix(modelPath, path.Ext(modelPath)) + ".policy.json"
}

// Load loads the ONNX model at modelPath and resolves its spec: the sidecar
// <model>.policy.json if it exists, else the "onnxrl.policy" metadata, else auto-detection
// (see Resolve).
func Load(modelPath string) (*Policy, error) {
	return LoadLimit(modelPath, inference.DefaultMaxModelBytes)
}

// LoadLimit is Load for a model file of at most maxModelBytes (<= 0: the default, 1 GiB). The
// model must be a regular file under the limit, checked before anything is read
// (inference.LoadFileLimit); so must its sidecar, of at most MaxSpecBytes.
func LoadLimit(modelPath string, maxModelBytes int64) (*Policy, error) {
	m, err := inference.LoadFileLimit(modelPath, maxModelBytes)
	if err != nil {
		return nil, err
	}
	return LoadModel(m, SidecarPath(modelPath))
}

// MaxSpecBytes bounds a sidecar policy spec file: a spec is a few kilobytes of JSON.
const MaxSpecBytes = 16 << 20

// LoadModel resolves the spec of an already loaded model, reading the sidecar at sidecarPath
// when it exists ("" for none).
func LoadModel(m *inference.Model, sidecarPath string) (*Policy, error) {
	var spec *Spec
	source := "none"
	if sidecarPath != "" {
		data, err := inference.ReadFileLimit(sidecarPath, MaxSpecBytes)
		switch {
		case err == nil:
			source = sidecarPath
			if spec, err = ParseSpec(source, data); err != nil {
				return nil, err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return nil, &SpecError{Source: sidecarPath, Err: err}
		}
	}
	return resolveWithMetadata(m, spec, source)
}

// resolveWithMetadata falls back to the metadata spec when there is no sidecar.
func resolveWithMetadata(m *inference.Model, spec *Spec, source string) (*Policy, error) {
	if spec == nil {
		if js, ok := m.Metadata[MetadataKey]; ok {
			source = "metadata " + MetadataKey
			var err error
			if spec, err = ParseSpec(source, []byte(js)); err != nil {
				return nil, err
			}
		}
	}
	return Resolve(m, spec, source)
}
