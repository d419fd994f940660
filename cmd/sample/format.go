package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"runtime/debug"
	"strconv"

	"github.com/onnxrl/sampler/envrunner/output"
	"github.com/onnxrl/sampler/models"
	"github.com/onnxrl/sampler/spaces"
)

// outputFlags are the flags that choose how sample files are written (run, serve, convert).
type outputFlags struct {
	format, compression string
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.format, "format", "auto", "output format: parquet, json (JSON lines), or auto (from the extension: .parquet is Parquet, anything else JSON lines)")
	fs.StringVar(&o.compression, "compression", "zstd", "Parquet compression: zstd, snappy or none")
}

// options returns the writer options for path.
func (o *outputFlags) options(maxSize int64, meta map[string]string) (output.Options, error) {
	f, err := output.ParseFormat(o.format)
	if err != nil {
		return output.Options{}, usagef("--format: %v", err)
	}
	c, err := output.ParseCompression(o.compression)
	if err != nil {
		return output.Options{}, usagef("--compression: %v", err)
	}
	return output.Options{MaxFileSize: maxSize, Format: f, Compression: c, Metadata: meta}, nil
}

// samplerVersion is the module version of this binary ("(devel)" in a plain build).
func samplerVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// Metadata keys of the Parquet files (see README "Training data").
const (
	metaObsSpace  = "onnxrl.observation_space"
	metaActSpace  = "onnxrl.action_space"
	metaSpec      = "onnxrl.policy_spec"
	metaModel     = "onnxrl.model"
	metaModelSHA  = "onnxrl.model_sha256"
	metaVersion   = "onnxrl.sampler_version"
	metaSeed      = "onnxrl.seed"
	metaEnv       = "onnxrl.env"
	metaEnvConfig = "onnxrl.env_config"
	metaExplore   = "onnxrl.explore"
)

// sampleMetadata is what a learner needs to trust a file: the spaces (spaces JSON), the
// policy's spec and model sha256 (none for a random policy), the sampler's version, the seed,
// the env and its config.
func sampleMetadata(envName, envConfig string, seed uint64, explore bool, obs, act spaces.Space, model string, p *models.Policy) map[string]string {
	m := map[string]string{
		metaVersion:   samplerVersion(),
		metaSeed:      strconv.FormatUint(seed, 10),
		metaEnv:       envName,
		metaEnvConfig: envConfig,
		metaModel:     model,
		metaExplore:   strconv.FormatBool(explore),
	}
	for key, s := range map[string]spaces.Space{metaObsSpace: obs, metaActSpace: act} {
		if s == nil {
			continue
		}
		if b, err := json.Marshal(s); err == nil {
			m[key] = string(b)
		}
	}
	if p != nil {
		if b, err := json.Marshal(&p.Spec); err == nil {
			m[metaSpec] = string(b)
		}
		if p.Model != nil {
			sum := sha256.Sum256(p.Model.Bytes())
			m[metaModelSHA] = hex.EncodeToString(sum[:])
		}
	}
	return m
}
