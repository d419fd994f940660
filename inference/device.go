package inference

import (
	"errors"
	"strings"
)

// ErrDeviceUnavailable is wrapped by the error of a session whose device this machine or the
// loaded runtime cannot give: no NVIDIA driver or GPU, a device id beyond the GPUs there are,
// no NVRTC for the native provider's CUDA backend, an ONNX Runtime build without the CUDA or
// TensorRT provider, or no native provider library (libonnxrl_ep.so). A model the device
// cannot run is a model error, not this one.
var ErrDeviceUnavailable = errors.New("inference: device not available")

// DeviceError reports a session's device that is not available here. Its message is the
// cause's, which names what is missing; errors.Is(err, ErrDeviceUnavailable) holds.
type DeviceError struct {
	Device string // as ParseDevice writes it: "cuda:0", "native", "native:cuda:1", ...
	Err    error
}

func (e *DeviceError) Error() string { return e.Err.Error() }

// Unwrap returns the cause and ErrDeviceUnavailable.
func (e *DeviceError) Unwrap() []error { return []error{e.Err, ErrDeviceUnavailable} }

// nativeDeviceOpenFailed is how the native provider's CreateEp begins the message of a CUDA
// device it could not open (ep/src/provider.cc: the driver, the device id, NVRTC). The runtime
// passes the provider's message on as text only, so this prefix is the coupling; the tests
// that run native:cuda without a driver pin it.
const nativeDeviceOpenFailed = NativeProvider + ": backend cuda, device_id "

// deviceError returns err as a *DeviceError when it says that dev is not available here,
// else err unchanged.
func deviceError(dev Device, err error) error {
	var pe *ProviderError
	switch {
	case err == nil, errors.Is(err, ErrDeviceUnavailable):
		return err
	case errors.As(err, &pe), errors.Is(err, ErrNativeNotFound),
		dev.Provider == "native" && strings.Contains(err.Error(), nativeDeviceOpenFailed):
		return &DeviceError{Device: dev.String(), Err: err}
	}
	return err
}
