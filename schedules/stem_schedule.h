// Stem strategies: layer-by-layer (conv kernel, then pool kernel) and depth-first (the conv
// computed tile by tile inside the pool's tiles, overlapping halos recomputed, the 112x112
// intermediate never written to memory).
#pragma once
#include "generators/stem_algorithm.h"
#include "schedules/conv2d_schedule.h"
#include "schedules/stem_knobs.h"

namespace blockfuse {

enum class StemStrategy { layer_by_layer, depth_first };

void schedule_stem(StemFuncs f, int K, StemStrategy s, const StemKnobs &kn, bool gpu);

}  // namespace blockfuse
