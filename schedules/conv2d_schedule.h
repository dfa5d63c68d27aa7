// Hand-written schedules for the conv2d family. Schedules only: they never redefine the
// algorithm (generators/conv2d_algorithm.h); they take its Funcs and a knob struct.
// The knob space is declared as data next to the schedule (TVM style) so that the autotuner
// can search it and the launch checker can derive resources from it.
#pragma once
#include "Halide.h"
#include "generators/activation.h"
#include "generators/conv2d_algorithm.h"
#include "schedules/conv2d_knob_defaults.h"
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

enum class ConvKind { general, pointwise, depthwise };

// CUDA / OpenCL thread mapping: each thread owns a register tile of
// vec_k output channels (vectorized) x tile_x x tile_y pixels; a block is
// threads_k x threads_x threads.
struct Conv2dGpuKnobs {
    int vec_k = conv2d_defaults::vec_k;
    int threads_k = conv2d_defaults::threads_k;
    int threads_x = conv2d_defaults::threads_x;
    int tile_x = conv2d_defaults::tile_x;
    int tile_y = conv2d_defaults::tile_y;
    int unroll_reduction = 1;  // unroll the kernel window loops (needs a static kernel size)
    // >1: the input-channel loop split by this factor and the inner part unrolled, so a thread
    // has that many channels' loads in flight (the pointwise layers' reduction is this loop alone).
    int unroll_channels = 1;
    // 1 (pointwise, with unroll_channels > 1 dividing the input channels): each step's input,
    // unroll_channels channels x the thread's pixel tile, loaded into registers first as channel
    // vectors (one 8-byte load per pixel for 4 f16 channels instead of 4 scalar loads), then the
    // unrolled FMAs read registers. H200, FFN c=256 layer by layer, 8 x 4x2 tile: 0.974 ms with it
    // (bench/results/h200/report/); 1.177 ms one call earlier without it and without the unpadded
    // 1x1 read (lbl-probe/), so the two changes were not measured apart.
    // General k x k kernels (static window, one static group, stage_input 0 or 2): the step's window,
    // unroll_channels channels x tile + halo, the same way, from the block's shared tile with
    // stage_input=2. Conv3x3-BN-ReLU C=K=64 N=128, 8 x 4x2 tile: 1.167 ms against 6.96 (report/).
    int stage_channels = 0;
    // 1: stage each thread's input window (tile + halo) in registers once, instead of one
    // global load per tap; 2: stage the block's input tile + halo in shared memory. Both need
    // a static kernel size, stride and dilation (constant window).
    int stage_input = 0;
    // >0: flat thread mapping. A row of (channel vector, x tile) pairs is fused into one index
    // that is cut into blocks of flat_threads threads (threads_k, threads_x unused), so a block
    // is whole warps whatever the channel count: with 144 channels the 2-D mapping's
    // 36 x 2 = 72 threads fill 3 warps (96 lanes), a third of the issued lanes idle.
    // Needs images of at least tile_x x tile_y outputs (edge tiles shift inwards).
    int flat_threads = conv2d_defaults::flat_threads;
    int threads_per_block() const { return conv2d_defaults::threads_per_block(threads_k, threads_x, flat_threads); }
};

struct Conv2dCpuKnobs {
    int vec_k = 8;    // f32 lanes along output channels
    int tile_x = 4;   // output pixels per register tile
};

// The values each knob may take, as data: what the autotuner searches and what
// the build-time variant list must stay inside.
inline const std::map<std::string, std::vector<int>> &conv2d_gpu_knob_space() {
    static const std::map<std::string, std::vector<int>> space{
        {"vec_k", {1, 4, 8}},
        {"threads_k", {4, 8, 9, 15, 16, 18, 30, 32, 36, 60, 64, 72}},
        {"threads_x", {1, 2, 4, 8, 16}},
        {"tile_x", {1, 2, 4, 7, 8}},
        {"tile_y", {1, 2, 4, 7, 8}},
        {"unroll_reduction", {0, 1}},
        {"unroll_channels", {1, 2, 4, 8}},
        {"stage_channels", {0, 1}},
        {"stage_input", {0, 1, 2}},
        {"flat_threads", {0, 64, 128, 256}},
    };
    return space;
}

// Device limits every GPU schedule must respect; checked at generation time and again
// against the actual device before any launch (runtime/launch_check).
constexpr int kMaxThreadsPerBlock = 1024;

// out_channels: K (vectors along K are used where K is a multiple of vec_k).
// activation_id: the kernel's runtime activation argument, specialized on none and relu;
// leave undefined when the activation is static.
void schedule_conv2d_gpu(const Conv2dFuncs &f, ConvKind kind, const Conv2dGpuKnobs &knobs,
                         bool static_kernel, const Halide::Expr &out_channels,
                         const Halide::Expr &activation_id = Halide::Expr());
void schedule_conv2d_cpu(const Conv2dFuncs &f, ConvKind kind, const Conv2dCpuKnobs &knobs,
                         bool static_kernel, const Halide::Expr &out_channels,
                         const Halide::Expr &activation_id = Halide::Expr());

}  // namespace blockfuse
