// Package inference runs ONNX models through ONNX Runtime for the sampler.
//
// # The runtime library
//
// Init loads the ONNX Runtime shared library once per process, looking in this order at:
//
//  1. the file named by ONNXRUNTIME_SHARED_LIBRARY_PATH (only there, when it is set);
//  2. the directories given to AlsoLookIn (the C API's library adds its own, so that a runtime
//     installed beside it is found);
//  3. the project's own install, third_party/onnxruntime/lib/ (made by `make onnxruntime`),
//     searched from the working directory and from the executable upwards;
//  4. the user's cache, UserLibraryDir ($XDG_CACHE_HOME/onnxrl-sampler/onnxruntime-1.24.1/lib,
//     by default under ~/.cache), where `sample runtime install` puts the pinned runtime for
//     programs outside a checkout;
//  5. the system's library path (libonnxruntime.so.1).
//
// When nothing loads, the error (a *LibraryNotFoundError) lists every place tried. Version and
// LibraryPath report what was loaded. Every function that needs the runtime calls Init.
//
// # Models
//
// LoadFile and LoadBytes read a model's inputs and outputs (element types, shapes with their
// dynamic dimensions and symbolic names) and its metadata straight from the ONNX protobuf,
// without the runtime; data that is not an ONNX model is an error wrapping ErrNotONNX.
//
// # Sessions
//
// A Session runs one model at any batch size from 1 to its capacity. Each input and output
// has one buffer, allocated at construction, and each batch size in use gets an I/O binding of
// tensors over those buffers the first time it is used, so in steady state
//
//	sess.SetBatch(n)  // point every Tensor's view at n rows
//	...write inputs through sess.Inputs()[i].Float32() (or Int64, Bool, ...)
//	sess.Run()        // one runtime call, no Go allocation
//	...read outputs through sess.Outputs()[i].Float32()
//
// allocates nothing. Each tensor knows its batch axis: 0 for ordinary inputs, 1 for PyTorch RNN
// states laid out [layers, batch, hidden] (see Tensor for the layout). Output batch axes are
// found by running the model at batch 1 and 2 when the session is made.
//
// # Goroutines
//
// Init, LoadFile, LoadBytes and Model values are safe for concurrent use. A Session and its
// Tensors are owned by one goroutine. To use N cores, give each of N worker goroutines its own
// Session made from the same Model (with Options.IntraOpThreads = 1, so the workers do not
// compete for the runtime's thread pool); sessions share nothing but the process-wide runtime.
//
// # Execution providers
//
// Options.Device chooses "cpu" (the default), "cuda[:id]" or "tensorrt[:id]". The library that
// `make onnxruntime` installs is the CPU build; asking it for a GPU provider returns a
// *ProviderError that names the library in use and how to get a GPU build.
//
// "native" is the project's own execution provider (libonnxrl_ep.so, built by `make native`
// from ep/, loaded into the runtime as a plugin): its host backend runs the operators policies
// use (dense layers with fused bias and activation, elementwise ops, softmax, the shape
// operators, LSTM, GRU) and leaves the rest to the CPU provider. The library is registered on
// first use (found through ONNXRL_EP_LIBRARY, the AlsoLookIn directories, the project's
// build/lib, LD_LIBRARY_PATH) or explicitly with RegisterNative; Options.ProviderOptions go to
// it (backend, device_id). With Options.RecordAssignment, Session.Assignment returns the
// runtime's record of which provider runs which node.
package inference
