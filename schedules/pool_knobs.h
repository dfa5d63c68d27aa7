// The pooling schedules' knobs (windowed, adaptive and mean pooling), declared once (schedules/knobs.h).
// Halide-free: the generator, the schedule, the launch checker, the heuristics and the tuner read it.
#pragma once
#include "schedules/knobs.h"

// GPU (CUDA, OpenCL): every output tile of tile_x x tile_y outputs is one thread; the tiles, flattened
// x fastest, are cut into blocks of `threads` threads. CPU: vectors of cpu_vec outputs along x.
#define BLOCKFUSE_POOL_KNOBS(X)                                                                                        \
    X(threads, 128, (32, 64, 128, 256, 512), "GPU: threads per block over the flattened output tiles")                 \
    X(tile_x, 1, (1, 2, 4, 8, 16), "outputs per thread along x, unrolled (mean pooling: along d, a vector)")           \
    X(tile_y, 1, (1, 2, 4), "outputs per thread along y, unrolled")                                                    \
    X(stage, 1, (0, 1),                                                                                                \
      "GPU, windowed pooling: the thread's input window loaded into registers once (0: each tap where it "             \
      "is used)")                                                                                                      \
    X(vec, 1, (1, 2, 4, 8), "input elements per load of the staged window: an aligned vector (1: scalar)")             \
    X(guard_x, 0, (0, 1),                                                                                              \
      "GPU, windowed pooling: the last x tile of a row computed whole, its outputs past the row not stored (0: "       \
      "shifted inwards over its neighbour); every tile then starts at a multiple of tile_x")                           \
    X(stage_out, 0, (0, 1, 2, 4, 8, 16),                                                                               \
      "GPU, windowed pooling: a block computes the tiles of this many whole output rows (1-D: a chunk of threads x "   \
      "tile_x outputs) into shared memory, then its threads store them in order, coalesced (0: each thread stores "    \
      "its own tile)")                                                                                                 \
    X(store_vec, 1, (0, 1),                                                                                            \
      "CUDA, windowed pooling: the thread's tile_x outputs stored as one aligned vector where tile_x is a power of "   \
      "two dividing the output width, f16 in 4 lanes or more (0: element by element)")                                 \
    X(unroll, 4, (1, 2, 4, 8), "mean pooling: tokens per unrolled step of a chunk")                                    \
    X(cpu_vec, 8, (4, 8, 16), "CPU: vector lanes along x (mean pooling: along d)")

namespace blockfuse {

struct PoolKnobs {
    BLOCKFUSE_POOL_KNOBS(BLOCKFUSE_KNOB_FIELD)
};

// stage_out > 0: a block's share of the output, staged in shared memory, and the threads that compute its
// tiles (rows of out_x outputs, out_x its width; 1-D: `threads` tiles of tile_x). The schedule, the launch check
// and the kernel's block size read it.
struct PoolStagedBlock {
    long long outputs = 0;  // outputs a block stages
    int tile_threads = 0;   // threads computing its tiles (one tile each)
};
inline PoolStagedBlock pool_staged_block(int rank, int out_x, int threads, int tile_x, int tile_y, int stage_out) {
    if (rank == 1) return {1LL * threads * tile_x, threads};
    const int tiles_x = (out_x + tile_x - 1) / tile_x, tiles_y = (stage_out + tile_y - 1) / tile_y;
    return {1LL * out_x * stage_out, tiles_x * tiles_y};
}

inline const KnobTable &pool_knobs() {
    static const KnobTable t{{BLOCKFUSE_POOL_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}

}  // namespace blockfuse
