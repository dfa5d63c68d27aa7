// The three strategies for fused blocks, as schedules of the same algorithm
// (generators/block_algorithm.h). Knobs as data next to them, for the autotuner.
#pragma once
#include "generators/block_algorithm.h"
#include "schedules/conv2d_schedule.h"
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

// depth_first: a stage of blocks in one kernel, the earlier blocks computed per tile of the last
// with overlapping halos (their outputs never reach memory).
enum class BlockStrategy { layer_by_layer, fused, depth_first };

struct BlockKnobs {
    int chunk = 8;      // hidden channels produced per step of the output's reduction (Eq. 32 loop
                        // fusion); must divide the hidden width (the generator picks a divisor)
    int tile_x = 8;     // output pixels per block / per CPU task, x
    int tile_y = 4;     //  ... y
    int vec_k = 4;      // output channels per thread (GPU) / vector lanes (CPU: 8)
    int hidden_vec = 1; // GPU fused: hidden channels one thread produces per pixel (divides chunk)
    int stage_weights = 0; // GPU fused: per chunk, the chunk's weights of every chunked layer widened to
                           // f32 once per thread block into shared memory (not converted per use); 2: also
                           // the full-width layers' weights (ConvFirst's grouped 3x3), once per tile
    int stage_padded = 0;  // GPU fused: a hidden chunk stored as the next layer's padded f32 view (zero
                           // outside the image), so its readers neither clamp, select nor convert
    int unroll_staging = 0; // GPU fused, with stage_weights: each thread's rounds of the weight copy unrolled, so
                            // all its global loads are in flight before the stores (else one load per round)
    int full_vec = 1;      // GPU fused: channels one thread produces per pixel of a full-width layer computed on the
                           // tile (ConvFirst's grouped 3x3, ConvNeXt's depthwise 7x7), its inputs and weights then
                           // loaded as channel vectors; divides those layers' channels
    int input_vec = 0;     // GPU fused: a 1x1 hidden layer's input pixel copied to registers once per hidden point,
                           // this many channels per load (divides its input channels; 0: read per use)
    Conv2dGpuKnobs layer_gpu;      // layer-by-layer: the conv2d schedule of the depthwise / grouped k x k layers,
    Conv2dGpuKnobs pointwise_gpu;  //  ... of the 1x1 layers (GEMM-like: wider register tiles pay)
    Conv2dGpuKnobs full_gpu;       //  ... and of the dense k x k layers (FusedMBConv's expand)
};

// The values each knob may take (a superset of every measured mapping: tested in test_blocks_cpu).
inline const std::map<std::string, std::vector<int>> &block_knob_space() {
    static const std::map<std::string, std::vector<int>> space{
        {"chunk", {4, 8, 16, 24, 32, 48, 72}},  {"tile_x", {4, 7, 8, 14, 16, 28, 32, 56}},
        {"tile_y", {1, 2, 4, 7, 8, 14, 16}},   {"vec_k", {1, 2, 4, 8}},
        {"hidden_vec", {1, 2, 4, 8}},          {"stage_weights", {0, 1, 2}},
        {"stage_padded", {0, 1}},              {"input_vec", {0, 2, 4, 8}},
        {"full_vec", {1, 2, 4, 8}},            {"unroll_staging", {0, 1}}};
    return space;
}

// gpu: CUDA/OpenCL schedule, else CPU. out_channels etc. are static in the spec. A stage is a
// chain of identical blocks (one block: a stage of one); layer_by_layer and fused put every
// block's output in memory, depth_first computes the stage in one kernel.
void schedule_stage(const std::vector<BlockFuncs> &stage, const BlockSpec &spec, BlockStrategy s, const BlockKnobs &kn,
                    bool gpu);

// Threads per block and shared-memory bytes of a GPU schedule (for the launch checker).
int block_threads_per_block(const BlockSpec &spec, BlockStrategy s, const BlockKnobs &kn);

}  // namespace blockfuse
