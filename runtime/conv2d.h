// Running the conv2d family: tensors for a workload, choosing a kernel variant, checking its
// launch against the device, calling it, and the tensor-machine accounting.
#pragma once
#include "runtime/kernel_registry.h"
#include "runtime/op.h"
#include "runtime/tensor.h"
#include "runtime/workload.h"
#include <random>
#include <stdexcept>
#include <vector>

namespace blockfuse {

struct Conv2dTensors {
    Tensor input;                         // (c, x, y, n)
    Tensor weights;                       // (k, cg, kx, ky)
    Halide::Runtime::Buffer<float> bias;  // (k); zeros when the workload has no bias
    Tensor output;                        // (k, ox, oy, n)
    // The weights widened to f32 once at load time (exactly: every f16/bf16 value is an f32), for
    // variants whose kernels take f32 weights (takes_f32_weights): no per-thread converts. Whoever
    // writes `weights` calls widen_weights() afterwards; randomize() does.
    Halide::Runtime::Buffer<float> weights_f32;
    // The weights as the tensor-core kernels read them (runtime/conv2d_tc.h), laid out with weights_f32.
    Halide::Runtime::Buffer<uint16_t> weights_tc;
};

Conv2dTensors make_conv2d_tensors(const Conv2dWorkload &w);
// Fresh random input/weights/bias (bias only if w.bias); output poisoned with NaN.
void randomize(Conv2dTensors &t, const Conv2dWorkload &w, std::mt19937_64 &rng);
void widen_weights(Conv2dTensors &t, DType dtype);
// The variant's kernel reads f32 weights whatever the storage type (built with weights.type=float32).
bool takes_f32_weights(const KernelVariant &v);

// The named variants (variant data) whose static params fit this workload on `device`, those the data
// marks default first, then in data order.
std::vector<const KernelVariant *> conv2d_candidates(const Conv2dWorkload &w, Device device);
// A kernel made for exactly this workload's shape (kernel size, stride, dilation, groups, channel
// counts where the schedule gains from them), with the given schedule: what the dispatcher generates
// when no named variant is the default. Its name says the shape; its request hash, the rest.
// Conv1d and conv3d run on these kernels (runtime/conv_nd.h): `extras` adds their static params, names
// the kernel, and gives the real input channel count where it differs from w.c (alignment needs both).
struct ScheduleChoice;
struct Conv2dKernelExtras {
    std::map<std::string, std::string> params;
    std::string name;
    int input_channels = 0;
};
KernelVariant conv2d_kernel_for(const Conv2dWorkload &w, Device device, const ScheduleChoice &s,
                                const Conv2dKernelExtras &extras = {});

// A flat-mapped layer (flat_threads > 0) shifts its edge tiles inwards, so its output must hold one
// whole tile_x x tile_y tile; the other mappings guard their tails and fit any size. The conv2d and
// block dispatchers both ask here.
bool flat_tiles_fit(int flat_threads, int tile_x, int tile_y, int out_w, int out_h);
// Launch geometry of a GPU variant for a workload (blocks and threads per block).
// A device's per-block launch limits: the CUDA device's (shared memory with opt-in, which
// runtime/cuda_driver.cpp does for Halide's launches: 227 KB on the H200) where one is present,
// else those of the GPU named by BLOCKFUSE_GPU ("NVIDIA H200:sm_90": kernels made here for it), else
// 1024 threads and 48 KB; registers per block: the device's, else 64 K (every GPU since sm_30). Every launch
// checker (conv2d, block, stem, the tensor-core kernels) and the tuner read these.
struct LaunchLimits {
    int max_threads = 1024;
    long long max_shared = 48 * 1024;
    long long max_registers = 65536;
    int compute_capability = 0;  // 10 major + minor (90: Hopper); 0 unknown (no GPU, BLOCKFUSE_GPU unset)
};
LaunchLimits launch_limits(Device device);
// The limits of a GPU of compute capability sm (10 major + minor) that this machine need not have.
LaunchLimits launch_limits_of_sm(int sm);

struct LaunchShape {
    long long grid[3] = {1, 1, 1};
    int threads = 0;
    long long shared_bytes = 0;
};
LaunchShape conv2d_launch_shape(const KernelVariant &v, const Conv2dWorkload &w);
// Shared bytes of a block's input tile + halo in f32 (stage_input = 2), for a block of
// block_x x block_y outputs.
long long staged_tile_bytes(long long channels, int block_x, int block_y, int stride, int kernel, int dilation);
// What of a launch exceeds the device's limits (threads per block, shared memory, grid dims), in
// words, or "" if nothing does.
std::string launch_limit_violation(const LaunchShape &s, const LaunchLimits &limits);
// Throws KernelError if the launch would exceed the device's limits (threads per block,
// grid dims, shared memory). No-op for CPU variants.
void check_launch(const KernelVariant &v, const Conv2dWorkload &w);
// What check_launch would say against `limits` ("" if the launch fits).
std::string conv2d_launch_error(const KernelVariant &v, const Conv2dWorkload &w, const LaunchLimits &limits);

// Runs one variant; throws KernelError with Halide's message on failure.
void run_conv2d(const KernelVariant &v, const Conv2dWorkload &w, Conv2dTensors &t);

// Tensor-machine accounting: 2 ops per MAC; compulsory DRAM bytes = each tensor once.
double conv2d_flops(const Conv2dWorkload &w);
// Compulsory bytes; a variant that takes f32 weights reads 4-byte weights.
double conv2d_bytes(const Conv2dWorkload &w, const KernelVariant *v = nullptr);

// The conv2d family behind the Op interface (runtime/op.h).
std::unique_ptr<Op> conv2d_op(const std::string &key);

}  // namespace blockfuse
