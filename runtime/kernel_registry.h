// Kernel variants: a generator, its static params (the shape it is specialized on) and its schedule
// knobs. The named variants are data (schedules/variants/*.json: hand-written mappings, some built with
// the project, the rest generated on first use); the others are made for a workload from a tuning
// record or the schedules' shape heuristics. Every one is loaded through the kernel cache
// (runtime/kernel_cache.h), and dispatch (bench/harness.cpp) says which it took and why.
#pragma once
#include "runtime/dtype.h"
#include "runtime/errors.h"
#include "runtime/kernel_cache.h"
#include "schedules/knobs.h"
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

enum class Device { cpu, cuda, opencl };
const char *device_name(Device d);
bool parse_device(const std::string &s, Device *out);  // cpu | cuda | opencl

// Whether a generator and strategy make a module of mma.sync kernels: such a module's default cap is at least
// mma_ptx::kMinRegisters (KernelVariant::jit_register_cap).
bool uses_tensor_cores(const std::string &family, const std::string &strategy);

// "tile_x=16 chunk=32 max_registers=128": the knobs of the table that differ from their declared defaults
// ("knob defaults" if none), the register cap if set.
std::string knob_summary(const KnobTable &table, const std::map<std::string, int> &knobs, int max_registers);

struct KernelVariant {
    std::string family;  // the generator: conv2d | block | stem
    std::string name;    // e.g. conv2d_depthwise_k3fd_f16_cuda, or a generated one's name@hash
    Device device = Device::cpu;
    DType dtype = DType::f32;
    std::map<std::string, int> knobs;           // integer generator params: the shape's and every schedule knob
    std::map<std::string, std::string> params;  // the others (kind, family, strategy, weights.type)
    std::string kind;                           // conv2d: general | pointwise | depthwise
    int max_registers = 0;                      // CUDA JIT register cap of this kernel (0: the register policy's rule)
    bool data_default = false;                  // the variant data makes it the default of the workloads it matches
    bool prebuilt = false;                      // built with the project (variant data)
    std::string why;  // where its knobs come from (variant data, a tuning record, the heuristic)

    int knob(const std::string &k, int dflt = 0) const {
        auto it = knobs.find(k);
        return it == knobs.end() ? dflt : it->second;
    }
    std::string param(const std::string &k) const {
        auto it = params.find(k);
        return it == params.end() ? "" : it->second;
    }
    int threads_per_block() const;  // 0 for CPU
    // The schedule knobs alone (name -> value, every declared one), as the tuner and records hold them.
    std::map<std::string, int> schedule_knobs() const;
    // knob_summary() of this kernel's knobs.
    std::string knob_summary() const;
    KernelRequest request() const;  // what the kernel cache builds it from
    // The request and its hash are made once per variant: a PyTorch model calls load() on every launch.
    // A copy loads afresh (it may get other knobs, as a test's mutant does); a loaded variant is not edited.
    const LoadedKernel &load() const {
        if (!loaded.kernel) loaded.kernel = &load_kernel(request(), jit_register_cap());
        return *loaded.kernel;
    }
    // The cap its module is JIT-compiled at: register_cap(*this) on CUDA, the rule's raised to the mma.sync floor
    // for a tensor-core module (uses_tensor_cores; a cap set on purpose is kept); 0 elsewhere. Variants of one
    // build and one such cap are one kernel.
    int jit_register_cap() const;
    struct LoadedOnce {  // load_kernel's entries live as long as the process; copies start empty
        mutable const LoadedKernel *kernel = nullptr;
        LoadedOnce() = default;
        LoadedOnce(const LoadedOnce &) {}
        LoadedOnce &operator=(const LoadedOnce &) {
            kernel = nullptr;
            return *this;
        }
    } loaded;
};

// The declared schedule knobs of a family on a device (schedules/*_knobs.h).
const KnobTable &schedule_knob_table(const std::string &family, Device device);

// A variant from its parts: static params (integers into knobs, the rest into params) and schedule knobs
// over the declared defaults. Throws WorkloadError naming a knob the family does not declare.
KernelVariant make_variant(const std::string &family, const std::string &name, Device device, DType dtype,
                           const std::map<std::string, std::string> &static_params,
                           const std::map<std::string, int> &knobs, int max_registers, const std::string &why);

// The named variants of schedules/variants/*.json, in file order. Malformed data is a KernelError naming
// the file and the entry.
const std::vector<KernelVariant> &data_variants();
const KernelVariant *find_data_variant(const std::string &name);

// Keeps a variant made at run time for the rest of the process and returns it (one copy per kernel).
const KernelVariant *keep_variant(KernelVariant v);

// Halide's CUDA runtime JIT-compiles each pipeline's PTX with at most 64 registers per thread
// (HL_CUDA_JIT_MAX_REGISTERS, read when the pipeline's module is first loaded). At 64 the fused
// MBConv kernels spilled to local memory on the H200 (Nsight Compute). The policy set here applies to
// every CUDA launch through run_conv2d/run_block/run_stem:
//   0 (default): the variant's own register cap (max_registers in the variant data or record) if it
//      has one, else the most registers its block size allows, 65536 / threads rounded up to 4 warps,
//      down to a multiple of 8, at most 255, so no launch fails for lack of registers;
//   N > 0: N for every variant (64 reproduces Halide's default).
// A HL_CUDA_JIT_MAX_REGISTERS already set in the environment at start-up wins over all of these.
// The depthwise kernels ran up to 9x faster with the larger cap, the fused MBConv mappings up to
// 1.4x slower (lower occupancy): hence a per-variant cap (bench/results/h200/registers/).
void set_register_policy(int max_registers);
std::string register_policy_description();
int register_cap(const KernelVariant &v);         // what the policy gives this variant
void apply_register_cap(const KernelVariant &v);  // before a CUDA launch: sets the variable (jit_register_cap)

}  // namespace blockfuse
