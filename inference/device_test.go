package inference

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceError(t *testing.T) {
	native := Device{Provider: "native", Backend: "host"}
	nativeCUDA := Device{Provider: "native", Backend: "cuda", ID: 1}
	cuda := Device{Provider: "cuda"}
	openFailed := errors.New("the runtime rejected the model: Error creating execution provider: [ONNXRuntimeError] : 2 : " +
		"INVALID_ARGUMENT : OnnxrlNative: backend cuda, device_id 1: no CUDA GPU found")
	for _, c := range []struct {
		name   string
		dev    Device
		err    error
		device bool
	}{
		{"runtime without the provider", cuda, &ProviderError{Provider: "cuda:0", Err: errors.New("not in this build")}, true},
		{"no provider library", native, fmt.Errorf("%w; tried: build/lib/libonnxrl_ep.so (not there)", ErrNativeNotFound), true},
		{"CUDA device not opened", nativeCUDA, &ModelError{Path: "m.onnx", Err: openFailed}, true},
		{"the provider's own message on another device", Device{Provider: "cpu"}, openFailed, false},
		{"a model the provider refuses", nativeCUDA, &ModelError{Path: "m.onnx", Err: errors.New("OnnxrlNative: Compile: unsupported op")}, false},
		{"bad model", native, &ModelError{Path: "m.onnx", Err: ErrNotONNX}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := deviceError(c.dev, c.err)
			assert.Equal(t, c.device, errors.Is(got, ErrDeviceUnavailable))
			assert.Equal(t, c.err.Error(), got.Error(), "the message is the cause's")
			assert.ErrorIs(t, got, c.err, "the cause stays reachable")
			var de *DeviceError
			if c.device {
				require.ErrorAs(t, got, &de)
				assert.Equal(t, c.dev.String(), de.Device)
				assert.Same(t, got, deviceError(c.dev, got), "wrapped once")
			}
		})
	}
	assert.NoError(t, deviceError(cuda, nil))
}

// TestDeviceUnavailableSession: sessions on a device the machine or the runtime cannot give
// fail with ErrDeviceUnavailable; the CPU runtime of `make onnxruntime` has no CUDA provider.
func TestDeviceUnavailableSession(t *testing.T) {
	needRuntime(t)
	m, err := LoadBytes("fixed", fixedModel())
	require.NoError(t, err)
	s, err := NewSession(m, Options{Device: "cuda:0"})
	if err == nil {
		s.Close()
		t.Skipf("the runtime at %s has the CUDA provider", LibraryPath())
	}
	assert.ErrorIs(t, err, ErrDeviceUnavailable)
	var pe *ProviderError
	assert.ErrorAs(t, err, &pe, "the cause stays reachable")

	cpu, err := NewSession(m, Options{Device: "cpu"})
	require.NoError(t, err)
	require.NoError(t, cpu.Close())
	_, err = LoadBytes("junk", []byte("not a model"))
	assert.NotErrorIs(t, err, ErrDeviceUnavailable)
}
