package main

import (
	"flag"

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
	fs.StringVar(&o.compression, "compression", "snappy", "Parquet compression: snappy, zstd or none")
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

// sampleMetadata is the Parquet metadata of samples of this policy (nil for random).
func sampleMetadata(envName, envConfig string, seed uint64, explore bool, obs, act spaces.Space, model string, p *models.Policy) map[string]string {
	src := output.Source{Env: envName, EnvConfig: envConfig, Seed: seed, Explore: explore,
		ObsSpace: obs, ActSpace: act, Model: model}
	if p != nil {
		src.PolicySpec = &p.Spec
		if p.Model != nil {
			src.ModelBytes = p.Model.Bytes()
		}
	}
	return src.Metadata()
}
