// Pooling schedules (GPU: CUDA and OpenCL; CPU), functions of the knobs of schedules/pool_knobs.h
// applied to the Funcs of generators/pool_algorithm.h. `out` is the Func bound to the output buffer(s)
// (one Func, a Tuple with the indices for max pooling with indices, so one kernel computes both); its
// args are the output's dimensions, innermost first: x, then y and z where the op has them, c, n.
#pragma once
#include "generators/pool_algorithm.h"
#include "schedules/pool_knobs.h"

namespace blockfuse {

// GPU, windowed: whether the schedule stores a thread's x tile as one vector (the generator then declares
// the outputs 16-byte aligned): tiles of a power of two, every tile starting at a multiple of it, and no f16
// vector that Halide 21 stores wrongly (generators/storage.h).
inline bool pool_store_vector(const PoolGeometry &g, const PoolKnobs &kn, const Halide::Type &storage) {
    const int t = kn.tile_x;
    const bool power_of_two = t > 1 && (t & (t - 1)) == 0;  // a tile of 3 would be stored as 2 + 1 lanes
    return kn.store_vec && !g.adaptive && power_of_two && g.axis[0].out % t == 0 && gpu_vector_store_ok(storage, t);
}

// staged: with kn.stage_out on a GPU, the Func the output copies (same args and values), whose tiles are computed
// into shared memory; undefined otherwise.
void schedule_pool(const PoolFuncs &f, Halide::Func out, Halide::Func staged, int rank, const PoolGeometry &g,
                   const PoolKnobs &kn, bool gpu);
// out: (d, h, g, b).
void schedule_mean_pooling(const MeanPoolingFuncs &f, Halide::Func out, const PoolKnobs &kn, bool gpu);

}  // namespace blockfuse
