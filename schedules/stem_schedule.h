// Stem strategies: layer-by-layer (conv kernel, then pool kernel) and depth-first (the conv
// computed tile by tile inside the pool's tiles, overlapping halos recomputed, the 112x112
// intermediate never written to memory).
#pragma once
#include "generators/stem_algorithm.h"
#include "schedules/conv2d_schedule.h"

namespace blockfuse {

enum class StemStrategy { layer_by_layer, depth_first };

struct StemKnobs {
    int tile_x = 8, tile_y = 4;  // pool outputs per block (GPU) / per task (CPU)
    int vec_k = 4;               // output channels per thread (GPU)
    int conv_vec = 1;            // depth-first, GPU: conv channels each producing thread computes (reuses its 27 inputs)
};

void schedule_stem(StemFuncs f, int K, StemStrategy s, const StemKnobs &kn, bool gpu);

}  // namespace blockfuse
