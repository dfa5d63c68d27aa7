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

const std::vector<KernelVariant> &all_kernels();

}  // namespace blockfuse
