// The CUDA driver API, loaded with dlopen: binaries need no libcuda at link time, run the
// CPU path on machines without a driver, and share the primary context with Halide's
// CUDA runtime (so our events and Halide's launches are in one context and stream).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace blockfuse::cuda {

struct DeviceInfo {
    bool available = false;
    std::string reason;  // why not available, or how it was found
    std::string name;
    int driver_version = 0;
    int sm_count = 0, cc_major = 0, cc_minor = 0;
    int max_threads_per_block = 0;
    int max_shared_per_block = 0;        // bytes, default limit
    int max_shared_per_block_optin = 0;  // bytes, opt-in limit
    int max_registers_per_block = 0;
    int sm_clock_khz = 0, mem_clock_khz = 0, bus_width_bits = 0, l2_bytes = 0;
};

// Probes once: libcuda.so.1 present, cuInit ok, at least one device. Never throws.
const DeviceInfo &device();

// What a result must record of the GPU's state beside the device attributes: the driver's version
// (the driver API gives only the CUDA version it supports) and the clocks at the moment of the call,
// from NVML (libnvidia-ml.so.1, loaded with dlopen; it ships with the driver). device 0 of the driver
// API is matched to NVML's device by PCI bus id. Never throws: `available` false and `reason` say why.
struct GpuState {
    bool available = false;
    std::string reason;
    std::string driver_version;                    // e.g. "580.159.04"
    unsigned sm_clock_mhz = 0, mem_clock_mhz = 0;  // now
    unsigned sm_clock_max_mhz = 0;                 // the board's maximum
};
GpuState gpu_state();

// Everything below requires device().available; failures throw std::runtime_error naming
// the CUDA call and its error string.
void make_current();  // primary context of device 0 current on this thread
void synchronize();
uintptr_t mem_alloc(size_t bytes);
void mem_free(uintptr_t p);
void memset_d8(uintptr_t p, unsigned char v, size_t bytes);
void memcpy_dtod(uintptr_t dst, uintptr_t src, size_t bytes);

// Event pair timing on the default stream (the one Halide launches on).
struct EventPair {
    void *start = nullptr, *stop = nullptr;
    EventPair();
    ~EventPair();
    EventPair(const EventPair &) = delete;
    EventPair &operator=(const EventPair &) = delete;
    void record_start();
    void record_stop();
    double elapsed_ms();  // synchronizes on stop
};

// Loads PTX and launches one kernel (used by the ceiling microbenchmarks).
struct Module {
    void *mod = nullptr;
    explicit Module(const char *ptx);
    ~Module();
    void launch(const char *kernel, unsigned grid, unsigned block, void **args);
};

// Halide's modules are loaded through halide_cuda_get_symbol's cuModuleLoadData[Ex] (below), which
// rewrites a module calling the tensor-core externs (runtime/mma_ptx.h) and raises its JIT register
// cap to mma_ptx::register_cap. A rewrite that fails loads nothing (CUDA_ERROR_INVALID_PTX to Halide);
// its message, naming the kernel, is what last_halide_error gives next (runtime/errors.h; this thread).

// Installs the Halide CUDA context and stream hooks so Halide uses the primary context (and the
// stream of the calling thread's CallScope, if any).
void install_halide_hooks();

// For a caller that owns the device work (PyTorch through the C API, runtime/blockfuse_c.h): while a
// CallScope lives, Halide's CUDA launches on this thread use the primary context of `device_ordinal`
// (the one the CUDA runtime, so PyTorch, uses on that device: no second context) and `stream` (a
// CUstream; null: the legacy default stream). Without one: device 0's primary context, stream 0.
// Throws std::runtime_error if the device does not exist.
class CallScope {
public:
    CallScope(int device_ordinal, void *stream);
    ~CallScope();
    CallScope(const CallScope &) = delete;
    CallScope &operator=(const CallScope &) = delete;

private:
    void *prev_ctx_, *prev_stream_;
};

// A call's own device allocations (a layer-by-layer block's hidden activations, a split-K partial sum) served from
// the caller's memory, e.g. a PyTorch tensor from its caching allocator: while a WorkspaceScope lives, Halide's
// cuMemAlloc on this thread takes the next kWorkspaceAlign-aligned piece of [base, base + bytes), its cuMemFree of
// those pieces does nothing, and Halide's allocation cache is bypassed on this thread (halide_can_reuse_device_
// allocations), so the call neither allocates nor frees device memory: what stream capture (CUDA graphs) requires,
// and the memory stays the caller's. A call whose allocations add up to T bytes in n pieces fits in
// T + n * kWorkspaceAlign. An allocation that does not fit fails (out of memory) and exhausted() says so.
constexpr uint64_t kWorkspaceAlign = 256;
class WorkspaceScope {
public:
    WorkspaceScope(uintptr_t base, uint64_t bytes);
    ~WorkspaceScope();
    WorkspaceScope(const WorkspaceScope &) = delete;
    WorkspaceScope &operator=(const WorkspaceScope &) = delete;
    uint64_t used() const { return used_; }
    const std::string &exhausted() const { return exhausted_; }  // why an allocation did not fit ("" if none)

    // The allocation hooks' side, on the calling thread's innermost scope: whether there is one, a piece of it
    // (false: none, or it does not fit) and whether an address is in it.
    static bool active();
    static bool allocate(size_t bytes, uintptr_t *p);
    static bool owns(uintptr_t p);

private:
    uintptr_t base_;
    uint64_t bytes_, used_ = 0;
    std::string exhausted_;
    WorkspaceScope *prev_;
};

// Halide 21's CUDA runtime reuses device allocations by default: a freed buffer goes on a free
// list (up to ~32 entries) instead of back to the driver. This hands that list back (cuMemFree)
// and keeps reuse on. Call it once the Halide buffers are gone, before exit: otherwise
// compute-sanitizer's leak check reports the cached entries as leaks. Safe without a device.
void release_halide_allocation_cache();

}  // namespace blockfuse::cuda
