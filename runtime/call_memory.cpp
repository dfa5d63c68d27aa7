#include "runtime/call_memory.h"
#include "runtime/cuda_driver.h"
#include <HalideRuntime.h>
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace blockfuse {
namespace {

struct Count {
    std::mutex m;
    bool running = false;
    std::unordered_map<uintptr_t, size_t> live;  // the call's allocations not yet freed
    std::unordered_set<const void *> arguments;  // the buffers its kernels were passed
    uint64_t live_bytes = 0;
    CallMemory seen;
};
Count &count() {
    static Count c;
    return c;
}

halide_malloc_t previous_malloc = nullptr;
halide_free_t previous_free = nullptr;
void *counted_malloc(void *user_context, size_t bytes) {
    void *p = previous_malloc(user_context, bytes);
    if (p) call_memory::allocated(reinterpret_cast<uintptr_t>(p), bytes);
    return p;
}
void counted_free(void *user_context, void *p) {
    if (p) call_memory::freed(reinterpret_cast<uintptr_t>(p));
    previous_free(user_context, p);
}

// Starts and ends a count; the hooks are installed for the count only. Halide's runtime is called with the count's
// lock released: emptying its cache frees through counted_mem_free, which takes the lock.
struct Counting {
    Device device;
    explicit Counting(Device d) : device(d) {
        {
            Count &c = count();
            std::lock_guard<std::mutex> lock(c.m);
            if (c.running) throw std::logic_error("measure_call_memory: a count is already running");
            c.running = true;
            c.live.clear();
            c.arguments.clear();
            c.live_bytes = 0;
            c.seen = {};
        }
        if (device == Device::cuda) {
            halide_reuse_device_allocations(nullptr, false);  // empties the cache: every buffer a cuMemAlloc now
        } else {
            previous_malloc = halide_set_custom_malloc(&counted_malloc);
            previous_free = halide_set_custom_free(&counted_free);
        }
    }
    ~Counting() {
        if (device == Device::cuda) {
            halide_reuse_device_allocations(nullptr, true);
        } else {
            halide_set_custom_malloc(previous_malloc);
            halide_set_custom_free(previous_free);
        }
        Count &c = count();
        std::lock_guard<std::mutex> lock(c.m);
        c.running = false;
        c.live.clear();
    }
};

}  // namespace

namespace call_memory {
void allocated(uintptr_t address, size_t bytes) {
    Count &c = count();
    std::lock_guard<std::mutex> lock(c.m);
    if (!c.running) return;
    c.live[address] = bytes;
    c.live_bytes += bytes;
    c.seen.peak_bytes = std::max(c.seen.peak_bytes, c.live_bytes);
    c.seen.total_bytes += bytes;
    ++c.seen.allocations;
}
void freed(uintptr_t address) {
    Count &c = count();
    std::lock_guard<std::mutex> lock(c.m);
    if (!c.running) return;
    auto it = c.live.find(address);
    if (it == c.live.end()) return;  // allocated before the count (Halide's cache is empty then, so not its own)
    c.live_bytes -= it->second;
    c.live.erase(it);
}
void arguments(const halide_filter_metadata_t *metadata, void **args) {
    Count &c = count();
    std::lock_guard<std::mutex> lock(c.m);
    if (!c.running || !metadata) return;
    for (int i = 0; i < metadata->num_arguments; ++i) {
        const int kind = metadata->arguments[i].kind;
        if (kind != halide_argument_kind_input_buffer && kind != halide_argument_kind_output_buffer) continue;
        const auto *b = static_cast<const halide_buffer_t *>(args[i]);
        if (!b || !c.arguments.insert(b->host ? static_cast<const void *>(b->host) : b).second) continue;
        uint64_t span = 1;  // the elements from the lowest to the highest address the buffer holds (none if empty)
        for (int d = 0; d < b->dimensions && span; ++d)
            span =
                b->dim[d].extent > 0 ? span + uint64_t(b->dim[d].extent - 1) * uint64_t(std::abs(b->dim[d].stride)) : 0;
        c.seen.argument_bytes += span * b->type.bytes();
    }
}
}  // namespace call_memory

CallMemory measure_call_memory(Device device, const std::function<void()> &call) {
    if (device == Device::opencl)
        throw std::invalid_argument("measure_call_memory: OpenCL's allocations are not counted");
    Counting counting(device);
    call();
    if (device == Device::cuda) cuda::synchronize();
    Count &c = count();
    std::lock_guard<std::mutex> lock(c.m);
    return c.seen;
}

}  // namespace blockfuse
