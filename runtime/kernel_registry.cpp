#include "runtime/kernel_registry.h"
#include "generators/block_spec.h"
#include "schedules/conv2d_knob_defaults.h"
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "kernel_registry_includes.inc"

namespace blockfuse {

const char *device_name(Device d) {
    switch (d) {
    case Device::cpu: return "cpu";
    case Device::cuda: return "cuda";
    case Device::opencl: return "opencl";
    }
    return "?";
}

int KernelVariant::threads_per_block() const {
    if (device == Device::cpu) return 0;
    if (family == "block" && param("strategy") != "layer_by_layer")  // defaults: generators/block_generator.cpp
        return fused_kernel_threads(knob("channels", 24), knob("vec_k", 4), knob("tile_x", 8), knob("se", 0) == 1,
                                    knob("chunk", 8));
    if (family == "stem")  // pool tile threads (generators/stem_generator.cpp); layer-by-layer conv uses the conv2d defaults
        return std::max(fused_block_threads(knob("out_channels", 64), knob("vec_k", 4), knob("tile_x", 8)),
                        conv2d_defaults::threads_k * conv2d_defaults::threads_x);
    namespace d = conv2d_defaults;
    if (family == "block") {  // layer by layer: the largest of the three layer mappings (pw_*, full_*, layer_*)
        int threads = 0;
        for (auto m : {LayerMapping::pointwise, LayerMapping::full, LayerMapping::layer}) {
            const std::string p = knob_prefix(m);
            threads = std::max(threads, d::threads_per_block(knob(p + "threads_k", d::threads_k),
                                                             knob(p + "threads_x", d::threads_x),
                                                             knob(p + "flat_threads", d::flat_threads)));
        }
        return threads;
    }
    return d::threads_per_block(knob("threads_k", d::threads_k), knob("threads_x", d::threads_x),
                                knob("flat_threads", d::flat_threads));
}

namespace {
int g_register_policy = 0;
// The user's own setting, captured before the first apply_register_cap() overwrites it.
const char *user_register_setting() {
    static const std::string v = [] {
        const char *e = std::getenv("HL_CUDA_JIT_MAX_REGISTERS");
        return std::string(e ? e : "");
    }();
    return v.empty() ? nullptr : v.c_str();
}
}  // namespace

void set_register_policy(int max_registers) {
    user_register_setting();
    g_register_policy = max_registers;
}

std::string register_policy_description() {
    if (const char *u = user_register_setting()) return std::string("HL_CUDA_JIT_MAX_REGISTERS=") + u + " (from the environment)";
    if (g_register_policy > 0) return std::to_string(g_register_policy) + " per thread for every kernel";
    return "per variant: its max_registers knob, else 65536 / threads per block (rounded up to 4 warps), down to a "
           "multiple of 8, at most 255";
}

int register_cap(const KernelVariant &v) {
    if (const char *u = user_register_setting()) return std::atoi(u);
    if (g_register_policy > 0) return g_register_policy;
    if (int k = v.knob("max_registers", 0); k > 0) return k;
    // Registers are allocated to warps in groups of 4 (warp allocation granularity on sm_70 to
    // sm_90): a 9-warp block holds 12 warps' registers. Counting 9 let a 288-thread variant JIT
    // at 224 registers and fail its launch with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (H200).
    const int warps = std::max(1, (v.threads_per_block() + 31) / 32);
    const int allocated_warps = (warps + 3) / 4 * 4;
    return std::clamp(65536 / (allocated_warps * 32) / 8 * 8, 16, 255);
}

void apply_register_cap(const KernelVariant &v) {
    if (v.device != Device::cuda) return;
    setenv("HL_CUDA_JIT_MAX_REGISTERS", std::to_string(register_cap(v)).c_str(), 1);
}

namespace {
KernelVariant make(const char *family, void *fn, int (*argv)(void **), const char *name, const char *device,
                   const char *dtype, const char *knobs) {
    KernelVariant v;
    v.family = family;
    v.fn = fn;
    v.argv = argv;
    v.name = name;
    std::string d = device;
    v.device = d == "cuda" ? Device::cuda : d == "opencl" ? Device::opencl : Device::cpu;
    parse_dtype(dtype, &v.dtype);
    std::istringstream ss(knobs);
    std::string kv;
    while (ss >> kv) {
        auto eq = kv.find('=');
        std::string k = kv.substr(0, eq), val = kv.substr(eq + 1);
        bool integer = !val.empty() && val.find_first_not_of("-0123456789") == std::string::npos;
        if (k == "kind") v.kind = val;
        else if (integer) v.knobs[k] = std::stoi(val);
        else v.params[k] = val;
    }
    if (v.kind.empty()) v.kind = "general";
    return v;
}
}  // namespace

const std::vector<KernelVariant> &all_kernels() {
#define BF_KERNEL(family, fn, name, device, dtype, knobs) \
    make(#family, reinterpret_cast<void *>(&fn), &fn##_argv, name, device, dtype, knobs),
    static const std::vector<KernelVariant> kernels{
#include "kernel_registry.inc"
    };
#undef BF_KERNEL
    return kernels;
}

}  // namespace blockfuse
