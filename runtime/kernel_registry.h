// The AOT kernel variants built into this binary (generated from the CMake variant list,
// cmake/BlockfuseKernels.cmake), and dispatch over them.
#pragma once
#include "runtime/dtype.h"
#include <HalideRuntime.h>
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

enum class Device { cpu, cuda, opencl };
const char *device_name(Device d);

// conv2d family ABI: input, weights, bias, stride_x, stride_y, dilation_x, dilation_y,
// pad_left, pad_top, groups, activation, output.
using Conv2dFn = int (*)(halide_buffer_t *, halide_buffer_t *, halide_buffer_t *, int, int, int,
                         int, int, int, int, int, halide_buffer_t *);

struct KernelVariant {
    std::string family;   // "conv2d"
    std::string name;     // e.g. conv2d_depthwise_k3_f16_cuda_a
    Device device;
    DType dtype;
    std::map<std::string, int> knobs;          // integer generator params
    std::map<std::string, std::string> params; // non-integer generator params (family, strategy...)
    std::string kind;                          // conv2d: general | pointwise | depthwise
    void *fn;
    int (*argv)(void **) = nullptr;  // the same kernel's _argv entry: buffers as an array, in ABI order
    int knob(const std::string &k, int dflt) const {
        auto it = knobs.find(k);
        return it == knobs.end() ? dflt : it->second;
    }
    std::string param(const std::string &k) const {
        auto it = params.find(k);
        return it == params.end() ? "" : it->second;
    }
    int threads_per_block() const;      // 0 for CPU
};

// Halide's CUDA runtime JIT-compiles each pipeline's PTX with at most 64 registers per thread
// (HL_CUDA_JIT_MAX_REGISTERS, read when the pipeline's module is first loaded). At 64 the fused
// MBConv kernels spilled to local memory on the H200 (Nsight Compute, 2026-11-29). The policy
// set here applies to every CUDA launch through run_conv2d/run_block/run_stem:
//   0 (default): the variant's own max_registers knob (a LOAD knob of blockfuse_add_kernel) if it
//      has one, else the most registers its block size allows, 65536 / threads rounded up to a
//      warp, down to a multiple of 8, at most 255, so no launch fails for lack of registers;
//   N > 0: N for every variant (64 reproduces Halide's default).
// A HL_CUDA_JIT_MAX_REGISTERS already set in the environment at start-up wins over all of these.
// The depthwise kernels ran up to 9x faster with the larger cap, the fused MBConv mappings up to
// 1.4x slower (lower occupancy): hence a per-variant knob (bench/results/h200/registers/).
void set_register_policy(int max_registers);
std::string register_policy_description();
int register_cap(const KernelVariant &v);  // what the policy gives this variant
void apply_register_cap(const KernelVariant &v);  // before a CUDA launch: sets the variable

const std::vector<KernelVariant> &all_kernels();

}  // namespace blockfuse
