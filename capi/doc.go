// Command capi is the C API of the sampler, built with
//
//	go build -buildmode=c-shared -o libonnxrl_sampler.so ./capi
//
// (the top-level CMakeLists.txt does this, with the linker version script exports.map that
// exports only the onnxrl_* functions). The contract is the hand-written header
// include/onnxrl/sampler.h: opaque handles, caller-owned buffers, a status from every call and
// a message per thread from onnxrl_last_error.
//
// # Layout
//
// The files without cgo hold the library's logic and are tested in Go: status.go (errors to
// status codes), handles.go (the handle table), options.go (the options JSON), policy.go
// (batch inference, over server.PolicyActor), env.go (the episode API over
// externalenv.ExternalEnv, an envrunner.Runner and an output.Writer: ExternalEnv finds each
// episode by the id bytes C passes, and ends the running ones at close with TruncateAll; the
// C API keeps no table of its own). exports.go holds the
// exported functions: each converts its C arguments, calls into those, recovers any panic
// into ONNXRL_ERR_INTERNAL, and sets the thread's message. errors.c holds what needs no Go:
// the thread's last error, onnxrl_abi_version and onnxrl_status_name. The sampler
// (onnxrl_sampler_*) is sampler.go (the runners of envrunner/runspec, and the column views in C
// memory pointing at the batch's arrays, pinned by pinset.go), sampler_source.go (one runner on
// the calling thread, or several on goroutines), sampler_arrow.go (the Arrow C Data Interface)
// and sampler_exports.go.
package main

func main() {} // required by -buildmode=c-shared; never run
