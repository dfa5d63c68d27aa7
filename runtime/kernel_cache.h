// Kernels as files: every kernel is a Halide pipeline compiled into a shared library, found in the
// prebuilt folder (made by the build), else in the persistent kernel cache, else generated into the
// cache on first use: the project's generator executable runs in a child process (the same algorithm
// and schedule code as the build), then the linker, and the library is loaded with dlopen.
//
// One folder per kernel, named by the hash of everything that decides its code: the generator, its
// params (shape and schedule knobs, every knob spelled out), the full target string, the Halide
// version and the hash of the algorithm and schedule sources. A folder holds kernel.so,
// description.json (arguments, knobs, target, launch resources, status) and build.log. It is written
// in a temporary folder and renamed into place, under a lock file, so two processes never see half a
// kernel and never build one twice. A failed build is recorded (status "failed") and reported, not
// retried, until the entry is cleared.
//
//   BLOCKFUSE_KERNEL_CACHE     the cache (default $XDG_CACHE_HOME/blockfuse/kernels, ~/.cache/...)
//   BLOCKFUSE_PREBUILT_DIR     the prebuilt kernels (default: kernels/ beside libblockfuse_runtime.so,
//                              or ../kernels: the build tree's)
//   BLOCKFUSE_GENERATOR_DIR    the generator executables (default: generators/ beside the library, or
//                              ../generators); a machine without them can only use what is built
#pragma once
#include <HalideRuntime.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace blockfuse {

struct KernelRequest {
    std::string generator;            // conv2d | block | stem: runs <generator>.generator -g <generator>
    std::string name;                 // readable, for messages and `cache list`
    std::string target;               // full Halide target string (no_runtime is added when building)
    std::vector<std::string> params;  // generator params "key=value", knobs included, sorted
    nlohmann::json description;       // recorded beside the kernel (family, device, dtype, knobs, launch...)
    std::string hash() const;         // 32 hex digits
    std::string function_name() const { return "bf_" + hash().substr(0, 16); }
};

struct LoadedKernel {
    int (*argv)(void **) = nullptr;  // the pipeline's _argv entry: every argument by pointer, in ABI order
    const halide_filter_metadata_t *metadata = nullptr;
    std::string origin;  // "prebuilt", "cache" or "generated in 3.4 s"
    std::string dir;
    // Calls the pipeline (argv), its buffer arguments counted while a call's memory is measured
    // (runtime/call_memory.h).
    int call(void **args) const;
};

// The kernel of `r`, loaded once per process and JIT register cap (prebuilt folder, cache, or generated now).
// Throws KernelError naming the kernel and the reason (a recorded build failure, no generator on this machine, a
// library that does not load). A CUDA kernel's module is compiled by the driver's JIT at its first call, at the cap
// in effect then (apply_register_cap, runtime/kernel_registry.h), and kept in the library's own state: the same
// kernel at another cap (`jit_cap`, as the tuner measures caps) is loaded from a private copy of its library, so
// that its module is compiled at that cap, not the first one's.
const LoadedKernel &load_kernel(const KernelRequest &r, int jit_cap = 0);

// Makes sure `r` is built under `root` (a cache, or the prebuilt folder), without loading it:
// what `./run cache fill` and the build's prebuilt step do, several at a time.
struct BuildOutcome {
    bool ok = false;
    bool built = false;  // false: it was there already (or failed before)
    double seconds = 0;
    std::string message;  // the failure, or where it is
};
// `limit_s` > 0: a generator still running after that long is stopped and the kernel reported as not built,
// without recording a failure (a longer limit may build it); 0: the cache's own limit (15 minutes).
BuildOutcome ensure_built(const KernelRequest &r, const std::string &root, double limit_s = 0);
std::vector<BuildOutcome> ensure_built_all(const std::vector<KernelRequest> &rs, const std::string &root, int jobs,
                                           double limit_s = 0);

// For `./run generate`: what a user needs to call the kernel from their own build, in out_dir:
// <name>.a (no runtime) + <name>.h, the statement (<name>.stmt), the device code (<name>.ptx / .cl) or
// host assembly (<name>.s), description.json, and one halide_runtime.a for the target.
void export_kernel(const KernelRequest &r, const std::string &out_dir);

std::string kernel_cache_dir();
std::string prebuilt_kernel_dir();
std::string generator_dir();  // empty if none is found
// The shared library of Halide's autoscheduler `name` (Adams2019...): BLOCKFUSE_AUTOSCHEDULER_DIR, else the
// lib folder of the Halide the project was built with, /libautoschedule_<name in lower case>.so.
std::string autoscheduler_plugin(const std::string &name);

// The host's Halide target string ("x86-64-linux-avx-avx2-..."), the features that Halide's runtime
// says this CPU can use: CPU kernels are built and cached for exactly this target.
std::string host_target();
// CUDA and OpenCL kernels: a fixed host part every x86-64 GPU host runs, so that a cache filled on the
// build machine serves the GPU host.
std::string gpu_target(const std::string &device);  // "cuda" | "opencl"

struct CacheEntry {
    std::string hash, name, status, dir, created;
    double seconds = 0;
    unsigned long long bytes = 0;
};
std::vector<CacheEntry> list_cache(const std::string &root);
// Removes every entry (failed_only: those whose build failed) and stale temporary folders; returns how many.
size_t clear_cache(const std::string &root, bool failed_only);

}  // namespace blockfuse
