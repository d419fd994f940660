package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeviceNotAvailable: a device this machine cannot give is ONNXRL_ERR_DEVICE from every
// open, not ONNXRL_ERR_MODEL. GPU 99 exists nowhere; the CPU runtime of `make onnxruntime`
// has no CUDA provider (a GPU build of it skips that case).
func TestDeviceNotAvailable(t *testing.T) {
	needRuntime(t)
	for _, dev := range []string{"native:cuda:99", "cuda:0"} {
		t.Run(dev, func(t *testing.T) {
			opts := []byte(`{"device": "` + dev + `"}`)
			p, err := openPolicy("cartpole_mlp", opts)
			if err == nil && dev == "cuda:0" {
				p.close()
				t.Skip("the runtime has the CUDA provider")
			}
			require.Error(t, err)
			assert.Equal(t, statusDevice, statusOf(err), "policy: %v", err)
			_, err = openEnv("cartpole_mlp", opts)
			assert.Equal(t, statusDevice, statusOf(err), "env: %v", err)
			_, err = openSampler([]byte(`{"env": "CartPole-v1", "device": "` + dev + `"}`))
			assert.Equal(t, statusDevice, statusOf(err), "sampler: %v", err)
		})
	}
	_, err := openPolicy("cartpole_mlp", []byte(`{"device": "native:gpu"}`))
	assert.Equal(t, statusInvalidArgument, statusOf(err), "a device that does not parse is the caller's mistake")
}
