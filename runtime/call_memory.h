// The memory a kernel call allocates beyond its arguments: the buffers Halide's runtime allocates during the call
// (a layer-by-layer block's hidden activations, split K's f32 workspace, a CPU kernel's heap tiles), counted as
// they are allocated and freed. A fused block keeps its hidden activations in registers and shared memory, so its
// workspace is what it allocates besides (none on CUDA): the memory half of block fusion's claim, hidden
// activations that never reach DRAM. The harness reports it beside every time.
#pragma once
#include "runtime/kernel_registry.h"
#include <HalideRuntime.h>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace blockfuse {

struct CallMemory {
    uint64_t peak_bytes = 0;   // the most bytes of the call's own allocations live at once: its workspace
    uint64_t total_bytes = 0;  // every allocation of the call added up
    int allocations = 0;
    uint64_t argument_bytes = 0;  // the buffers its kernels were passed, each once (inputs, weights, outputs)
};

// Runs `call` once with Halide's allocations counted (synchronized before the count ends). CUDA: Halide's
// device-allocation cache is emptied and turned off for the call, so each of its buffers is one cuMemAlloc (the
// cache is back on afterwards); its cuMemAlloc and cuMemFree come through halide_cuda_get_symbol
// (runtime/cuda_driver.cpp). CPU: through Halide's custom malloc and free. One count at a time per process
// (a second one in flight is a std::logic_error).
CallMemory measure_call_memory(Device device, const std::function<void()> &call);

// The allocation hooks' side (runtime/cuda_driver.cpp and the CPU hooks): no-ops unless a count is running.
namespace call_memory {
void allocated(uintptr_t address, size_t bytes);
void freed(uintptr_t address);
// A pipeline's buffer arguments (LoadedKernel::call, runtime/kernel_cache.h), each buffer counted once per count.
void arguments(const halide_filter_metadata_t *metadata, void **args);
}  // namespace call_memory

}  // namespace blockfuse
