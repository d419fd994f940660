// Host memory page-locked for the CUDA backend by its owner (cuMemHostRegister): an executor
// copies an input or output that lies in such a range straight to or from the GPU, one
// asynchronous DMA, with no staging copy through its own pinned buffers. The inference package
// pins its sessions' tensors this way; any host program may, through the two exported
// functions below (ep/exports.map), for buffers it keeps for many runs.
#pragma once

#include <cstddef>

namespace onnxrl_ep {

// IsPinned reports whether [p, p + bytes) lies within one range pinned by OnnxrlEpPinHost.
bool IsPinned(const void* p, size_t bytes);

}  // namespace onnxrl_ep

extern "C" {

// OnnxrlEpPinHost page-locks [p, p + bytes) for device device_id's executors (the driver's
// cuMemHostRegister, portable across contexts): 0 on success; 1 when pinning is turned off
// ($ONNXRL_CUDA_PIN=0, for measuring what it buys); -1 on failure (no driver or GPU, a range
// overlapping one already pinned, the driver's refusal), with a message in msg (msg_len bytes,
// NUL-terminated). The range stays valid memory of its owner, who unpins it before freeing it.
__attribute__((visibility("default"))) int OnnxrlEpPinHost(int device_id, void* p, size_t bytes, char* msg,
                                                           size_t msg_len) noexcept;

// OnnxrlEpUnpinHost unpins a range pinned by OnnxrlEpPinHost (p its start): 0 on success, -1
// with a message when p is not the start of a pinned range or the driver refuses.
__attribute__((visibility("default"))) int OnnxrlEpUnpinHost(void* p, char* msg, size_t msg_len) noexcept;
}
