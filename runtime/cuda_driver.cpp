#include "runtime/cuda_driver.h"
#include "runtime/call_memory.h"
#include "runtime/conv2d.h"
#include "runtime/errors.h"
#include "runtime/mma_ptx.h"
#include "runtime/ptx_local_depot.h"
#include <HalideRuntimeCuda.h>
#include <dlfcn.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace blockfuse::cuda {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUevent = void *;
using CUstream = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUdeviceptr = unsigned long long;

// Attribute ids from cuda.h (stable ABI values).
enum : int {
    ATTR_MAX_THREADS_PER_BLOCK = 1,
    ATTR_MAX_SHARED_PER_BLOCK = 8,
    ATTR_MAX_REGISTERS_PER_BLOCK = 12,
    ATTR_CLOCK_RATE = 13,
    ATTR_SM_COUNT = 16,
    ATTR_MEMORY_CLOCK_RATE = 36,
    ATTR_BUS_WIDTH = 37,
    ATTR_L2_SIZE = 38,
    ATTR_CC_MAJOR = 75,
    ATTR_CC_MINOR = 76,
    ATTR_MAX_SHARED_PER_BLOCK_OPTIN = 97,
    FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

struct Api {
    void *lib = nullptr;
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int *);
    CUresult (*cuDeviceGetCount)(int *);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetName)(char *, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)();
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuModuleLoadData)(CUmodule *, const void *);
    CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **) = nullptr;
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void **, void **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;    // optional (CUDA 9+)
    CUresult (*cuDeviceGetPCIBusId)(char *, int, CUdevice) = nullptr;  // optional: matches NVML's device
    CUcontext ctx = nullptr;
    CUdevice dev = 0;
};

Api &api() {
    static Api a;
    return a;
}

template <typename F>
bool load(void *lib, F *dst, const char *name) {
    *dst = reinterpret_cast<F>(dlsym(lib, name));
    return *dst != nullptr;
}

void check(CUresult r, const char *call) {
    if (r == 0) return;
    const char *s = "unknown error";
    if (api().cuGetErrorString) api().cuGetErrorString(r, &s);
    throw std::runtime_error(std::string("CUDA error in ") + call + ": " + s + " (" + std::to_string(r) + ")");
}

DeviceInfo probe() {
    DeviceInfo info;
    Api &a = api();
    a.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!a.lib) {
        info.reason = "no CUDA driver on this machine (libcuda.so.1 not found)";
        return info;
    }
    bool ok =
        load(a.lib, &a.cuInit, "cuInit") && load(a.lib, &a.cuDriverGetVersion, "cuDriverGetVersion") &&
        load(a.lib, &a.cuDeviceGetCount, "cuDeviceGetCount") && load(a.lib, &a.cuDeviceGet, "cuDeviceGet") &&
        load(a.lib, &a.cuDeviceGetName, "cuDeviceGetName") &&
        load(a.lib, &a.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
        load(a.lib, &a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
        load(a.lib, &a.cuCtxSetCurrent, "cuCtxSetCurrent") && load(a.lib, &a.cuCtxSynchronize, "cuCtxSynchronize") &&
        load(a.lib, &a.cuMemAlloc, "cuMemAlloc_v2") && load(a.lib, &a.cuMemFree, "cuMemFree_v2") &&
        load(a.lib, &a.cuMemsetD8, "cuMemsetD8_v2") && load(a.lib, &a.cuMemcpyDtoD, "cuMemcpyDtoD_v2") &&
        load(a.lib, &a.cuEventCreate, "cuEventCreate") && load(a.lib, &a.cuEventDestroy, "cuEventDestroy_v2") &&
        load(a.lib, &a.cuEventRecord, "cuEventRecord") && load(a.lib, &a.cuEventSynchronize, "cuEventSynchronize") &&
        load(a.lib, &a.cuEventElapsedTime, "cuEventElapsedTime") &&
        load(a.lib, &a.cuModuleLoadData, "cuModuleLoadData") && load(a.lib, &a.cuModuleUnload, "cuModuleUnload") &&
        load(a.lib, &a.cuModuleGetFunction, "cuModuleGetFunction") &&
        load(a.lib, &a.cuLaunchKernel, "cuLaunchKernel") && load(a.lib, &a.cuGetErrorString, "cuGetErrorString");
    if (!ok) {
        info.reason = "libcuda.so.1 found but lacks driver API symbols";
        return info;
    }
    load(a.lib, &a.cuFuncSetAttribute, "cuFuncSetAttribute");
    load(a.lib, &a.cuModuleLoadDataEx, "cuModuleLoadDataEx");
    load(a.lib, &a.cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
    if (int r = a.cuInit(0); r != 0) {
        info.reason = "CUDA driver present but cuInit failed (error " + std::to_string(r) + "): no usable GPU";
        return info;
    }
    int count = 0;
    if (a.cuDeviceGetCount(&count) != 0 || count == 0) {
        info.reason = "CUDA driver present but no CUDA device";
        return info;
    }
    a.cuDeviceGet(&a.dev, 0);
    char name[256] = {0};
    a.cuDeviceGetName(name, sizeof(name), a.dev);
    info.name = name;
    a.cuDriverGetVersion(&info.driver_version);
    auto attr = [&](int id) {
        int v = 0;
        a.cuDeviceGetAttribute(&v, id, a.dev);
        return v;
    };
    info.max_threads_per_block = attr(ATTR_MAX_THREADS_PER_BLOCK);
    info.max_shared_per_block = attr(ATTR_MAX_SHARED_PER_BLOCK);
    info.max_shared_per_block_optin = attr(ATTR_MAX_SHARED_PER_BLOCK_OPTIN);
    info.max_registers_per_block = attr(ATTR_MAX_REGISTERS_PER_BLOCK);
    info.sm_clock_khz = attr(ATTR_CLOCK_RATE);
    info.sm_count = attr(ATTR_SM_COUNT);
    info.mem_clock_khz = attr(ATTR_MEMORY_CLOCK_RATE);
    info.bus_width_bits = attr(ATTR_BUS_WIDTH);
    info.l2_bytes = attr(ATTR_L2_SIZE);
    info.cc_major = attr(ATTR_CC_MAJOR);
    info.cc_minor = attr(ATTR_CC_MINOR);
    if (a.cuDevicePrimaryCtxRetain(&a.ctx, a.dev) != 0) {
        info.reason = "CUDA device found but its primary context could not be retained";
        return info;
    }
    a.cuCtxSetCurrent(a.ctx);
    info.available = true;
    info.reason = "CUDA device 0 found through the driver API";
    return info;
}

// cuLaunchKernel as Halide's CUDA runtime gets it (halide_cuda_get_symbol below): a launch asking
// for more dynamic shared memory than a block gets by default first raises the kernel's limit
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), once per kernel and size. A launch past the device's
// limits (launch_limit_violation, the check the callers run on their estimates before a kernel is called) is refused
// here, before the driver sees it, with a message saying which limit (set_cuda_shim_error): the sizes Halide computes
// at run time are the ones launched.
constexpr CUresult ERROR_INVALID_VALUE = 1;  // CUDA_ERROR_INVALID_VALUE, what the driver answers such a launch
CUresult launch_with_shared_opt_in(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra) {
    Api &a = api();
    LaunchShape shape;
    shape.grid[0] = gx, shape.grid[1] = gy, shape.grid[2] = gz;
    shape.threads = int(bx * by * bz);
    shape.shared_bytes = shared_bytes;
    if (std::string why = launch_limit_violation(shape, launch_limits(Device::cuda)); !why.empty()) {
        set_cuda_shim_error("launch rejected before running: " + why + " (" + device().name + ")");
        return ERROR_INVALID_VALUE;
    }
    if (shared_bytes > unsigned(device().max_shared_per_block) && a.cuFuncSetAttribute) {
        static std::mutex m;
        static std::unordered_map<CUfunction, unsigned> raised;  // kernel -> the limit set
        std::lock_guard<std::mutex> lock(m);
        unsigned &limit = raised[f];
        if (shared_bytes > limit) {
            if (CUresult r = a.cuFuncSetAttribute(f, FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(shared_bytes));
                r != 0)
                return r;
            limit = shared_bytes;
        }
    }
    return a.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra);
}

// The calling thread's CallScope: the context and stream Halide's launches take (null: the defaults).
thread_local CUcontext scope_ctx = nullptr;
thread_local CUstream scope_stream = nullptr;
// The calling thread's innermost WorkspaceScope (null: none).
thread_local WorkspaceScope *scope_workspace = nullptr;
// Module loads as Halide's CUDA runtime gets them: a module calling the tensor-core externs is
// rewritten first (runtime/mma_ptx.h) and JIT-compiled at the cap HL_CUDA_JIT_MAX_REGISTERS sets (Halide passes
// it as CU_JIT_MAX_REGISTERS; blockfuse sets it before every launch to the variant's jit_register_cap()), or,
// where nothing set it (Halide's default of 64), at mma_ptx::kMinRegisters; every other module loads as it came but for
// its local depots' alignment (runtime/ptx_local_depot.h).
constexpr int JIT_MAX_REGISTERS = 0;         // CUjit_option CU_JIT_MAX_REGISTERS
constexpr CUresult ERROR_INVALID_PTX = 218;  // CUDA_ERROR_INVALID_PTX

CUresult load_module(CUmodule *module, const void *image, unsigned n, int *options, void **values) {
    Api &a = api();
    const char *text = static_cast<const char *>(image);
    std::string ptx = text ? text : "";  // a cubin reads as its text up to its first NUL: nothing matches in it
    // Every module: local arrays aligned for the vectors Halide stores into them (runtime/ptx_local_depot.h).
    const bool aligned = ptx::align_local_depots(ptx) > 0;
    if (!mma_ptx::needs_rewrite(ptx)) {
        const void *loaded = aligned ? static_cast<const void *>(ptx.c_str()) : image;
        return n ? a.cuModuleLoadDataEx(module, loaded, n, options, values) : a.cuModuleLoadData(module, loaded);
    }
    try {
        ptx = mma_ptx::rewrite(ptx);
    } catch (const mma_ptx::RewriteError &e) {
        set_cuda_shim_error(e.what());
        return ERROR_INVALID_PTX;
    }
    std::vector<int> opts(options, options + n);
    std::vector<void *> vals(values, values + n);
    bool capped = false;
    const bool set_on_purpose = std::getenv("HL_CUDA_JIT_MAX_REGISTERS") != nullptr;
    for (unsigned i = 0; i < n; ++i)
        if (opts[i] == JIT_MAX_REGISTERS) {
            if (!set_on_purpose)
                vals[i] = reinterpret_cast<void *>(
                    uintptr_t(mma_ptx::register_cap(int(reinterpret_cast<uintptr_t>(vals[i])))));
            capped = true;
        }
    if (!capped) {
        opts.push_back(JIT_MAX_REGISTERS);
        vals.push_back(reinterpret_cast<void *>(uintptr_t(mma_ptx::kMinRegisters)));
    }
    return a.cuModuleLoadDataEx(module, ptx.c_str(), unsigned(opts.size()), opts.data(), vals.data());
}
CUresult module_load_data(CUmodule *module, const void *image) {
    return load_module(module, image, 0, nullptr, nullptr);
}

// Halide's device buffers as its CUDA runtime allocates and frees them: from the calling thread's WorkspaceScope if
// it has one, else the driver's; counted while measure_call_memory runs (runtime/call_memory.h).
constexpr CUresult ERROR_OUT_OF_MEMORY = 2;  // CUDA_ERROR_OUT_OF_MEMORY
CUresult counted_mem_alloc(CUdeviceptr *p, size_t bytes) {
    uintptr_t piece = 0;
    CUresult r = 0;
    if (!WorkspaceScope::active()) r = api().cuMemAlloc(p, bytes);
    else if (WorkspaceScope::allocate(bytes, &piece)) *p = CUdeviceptr(piece);
    else r = ERROR_OUT_OF_MEMORY;  // a full workspace: never the driver's memory instead
    if (r == 0) call_memory::allocated(uintptr_t(*p), bytes);
    return r;
}
CUresult counted_mem_free(CUdeviceptr p) {
    call_memory::freed(uintptr_t(p));
    return WorkspaceScope::owns(uintptr_t(p)) ? 0 : api().cuMemFree(p);
}

int acquire_context(void *, void **ctx, bool) {
    *ctx = scope_ctx ? scope_ctx : api().ctx;
    return *ctx ? 0 : -1;
}
int release_context(void *) { return 0; }
int get_stream(void *, void *, void **stream) {
    *stream = scope_stream;
    return 0;
}

// The primary context of a device, retained once per process (device 0's is the probe's).
CUcontext primary_context(int ordinal) {
    Api &a = api();
    if (ordinal == 0) return a.ctx;
    static std::mutex m;
    static std::unordered_map<int, CUcontext> retained;
    std::lock_guard<std::mutex> lock(m);
    if (auto it = retained.find(ordinal); it != retained.end()) return it->second;
    int count = 0;
    check(a.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (ordinal < 0 || ordinal >= count)
        throw std::runtime_error("CUDA device " + std::to_string(ordinal) + " does not exist (" +
                                 std::to_string(count) + " devices)");
    CUdevice dev = 0;
    check(a.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
    CUcontext ctx = nullptr;
    check(a.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    return retained[ordinal] = ctx;
}

}  // namespace

const DeviceInfo &device() {
    static const DeviceInfo info = probe();
    return info;
}

GpuState gpu_state() {
    GpuState st;
    if (!device().available) {
        st.reason = "no CUDA device: " + device().reason;
        return st;
    }
    // NVML's ABI: opaque device handle, nvmlReturn_t (0 = success), clock type 0 = graphics, 1 = SM, 2 = memory.
    using NvmlDevice = void *;
    static void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        st.reason = "libnvidia-ml.so.1 not found: driver version and current clocks not recorded";
        return st;
    }
    int (*init)() = nullptr;
    int (*driver_version)(char *, unsigned) = nullptr;
    int (*by_bus)(const char *, NvmlDevice *) = nullptr;
    int (*by_index)(unsigned, NvmlDevice *) = nullptr;
    int (*clock)(NvmlDevice, int, unsigned *) = nullptr;
    int (*max_clock)(NvmlDevice, int, unsigned *) = nullptr;
    if (!load(lib, &init, "nvmlInit_v2") || !load(lib, &driver_version, "nvmlSystemGetDriverVersion") ||
        !load(lib, &by_index, "nvmlDeviceGetHandleByIndex_v2") || !load(lib, &clock, "nvmlDeviceGetClockInfo") ||
        !load(lib, &max_clock, "nvmlDeviceGetMaxClockInfo")) {
        st.reason = "libnvidia-ml.so.1 lacks the NVML calls used here";
        return st;
    }
    load(lib, &by_bus, "nvmlDeviceGetHandleByPciBusId_v2");
    if (int r = init(); r != 0) {
        st.reason = "nvmlInit failed (NVML error " + std::to_string(r) + ")";
        return st;
    }
    char version[96] = {0};
    if (driver_version(version, sizeof version) == 0) st.driver_version = version;
    NvmlDevice dev = nullptr;
    char bus[64] = {0};
    Api &a = api();
    const bool matched =
        a.cuDeviceGetPCIBusId && by_bus && a.cuDeviceGetPCIBusId(bus, sizeof bus, a.dev) == 0 && by_bus(bus, &dev) == 0;
    if (!matched && by_index(0, &dev) != 0) {
        st.reason = "NVML found no device matching CUDA device 0";
        return st;
    }
    clock(dev, 1, &st.sm_clock_mhz);
    clock(dev, 2, &st.mem_clock_mhz);
    max_clock(dev, 1, &st.sm_clock_max_mhz);
    st.available = true;
    st.reason = matched ? "NVML, the device with CUDA device 0's PCI bus id " + std::string(bus)
                        : "NVML device 0 (no PCI bus id match available)";
    return st;
}

void make_current() {
    if (!device().available) throw std::runtime_error("no CUDA device: " + device().reason);
    check(api().cuCtxSetCurrent(api().ctx), "cuCtxSetCurrent");
}
void synchronize() { check(api().cuCtxSynchronize(), "cuCtxSynchronize"); }
uintptr_t mem_alloc(size_t bytes) {
    CUdeviceptr p = 0;
    check(api().cuMemAlloc(&p, bytes), "cuMemAlloc");
    return uintptr_t(p);
}
void mem_free(uintptr_t p) { api().cuMemFree(CUdeviceptr(p)); }
void memset_d8(uintptr_t p, unsigned char v, size_t bytes) { check(api().cuMemsetD8(p, v, bytes), "cuMemsetD8"); }
void memcpy_dtod(uintptr_t d, uintptr_t s, size_t bytes) { check(api().cuMemcpyDtoD(d, s, bytes), "cuMemcpyDtoD"); }

EventPair::EventPair() {
    check(api().cuEventCreate(&start, 0), "cuEventCreate");
    check(api().cuEventCreate(&stop, 0), "cuEventCreate");
}
EventPair::~EventPair() {
    if (start) api().cuEventDestroy(start);
    if (stop) api().cuEventDestroy(stop);
}
void EventPair::record_start() { check(api().cuEventRecord(start, nullptr), "cuEventRecord"); }
void EventPair::record_stop() { check(api().cuEventRecord(stop, nullptr), "cuEventRecord"); }
double EventPair::elapsed_ms() {
    check(api().cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    check(api().cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    return ms;
}

// Through the same load path as Halide's modules (a tensor-core module is rewritten, or refused).
Module::Module(const char *ptx) { check(load_module(&mod, ptx, 0, nullptr, nullptr), "cuModuleLoadData"); }
Module::~Module() {
    if (mod) api().cuModuleUnload(mod);
}
void Module::launch(const char *kernel, unsigned grid, unsigned block, void **args) {
    CUfunction f = nullptr;
    check(api().cuModuleGetFunction(&f, mod, kernel), "cuModuleGetFunction");
    check(api().cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel");
}

}  // namespace blockfuse::cuda

namespace Halide::Runtime::Internal {
extern bool halide_reuse_device_allocations_flag;  // what halide_reuse_device_allocations sets (allocation_cache.cpp)
}

// Halide's allocation cache, as its runtime asks before each device malloc and free ("override and switch based on
// the user_context for finer-grained control", HalideRuntime.h): off on a thread inside a WorkspaceScope, whose
// pieces must never enter the cache (they are the caller's memory), else what halide_reuse_device_allocations set.
extern "C" bool halide_can_reuse_device_allocations(void *) {
    return !blockfuse::cuda::scope_workspace && Halide::Runtime::Internal::halide_reuse_device_allocations_flag;
}

// Halide 21's CUDA runtime puts a kernel's shared memory in dynamic shared memory (cuLaunchKernel's
// sharedMemBytes) and never opts a kernel in to more than the 48 KB a block gets by default, so a
// schedule that needs more failed to launch (CUDA_ERROR_INVALID_VALUE). Its driver entry points
// come through halide_cuda_get_symbol, a weak symbol made to be overridden: this definition hands
// out the driver's functions from the libcuda the probe opened, with cuLaunchKernel wrapped.
extern "C" void *halide_cuda_get_symbol(void *, const char *name) {
    using namespace blockfuse::cuda;
    (void)device();  // the probe dlopens libcuda
    if (!api().lib) return nullptr;
    if (std::strcmp(name, "cuLaunchKernel") == 0) return reinterpret_cast<void *>(&launch_with_shared_opt_in);
    if (api().cuModuleLoadDataEx && std::strcmp(name, "cuModuleLoadDataEx") == 0)
        return reinterpret_cast<void *>(&load_module);
    if (api().cuModuleLoadDataEx && std::strcmp(name, "cuModuleLoadData") == 0)
        return reinterpret_cast<void *>(&module_load_data);
    if (std::strcmp(name, "cuMemAlloc_v2") == 0 || std::strcmp(name, "cuMemAlloc") == 0)
        return reinterpret_cast<void *>(&counted_mem_alloc);
    if (std::strcmp(name, "cuMemFree_v2") == 0 || std::strcmp(name, "cuMemFree") == 0)
        return reinterpret_cast<void *>(&counted_mem_free);
    return dlsym(api().lib, name);
}

namespace blockfuse::cuda {

void install_halide_hooks() {
    halide_set_cuda_acquire_context(&acquire_context);
    halide_set_cuda_release_context(&release_context);
    halide_set_cuda_get_stream(&get_stream);
}

CallScope::CallScope(int device_ordinal, void *stream) : prev_ctx_(scope_ctx), prev_stream_(scope_stream) {
    if (!device().available) throw std::runtime_error("no CUDA device: " + device().reason);
    scope_ctx = primary_context(device_ordinal);
    scope_stream = stream;
}
CallScope::~CallScope() {
    scope_ctx = prev_ctx_;
    scope_stream = prev_stream_;
}

WorkspaceScope::WorkspaceScope(uintptr_t base, uint64_t bytes) : base_(base), bytes_(bytes), prev_(scope_workspace) {
    scope_workspace = this;
}
WorkspaceScope::~WorkspaceScope() { scope_workspace = prev_; }
bool WorkspaceScope::allocate(size_t bytes, uintptr_t *p) {
    WorkspaceScope *s = scope_workspace;
    if (!s) return false;
    const uint64_t start = (s->base_ + s->used_ + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign - s->base_;
    if (start + bytes > s->bytes_) {
        if (s->exhausted_.empty())
            s->exhausted_ = "the workspace of " + std::to_string(s->bytes_) + " bytes has " +
                            std::to_string(s->bytes_ - std::min(start, s->bytes_)) + " left, the call allocates " +
                            std::to_string(bytes) + " more";
        return false;
    }
    *p = s->base_ + start;
    s->used_ = start + bytes;
    return true;
}
bool WorkspaceScope::owns(uintptr_t p) {
    const WorkspaceScope *s = scope_workspace;
    return s && p >= s->base_ && p < s->base_ + s->bytes_;
}
bool WorkspaceScope::active() { return scope_workspace != nullptr; }

void release_halide_allocation_cache() {
    halide_reuse_device_allocations(nullptr, false);  // false: release every cached allocation
    halide_reuse_device_allocations(nullptr, true);
}

}  // namespace blockfuse::cuda
