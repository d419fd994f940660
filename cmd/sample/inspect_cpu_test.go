package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInspectCPUAssignment: `sample inspect --device cpu` prints the runtime's assignment
// record (every node on the CPU provider). It segfaulted in onnxrl_capi_assignment once the
// native provider was built (issue 37): the runtime's C API had not been bound.
func TestInspectCPUAssignment(t *testing.T) {
	needRuntime(t)
	code, out, errs := runCLI("inspect", "--device", "cpu", "cartpole_mlp")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "execution providers on device cpu")
	assert.Contains(t, out, "CPUExecutionProvider")
	assert.NotContains(t, out, "OnnxrlNative")
}
