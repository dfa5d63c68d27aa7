#include "schedules/stem_schedule.h"
#include "schedules/gpu_mapping.h"

namespace blockfuse {
using namespace Halide;

// H200, f16, N=128, 224x224 (bench/results/h200/stem/): layer-by-layer 0.955 ms (PyTorch eager
// 0.978 ms); depth-first 0.867 ms with conv_vec 16 (each producing thread reuses its pixel's 27
// inputs for 16 channels), 3.28 ms with one channel per thread.
void schedule_stem(StemFuncs f, int K, StemStrategy s, const StemKnobs &kn, bool gpu) {
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Func pool = f.pool, conv = f.conv.output, acc = f.conv.accum;
    Var k = pool.args()[0], x = pool.args()[1], y = pool.args()[2], n = pool.args()[3];
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), t("t");
    if (gpu) {
        // Pool: threads over (channel groups, pool x), a tile_y column per thread.
        xo = tile_output_over_threads(pool, kn.tile_x, kn.tile_y, kn.vec_k);
        if (s == StemStrategy::layer_by_layer) {
            conv.compute_root();
            schedule_conv2d_gpu(f.conv, ConvKind::general, Conv2dGpuKnobs{}, true, K);
        } else {
            // Depth-first: the block's conv tile (2*tile + 1 per side) in shared memory, one
            // (channel, pixel) per thread on the pool's thread shape.
            conv.compute_at(pool, xo);
            accumulate_in_register(
                acc, conv, spread_over_block(conv, (K + kn.vec_k - 1) / kn.vec_k, kn.tile_x, kn.conv_vec), kn.conv_vec);
        }
    } else {
        pool.tile(x, y, xo, yo, xi, yi, kn.tile_x, kn.tile_y, guard).fuse(yo, n, t).parallel(t).vectorize(k, 8, guard);
        if (s == StemStrategy::layer_by_layer) {
            conv.compute_root();
            schedule_conv2d_cpu(f.conv, ConvKind::general, Conv2dCpuKnobs{}, true, K);
        } else {
            conv.compute_at(pool, xo).vectorize(conv.args()[0], 8, guard);
            acc.compute_at(conv, conv.args()[1]).vectorize(acc.args()[0], 8, guard);
            acc.update().vectorize(acc.args()[0], 8, guard);
        }
    }
}

}  // namespace blockfuse
