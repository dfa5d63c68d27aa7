// conv2d on the tensor cores (strategy "tensor_cores"): an implicit GEMM of mma.sync fragments
// (generators/conv2d_tc_algorithm.h) behind the conv2d dispatch. It serves every dense convolution (one group,
// any window, stride, dilation and padding) in f16 and bf16; depthwise and grouped ones stay on the CUDA cores.
#pragma once
#include "runtime/conv2d.h"
#include "runtime/gemm.h"

namespace blockfuse {

// The strategy's name, and whether it serves w.
constexpr const char *kTensorCores = "tensor_cores";
bool tensor_cores_apply(const Conv2dWorkload &w);
// The GEMM the convolution is: M = images x output pixels, N = output channels, K = taps x channels (the
// channels rounded up to 8).
GemmWorkload implicit_gemm_of(const Conv2dWorkload &w);
// The weights as the kernels read them, (kr, k) bits with kr = (ky * S + kx) * Cp + c, zeros at c >= C, from a
// dense (k, c, kx, ky) tensor of w's weights (one group)...
Halide::Runtime::Buffer<uint16_t> tensor_core_weights(const Tensor &weights, const Conv2dWorkload &w);
// ...laid out once when the weights are written (randomize() does it; no-op where the strategy does not apply).
void lay_out_tensor_core_weights(Conv2dTensors &t, const Conv2dWorkload &w);
// The kernel of the strategy for exactly this shape with the given tiling (schedules/gemm_knobs.h).
KernelVariant conv2d_tc_kernel_for(const Conv2dWorkload &w, Device device, const ScheduleChoice &s);
std::string conv2d_tc_launch_error(const KernelVariant &v, const Conv2dWorkload &w, const LaunchLimits &limits);
// Runs one conv2d_tc kernel; throws KernelError (Halide's message, or the PTX rewrite's, naming the kernel).
void run_conv2d_tc(const KernelVariant &v, const Conv2dWorkload &w, Conv2dTensors &t);

}  // namespace blockfuse
