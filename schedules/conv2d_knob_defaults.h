// Default values of the conv2d GPU schedule knobs: one place, read by the generator
// (GeneratorParam defaults), the schedule's knob struct and the runtime's launch checker
// (which must know a variant's thread mapping without Halide).
#pragma once

namespace blockfuse::conv2d_defaults {
constexpr int vec_k = 4;  // f16 needs 4 or 8: Halide 21's PTX for f16x2 gave wrong values on the H200
constexpr int threads_k = 32;
constexpr int threads_x = 4;
constexpr int tile_x = 2;
constexpr int tile_y = 2;
constexpr int flat_threads = 0;  // 0: the 2-D mapping (threads_k x threads_x)

// Threads per block of a conv2d GPU variant: the schedule's knob struct and the launch checker
// both ask here.
constexpr int threads_per_block(int threads_k, int threads_x, int flat_threads) {
    return flat_threads > 0 ? flat_threads : threads_k * threads_x;
}
}  // namespace blockfuse::conv2d_defaults
