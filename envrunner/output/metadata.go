package output

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"runtime/debug"
	"strconv"

	"github.com/onnxrl/sampler/spaces"
)

// Keys of the metadata that Source writes into Parquet files.
const (
	MetaObsSpace       = "onnxrl.observation_space" // spaces JSON
	MetaActSpace       = "onnxrl.action_space"      // spaces JSON
	MetaPolicySpec     = "onnxrl.policy_spec"       // the policy spec JSON (models.Spec)
	MetaModel          = "onnxrl.model"             // the model's path or bundled name
	MetaModelSHA256    = "onnxrl.model_sha256"      // hex sha256 of the model file
	MetaSamplerVersion = "onnxrl.sampler_version"
	MetaSeed           = "onnxrl.seed"
	MetaEnv            = "onnxrl.env"
	MetaEnvConfig      = "onnxrl.env_config"
	MetaExplore        = "onnxrl.explore"
)

// Source describes where samples come from: what a learner needs to trust a file.
type Source struct {
	Env, EnvConfig string
	Seed           uint64
	Explore        bool
	ObsSpace       spaces.Space
	ActSpace       spaces.Space
	Model          string // "random" for a random policy
	PolicySpec     any    // marshalled as JSON when not nil
	ModelBytes     []byte // hashed when not nil
}

// Metadata returns the key-value metadata of s (the Meta* keys; empty values left out).
func (s Source) Metadata() map[string]string {
	m := map[string]string{
		MetaSamplerVersion: SamplerVersion(),
		MetaSeed:           strconv.FormatUint(s.Seed, 10),
		MetaExplore:        strconv.FormatBool(s.Explore),
	}
	for k, v := range map[string]string{MetaEnv: s.Env, MetaEnvConfig: s.EnvConfig, MetaModel: s.Model} {
		if v != "" {
			m[k] = v
		}
	}
	for k, v := range map[string]any{MetaObsSpace: s.ObsSpace, MetaActSpace: s.ActSpace, MetaPolicySpec: s.PolicySpec} {
		if v == nil {
			continue
		}
		if b, err := json.Marshal(v); err == nil {
			m[k] = string(b)
		}
	}
	if s.ModelBytes != nil {
		sum := sha256.Sum256(s.ModelBytes)
		m[MetaModelSHA256] = hex.EncodeToString(sum[:])
	}
	return m
}

// SamplerVersion is the module version of the running binary ("(devel)" in a plain build).
func SamplerVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
