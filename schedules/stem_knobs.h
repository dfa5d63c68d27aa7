// The stem schedules' knobs, declared once (schedules/knobs.h). Halide-free.
#pragma once
#include "schedules/knobs.h"

#define BLOCKFUSE_STEM_KNOBS(X)                                                                                        \
    X(tile_x, 8, (4, 8, 16), "pool outputs per thread block (GPU) / per task (CPU), x")                                \
    X(tile_y, 4, (2, 4, 8), "pool outputs per thread block / task, y")                                                 \
    X(vec_k, 4, (2, 4, 8), "GPU: output channels per thread")                                                          \
    X(conv_vec, 1, (1, 4, 8, 16, 32),                                                                                  \
      "depth-first, GPU: conv channels each producing thread computes, reusing its 27 input values")

namespace blockfuse {

struct StemKnobs {
    BLOCKFUSE_STEM_KNOBS(BLOCKFUSE_KNOB_FIELD)
};

inline const KnobTable &stem_knobs() {
    static const KnobTable t{{BLOCKFUSE_STEM_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}

}  // namespace blockfuse
