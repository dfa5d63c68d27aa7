// Pooling schedules (GPU: CUDA and OpenCL; CPU), functions of the knobs of schedules/pool_knobs.h
// applied to the Funcs of generators/pool_algorithm.h. `out` is the Func bound to the output buffer(s)
// (one Func, a Tuple with the indices for max pooling with indices, so one kernel computes both); its
// args are the output's dimensions, innermost first: x, then y and z where the op has them, c, n.
#pragma once
#include "generators/pool_algorithm.h"
#include "schedules/pool_knobs.h"

namespace blockfuse {

// GPU, windowed: whether the schedule stores a thread's x tile as one vector (the generator then declares
// the outputs 16-byte aligned). Not two f16 lanes (generators/storage.h).
inline bool pool_store_vector(const PoolGeometry &g, const PoolKnobs &kn, const Halide::Type &storage) {
    return kn.store_vec && !g.adaptive && kn.tile_x > 1 && g.axis[0].out % kn.tile_x == 0 &&
           !gpu_f16_pair_store(storage, kn.tile_x);
}

void schedule_pool(const PoolFuncs &f, Halide::Func out, int rank, const PoolGeometry &g, const PoolKnobs &kn,
                   bool gpu);
// out: (d, h, g, b).
void schedule_mean_pooling(const MeanPoolingFuncs &f, Halide::Func out, const PoolKnobs &kn, bool gpu);

}  // namespace blockfuse
