// The pooling schedules' knobs as functions of the shape (schedules/heuristics.h).
#include "schedules/heuristics.h"
#include "runtime/pool.h"
#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace blockfuse {
namespace {

// Threads per block: 128, halved (down to 32) while the grid would not give every SM of a large GPU
// (132 on the H200) two blocks: the table's small workloads have a few thousand outputs.
int block_threads(long long threads_needed) {
    int t = 128;
    while (t > 32 && (threads_needed + t - 1) / t < 2 * 132) t /= 2;
    return t;
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace

// GPU, windowed: the input window in registers, loaded in aligned vectors of 16 bytes (8 x f16/bf16,
// 4 x f32) where the row width is a multiple of the vector; the x tile is then the fewest outputs whose
// stride spans whole vectors (so every thread's window starts at the same lane: a constant register
// window; the edge tile too, shifted inwards or else guarded), or one tile for the whole row. Two output
// rows per thread where windows overlap along y (k > stride: the shared rows are loaded once). Tiles shrink
// until the window fits about 80 registers.
// Adaptive windows have no constant size: one output per thread, taps loaded where used.
ScheduleChoice pool_heuristic(const PoolWorkload &w, Device device) {
    ScheduleChoice s;
    if (device == Device::cpu) {
        const bool avx512 = host_target().find("avx512") != std::string::npos;
        s.knobs = {{"cpu_vec", avx512 ? 16 : 8}};
        s.why = fmt::format("heuristic: {} lanes along x", avx512 ? 16 : 8);
        return s;
    }
    const int R = w.rank, X = R - 1;
    const int out_x = w.out(X), out_y = R >= 2 ? w.out(R - 2) : 1;
    int vec = 1, tile_x = 1, tile_y = 1, guard_x = 0;
    if (!w.adaptive) {
        const int elem = dtype_bytes(w.dtype);
        for (int v = 16 / elem; v >= 2 && vec == 1; v /= 2) {
            if (w.in[X] % v) continue;
            int t = v / std::gcd(v, w.stride[X]);
            if (t > std::min(out_x, 8)) {
                if (out_x > 8) continue;
                t = out_x;  // one tile covers the row: its window starts at 0
            }
            // The edge tile must start its window at the same lane (runtime/pool.h): shifted inwards where
            // that keeps the lane, else, for planes and volumes, computed whole past the row (guard_x). On the
            // H200 the guarded vector tiles took medicalnet-stem (57-wide rows) from 0.0586 to 0.046 ms, but made
            // the 1-D rows (1024-1365 outputs a row) 1.05-3x slower than scalar loads, with indices the most.
            if (pool_window_lane_constant(w, t, v)) vec = v, tile_x = t;
            else if (R >= 2 && pool_window_lane_constant(w, t, v, true)) vec = v, tile_x = t, guard_x = 1;
        }
        if (vec == 1 && w.kernel[X] > w.stride[X] && out_x >= 2) tile_x = 2;
        if (R >= 2 && w.kernel[R - 2] > w.stride[R - 2] && out_y >= 2) tile_y = 2;
        // Elements of the register window (storage type), at most ~80 registers of 32 bits.
        auto window = [&](int tx, int ty) {
            long long rows = 1LL * (ty - 1) * (R >= 2 ? w.stride[R - 2] : 1) +
                             (R >= 2 ? 1LL * (w.kernel[R - 2] - 1) * w.dil[R - 2] : 0) + 1;
            long long depth = R >= 3 ? 1LL * (w.kernel[0] - 1) * w.dil[0] + 1 : 1;
            long long span = 1LL * (tx - 1) * w.stride[X] + 1LL * (w.kernel[X] - 1) * w.dil[X] + 1;
            return rows * depth * (ceil_div(span, vec) + (vec > 1 ? 1 : 0)) * vec;
        };
        const long long budget = 80 * 4 / elem;
        if (window(tile_x, tile_y) > budget) tile_y = 1;
        while (window(tile_x, tile_y) > budget && tile_x > 1 && vec == 1) tile_x /= 2;
        if (guard_x) s.knobs["guard_x"] = 1;
        s.knobs["stage"] = window(tile_x, tile_y) <= 2 * budget ? 1 : 0;
    } else {
        s.knobs["stage"] = 0;
    }
    const long long tiles =
        1LL * w.n * w.c * (R >= 3 ? w.out(0) : 1) * ceil_div(out_y, tile_y) * ceil_div(out_x, tile_x);
    s.knobs["vec"] = vec;
    s.knobs["tile_x"] = tile_x;
    s.knobs["tile_y"] = tile_y;
    s.knobs["threads"] = block_threads(tiles);
    s.why = w.adaptive
                ? "heuristic: adaptive windows, one output per thread"
                : fmt::format("heuristic: {}x{} outputs per thread{}, window in registers in {}-element loads", tile_x,
                              tile_y, s.knobs.count("guard_x") ? " (the row's last tile guarded)" : "", vec);
    return s;
}

// GPU: a 16-byte vector of d per thread where d allows, eight tokens in flight per step.
ScheduleChoice pool_heuristic(const MeanPoolingWorkload &w, Device device) {
    ScheduleChoice s;
    const int elem = dtype_bytes(w.dtype);
    if (device == Device::cpu) {
        s.knobs = {{"cpu_vec", 8}};
        s.why = "heuristic: 8 lanes along d";
        return s;
    }
    int vec = 16 / elem;
    while (vec > 1 && w.d % vec) vec /= 2;
    const long long threads = 1LL * w.b * w.chunks() * w.h * ceil_div(w.d, vec);
    s.knobs = {{"tile_x", vec}, {"unroll", std::min(8, w.chunk)}, {"threads", block_threads(threads)}};
    s.why = fmt::format("heuristic: {} elements of d per thread", vec);
    return s;
}

}  // namespace blockfuse
