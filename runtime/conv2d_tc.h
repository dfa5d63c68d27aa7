// conv2d and conv3d on the tensor cores (strategy "tensor_cores"): an implicit GEMM of mma.sync fragments
// (generators/conv2d_tc_algorithm.h) behind the conv2d and conv3d dispatch. It serves every dense convolution (one
// group, any window, stride, dilation and padding) and every grouped one whose output channels per group are a
// multiple of 8 or divide 8 (generators/conv_windows.h) in f16 and bf16; depthwise ones stay on the CUDA cores. A conv3d is given as the conv2d of one depth plane (its batch, channels and (h, w) window) and its depth.
#pragma once
#include "runtime/conv2d.h"
#include "generators/conv_windows.h"
#include "runtime/gemm.h"

namespace blockfuse {

// The strategy's name, and whether it serves w.
constexpr const char *kTensorCores = "tensor_cores";
bool tensor_cores_apply(const Conv2dWorkload &w);
ConvWindows conv_windows(const Conv2dWorkload &w);
// A conv3d's depth axis (the generator's depth params); the default is a conv2d's.
struct TcDepth {
    int d = 1, t = 1, stride = 1, dil = 1, pad = 0;  // size, kernel, stride, dilation, padding on both sides
    int out() const { return (d + 2 * pad - dil * (t - 1) - 1) / stride + 1; }
};
// The GEMM the convolution is: M = images x output pixels, N = output channels, K = taps x channels (the
// channels rounded up to 8, or packed: ConvWindows::reduction).
GemmWorkload implicit_gemm_of(const Conv2dWorkload &w, const TcDepth &z = {});
// The weights as the kernels read them, (kr, k) bits with kr = ConvWindows::reduction_index(tap, c) (tap * Cp + c,
// zeros at c >= C; packed, C <= 4: 8 / C taps to each 8, tap / g * 8 + tap % g * C + c), from a dense
// (k, c / groups, taps...) tensor of storage bits whose taps run kx fastest, then ky (then kz): a conv2d's
// (k, c, kx, ky), a conv3d's (k, c, kx, ky, kz). Grouped: c and Cp those of row k's window (zero outside its group)...
Halide::Runtime::Buffer<uint16_t> tensor_core_weights(const Tensor &weights, int k, int c, int taps, int groups = 1);
Halide::Runtime::Buffer<uint16_t> tensor_core_weights(const Tensor &weights, const Conv2dWorkload &w);
// ...laid out once when the weights are written (randomize() does it; no-op where the strategy does not apply).
void lay_out_tensor_core_weights(Conv2dTensors &t, const Conv2dWorkload &w);
// The kernel of the strategy for exactly this shape with the given tiling (schedules/gemm_knobs.h).
KernelVariant conv2d_tc_kernel_for(const Conv2dWorkload &w, Device device, const ScheduleChoice &s,
                                   const TcDepth &z = {});
std::string conv2d_tc_launch_error(const KernelVariant &v, const Conv2dWorkload &w, const LaunchLimits &limits,
                                   const TcDepth &z = {});
// Runs one conv2d_tc kernel on t (for a conv3d: input (c, x, y, z + D n), output (k, x, y, oz + OD n)); `key`
// names the workload in errors. Throws KernelError (Halide's message, or the PTX rewrite's, naming the kernel).
void run_conv2d_tc(const KernelVariant &v, const Conv2dWorkload &w, Conv2dTensors &t, const TcDepth &z = {},
                   const std::string &key = "");

}  // namespace blockfuse
