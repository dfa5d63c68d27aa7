// The block schedules' knobs, declared once (schedules/knobs.h). Halide-free.
// The fused and depth-first strategies read the block-level knobs; layer by layer schedules each
// layer with the conv2d GPU knobs of its mapping, prefixed: pw_ (1x1 layers), full_ (dense k x k),
// layer_ (depthwise and grouped).
#pragma once
#include "schedules/conv2d_knobs.h"

#define BLOCKFUSE_BLOCK_KNOBS(X)                                                                                    \
    X(chunk, 8, (4, 8, 16, 24, 32, 48, 72),                                                                       \
      "hidden channels produced per step of the output's reduction (Eq. 32); the largest divisor of the hidden "  \
      "width not above it is used")                                                                               \
    X(tile_x, 8, (4, 7, 8, 14, 16, 28, 32, 56), "output pixels per thread block (GPU) / per task (CPU), x")        \
    X(tile_y, 4, (1, 2, 4, 7, 8, 14, 16), "output pixels per thread block / task, y")                             \
    X(vec_k, 4, (1, 2, 4, 8), "GPU: output channels per thread")                                                  \
    X(hidden_vec, 1, (1, 2, 4, 8), "GPU fused: hidden channels one thread produces per pixel (divides the chunk)") \
    X(stage_weights, 0, (0, 1, 2),                                                                                \
      "GPU fused: the chunk's weights of the chunked layers widened to f32 once per block in shared memory; 2: "  \
      "also the full-width layers' weights, once per tile")                                                       \
    X(stage_padded, 0, (0, 1), "GPU fused: a hidden chunk stored as the next layer's padded f32 view")            \
    X(unroll_staging, 0, (0, 1), "GPU fused, with stage_weights: the weight copy's rounds unrolled")             \
    X(full_vec, 1, (1, 2, 4, 8),                                                                                  \
      "GPU fused: channels one thread produces per pixel of a full-width layer on the tile (divides them)")       \
    X(input_vec, 0, (0, 2, 4, 8),                                                                                 \
      "GPU fused: a 1x1 hidden layer's input pixel in registers, this many channels per load (0: read per use)")

namespace blockfuse {

struct BlockKnobs {
    BLOCKFUSE_BLOCK_KNOBS(BLOCKFUSE_KNOB_FIELD)
    Conv2dGpuKnobs pointwise_gpu;  // layer by layer: the 1x1 layers (pw_*)
    Conv2dGpuKnobs full_gpu;       //  ... the dense k x k layers (full_*)
    Conv2dGpuKnobs layer_gpu;      //  ... the depthwise and grouped layers (layer_*)
};

inline const KnobTable &block_fused_knobs() {
    static const KnobTable t{{BLOCKFUSE_BLOCK_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}
// Every knob of the block generator: the block-level ones and the three prefixed layer mappings.
inline const KnobTable &block_knobs() {
    static const KnobTable t = concat({block_fused_knobs(), prefixed(conv2d_gpu_knobs(), "pw_"),
                                       prefixed(conv2d_gpu_knobs(), "full_"), prefixed(conv2d_gpu_knobs(), "layer_")});
    return t;
}

inline BlockKnobs block_knobs_from(const std::map<std::string, int> &set) {
    BlockKnobs k;
    auto get = [&](const char *name, int &field) {
        if (auto it = set.find(name); it != set.end()) field = it->second;
    };
#define BLOCKFUSE_KNOB_FROM_SET(name, dflt, values, meaning) get(#name, k.name);
    BLOCKFUSE_BLOCK_KNOBS(BLOCKFUSE_KNOB_FROM_SET)
#undef BLOCKFUSE_KNOB_FROM_SET
    k.pointwise_gpu = conv2d_gpu_knobs_from(set, "pw_");
    k.full_gpu = conv2d_gpu_knobs_from(set, "full_");
    k.layer_gpu = conv2d_gpu_knobs_from(set, "layer_");
    return k;
}

}  // namespace blockfuse
