#include "schedules/heuristics.h"
#include "schedules/block_knobs.h"
#include "schedules/gemm_knobs.h"
#include "runtime/mma_ptx.h"
#include "schedules/stem_knobs.h"
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include <thread>

namespace blockfuse {
namespace {

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// The widest channel vector (8, 4, else 1) that divides every count. Half-precision vectors need
// it on the GPU: unaligned f16 vectors were wrong through Halide 21's PTX backend on the H200.
int vector_width(std::initializer_list<int> counts) {
    for (int v : {8, 4})
        if (std::all_of(counts.begin(), counts.end(), [v](int c) { return c % v == 0; })) return v;
    return 1;
}

// Input channels per unrolled step of the reduction (4, 2, else 1), dividing every count.
int channel_step(const std::vector<int> &counts) {
    for (int u : {4, 2})
        if (std::all_of(counts.begin(), counts.end(), [u](int c) { return c % u == 0; })) return u;
    return 1;
}

void set_mapping(ScheduleChoice &s, const std::string &prefix, const std::map<std::string, int> &knobs) {
    for (const auto &[k, v] : knobs) s.knobs[prefix + k] = v;
}

// The flat mapping of a depthwise k x k layer (one input channel per output): vec channels x tx x ty
// outputs per thread, whole warps per block. 3x3: 4 x 4x4 in 64-thread blocks; 5x5: 4 x 2x4 in 128
// (H200, C=144 56x56 / C=240 28x28, f16, N=128: 74 and 65 us, docs/depthwise.md); 7x7: 1x4 columns
// in 128 (4 x 2x2 spilled at 255 registers). Tiles shrink to the output (edge tiles shift inwards).
std::map<std::string, int> depthwise_mapping(const Conv2dWorkload &l) {
    const int k = std::max(l.r, l.s);
    int tx = 4, ty = 4, threads = 64;
    if (k >= 7) {
        tx = 1, threads = 128;
    } else if (k >= 5) {
        tx = 2, threads = 128;
    }
    return {{"vec_k", vector_width({l.c}) >= 4 ? 4 : 1},
            {"flat_threads", threads},
            {"tile_x", std::min(tx, l.out_w())},
            {"tile_y", std::min(ty, l.out_h())}};
}

// The flat mapping shared by a set of 1x1 layers (a block's expand and project, or one conv2d): 8
// channels x 7 pixels per thread where the image allows (1x7 columns or 7x1 rows: 56 accumulators), the
// block size (32, 64 or 128 threads) that leaves the fewest idle lanes over the layers' rows of
// (channel vector, x tile) pairs, weighted by their flops, and the pixels computed past the image.
// (H200, f16, N=128: the MBConv 1x1 layers at 8 x 1x7 in 32-thread blocks, 0.32 ms for c=24 56x56; the
// wide blocks' at 8 x 7x1 in 64: 43-47% of the FFMA ceiling; docs/layer-by-layer.md.)
std::map<std::string, int> pointwise_mapping(const std::vector<Conv2dWorkload> &layers) {
    std::vector<int> channels, in_channels;
    int min_w = 1 << 30, min_h = 1 << 30;
    bool strided = false;
    for (const auto &l : layers) {
        channels.push_back(l.c);
        channels.push_back(l.k);
        in_channels.push_back(l.c);
        min_w = std::min(min_w, l.out_w());
        min_h = std::min(min_h, l.out_h());
        strided |= l.stride_h != 1 || l.stride_w != 1;
    }
    int vec = 8;
    for (int c : channels)
        while (vec > 1 && c % vec) vec = vec == 8 ? 4 : 1;
    const int step = channel_step(in_channels);
    static const std::pair<int, int> tiles[] = {{1, 7}, {7, 1}, {4, 2}, {2, 2}, {2, 1}, {1, 2}, {1, 1}};
    double best = -1;
    std::map<std::string, int> out;
    for (auto [tx, ty] : tiles) {
        if (tx > min_w || ty > min_h) continue;
        for (int threads : {64, 32, 128}) {
            double score = 0, total = 0;
            for (const auto &l : layers) {
                const long long row = ceil_div(l.k, vec) * ceil_div(l.out_w(), tx);
                const double lanes = double(row) / double(ceil_div(row, threads) * threads);
                const double computed = double(ceil_div(l.out_w(), tx) * tx) * double(ceil_div(l.out_h(), ty) * ty);
                const double flops = double(l.k) * l.c * l.out_w() * l.out_h();
                score += flops * lanes * (double(l.out_w()) * l.out_h() / computed);
                total += flops;
            }
            score /= total;
            if (score > best + 1e-9) {
                best = score;
                out = {{"vec_k", vec}, {"flat_threads", threads}, {"tile_x", tx}, {"tile_y", ty}};
            }
        }
        if (best > 0) break;  // the largest register tile the images allow
    }
    if (step > 1) {
        out["unroll_channels"] = step;
        // each step's channels loaded into registers as one vector per pixel (the 1x1 window)
        if (!strided) out["stage_channels"] = 1;
    }
    return out;
}

// A dense k x k layer (one group): with a static square window, stride 1 and channels in steps of 4,
// 8 channels x 4x2 pixels per thread on an 8 x 8 block whose input tile + halo is staged in shared
// memory, each step's 4 channels in registers (H200, Conv3x3-BN-ReLU C=K=64 N=128: 1.17 ms, 39% of
// FFMA); from global memory where the tile would not fit in 48 KB, or with stride 2.
std::map<std::string, int> dense_mapping(const Conv2dWorkload &l) {
    const bool square = l.r == l.s && l.stride_h == l.stride_w && l.dil_h == 1 && l.dil_w == 1;
    const int step = channel_step({l.c / l.groups});
    if (!square || l.groups != 1 || step < 2 || vector_width({l.c, l.k}) < 8 || l.r == 1) return {};  // the 2-D default
    std::map<std::string, int> m{
        {"vec_k", 8}, {"threads_k", 8}, {"unroll_channels", l.r >= 5 ? 2 : step}, {"stage_channels", 1}};
    if (l.stride_h == 1) {
        m.insert({{"threads_x", 8}, {"tile_x", 4}, {"tile_y", 2}});
        if (staged_tile_bytes(l.c, 8 * 4, 2, 1, l.r, 1) <= 48 * 1024) m["stage_input"] = 2;
    } else {
        m.insert({{"threads_x", 16}, {"tile_x", 2}, {"tile_y", 2}});
    }
    return m;
}

// A layer's mapping by its kind; half-precision channel vectors only where the input and output
// channel counts keep every vector aligned (else one channel per thread, 64 threads along K).
std::map<std::string, int> layer_mapping_for(const Conv2dWorkload &l, DType dtype) {
    std::map<std::string, int> m;
    switch (l.kind()) {
    case ConvKindTag::depthwise:
        if (l.k == l.c && l.r == l.s) m = depthwise_mapping(l);
        break;
    case ConvKindTag::pointwise: m = pointwise_mapping({l}); break;
    case ConvKindTag::general: m = dense_mapping(l); break;
    }
    const int vec = m.count("vec_k") ? m["vec_k"] : Conv2dGpuKnobs{}.vec_k;
    if (dtype != DType::f32 && vec > 1 && (l.c % vec || l.k % vec)) {
        m["vec_k"] = 1;
        if (!m.count("flat_threads")) m["threads_k"] = 64;
    }
    return m;
}

// The CPU register tile of one layer. f32 lanes: one AVX-512 register where the host has it, else
// AVX's 8. A dense or 1x1 layer keeps vec_k vectors of output channels x tile pixels of accumulators,
// about three quarters of the vector registers (24 of AVX-512's 32, 12 of AVX2's 16; the rest: the
// step's weight vectors and the broadcast input), at least 4 pixels a tile, the channel vectors chosen
// to divide K where they can (a partial last tile is recomputed in part). On an AVX2 host (AMD EPYC,
// 2 cores, 2026-12-03) 24 accumulators spilled: 3x3 C=K=64 28x28 N=2 f32 1.72 ms, against 0.78 for the
// tuner's 10 (bench/results/cpu/avx2/). A depthwise layer
// one vector of channels x 4 pixels, its window unrolled, reading the input directly (staging it
// cost 1.4x in the tuner on dw3x3 c=144 28x28 n=8); a grouped layer one vector of channels within
// one group where the group's width allows (its lanes then share one broadcast input value: 2.4 ms
// against 18.8 with four 16-lane vectors spanning 8 groups, 3x3 c=128 k=256 g=32 28x28), the window
// innermost. Rows per task: enough tasks for every core several times over.
std::map<std::string, int> cpu_mapping(const Conv2dWorkload &l) {
    const bool avx512 = host_target().find("avx512") != std::string::npos;
    int lanes = avx512 ? 16 : 8;
    const int accumulators = (avx512 ? 32 : 16) * 3 / 4;
    const int ow = l.out_w(), oh = l.out_h();
    int vec_k = 1, tx = 1, ty = 1, window_inner = 0, stage_input = 1;
    if (l.kind() == ConvKindTag::depthwise) {
        tx = std::min(4, ow);
        stage_input = 0;
    } else if (l.groups > 1) {
        const int per_group = l.k / l.groups;
        if (per_group % lanes && per_group % 8 == 0) lanes = 8;
        tx = std::min(4, ow);
        window_inner = 1;
    } else {
        for (int v : {4, 3, 2, 1})
            if ((accumulators / v >= 4 || v == 1) && l.k >= v * lanes && (l.k % (v * lanes) == 0 || v == 1)) {
                vec_k = v;
                break;
            }
        const int budget = accumulators / vec_k;  // pixels per tile
        // the widest row of pixels within the budget that wastes the fewest columns, then rows
        double best = -1;
        for (int x = 1; x <= std::min(budget, ow); ++x) {
            const double use = double(ow) / double(ceil_div(ow, x) * x) * x;
            if (use > best + 1e-9) best = use, tx = x;
        }
        ty = std::max(1, std::min(budget / tx, std::min(oh, 4)));
    }
    const long long tile_rows = ceil_div(oh, ty);
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    int rows = 1;
    while (rows < 8 && ceil_div(tile_rows, rows * 2) * l.n >= 4LL * cores) rows *= 2;
    return {{"cpu_lanes", lanes},
            {"cpu_vec_k", vec_k},
            {"cpu_tile_x", tx},
            {"cpu_tile_y", ty},
            {"cpu_rows", rows},
            {"cpu_unroll_c", 1},
            {"cpu_window_inner", window_inner},
            {"cpu_stage_input", stage_input}};
}

// The share of a convolution's taps, over every output pixel, that fall in its zero padding.
double padding_tap_share(const Conv2dWorkload &w) {
    auto inside = [](int outs, int size, int taps, int stride, int dil, int pad) {
        long long n = 0;
        for (int o = 0; o < outs; ++o)
            for (int t = 0; t < taps; ++t) {
                const int at = o * stride + t * dil - pad;  // the input row or column the tap reads
                n += at >= 0 && at < size;
            }
        return double(n) / (double(outs) * taps);
    };
    return 1 - inside(w.out_h(), w.h, w.r, w.stride_h, w.dil_h, w.pad_t) *
                   inside(w.out_w(), w.w, w.s, w.stride_w, w.dil_w, w.pad_l);
}
}  // namespace

ScheduleChoice conv2d_heuristic(const Conv2dWorkload &w, Device device) {
    ScheduleChoice s;
    if (device == Device::cpu) {
        s.knobs = cpu_mapping(w);
        s.why = fmt::format("heuristic: {} x {} lanes along K x {}x{} pixels", s.knobs["cpu_vec_k"],
                            s.knobs["cpu_lanes"], s.knobs["cpu_tile_x"], s.knobs["cpu_tile_y"]);
        // A quarter or more of the taps in the padding: the window bounded to the image per tile (cpu_trim_window).
        // 2-core AMD EPYC, f32 (bench/results/cpu/trim-window/), deeplabv3-aspp (44% of its taps in the padding), two
        // alternated passes: 1.25-1.30x on its record's tiling (72.2 / 81.7 -> 57.7 / 62.8 ms), 1.42-1.47x on 4 x 2
        // pixels of 3 vectors (75.5 / 77.5 -> 53.2 / 52.6).
        if (w.kind() != ConvKindTag::pointwise && padding_tap_share(w) >= 0.25) {
            s.knobs["cpu_trim_window"] = 1;
            s.why += ", the padding's taps skipped";
        }
        return s;
    }
    s.knobs = layer_mapping_for(w, w.dtype);
    if (w.kind() == ConvKindTag::depthwise && !s.knobs.empty()) {
        s.max_registers = 128;  // as many warps as the taps' registers allow
        s.why = "heuristic: depthwise, flat mapping";
    } else if (w.kind() == ConvKindTag::pointwise) {
        s.why = "heuristic: 1x1, flat mapping sized to the rows";
    } else {
        s.why = s.knobs.count("stage_channels") ? "heuristic: dense k x k, channel steps in registers"
                                                : "heuristic: the 2-D default mapping";
    }
    return s;
}

namespace {

// The fused GPU mapping of one block: the hidden width in chunks of 8, 16 or 32 channels, the smallest that
// keeps the chunk loop (a barrier and a weight copy per step) within 32 steps, produced 4 or 8 channels per
// thread; each chunk stored as the next layer's padded f32 view with its weights staged in shared memory,
// the full-width layers' weights too (ConvFirst's grouped 3x3, ConvNeXt's 7x7), the expand's input pixel
// in registers (H200, f16, N=128: MBConv c=24 56x56 0.52 ms at 56x8 tiles and chunk 8; docs/fused-blocks.md).
// Where a full-width layer's 5x5 or larger taps are unrolled per thread (ConvNeXt's depthwise 7x7), the
// expand's input stays in shared memory (its 8-wide vectors in registers spill 3 KB a thread at the 128 cap),
// each thread makes 4 output channels and the chunk is 32 (H200, ConvNeXt c=96 56x56 N=128: 17.3 ms against
// 46.6 with input vectors, 2 channels and chunk 16; bench/results/h200/convnext-fused-knobs/). The tile maximizes the useful share of the
// pixels computed (each tile computes its hidden layers on the tile grown by their halos) times the square
// root of how well the tiles fill 2 x 132 SMs, among those whose threads (the fewest output channels per
// thread that keep them within the limit) and shared memory fit. The register cap: 64 keeps two blocks
// per SM; 128 where a full-width layer's 5x5 or larger taps are unrolled per thread.
ScheduleChoice fused_gpu(const BlockWorkload &w, int blocks, long long shared_budget) {
    const BlockSpec spec = w.spec();
    const bool depth_first = blocks > 1;
    // Channel vectors of 2 only in f32: 2-wide f16 vectors were wrong through Halide 21's PTX backend.
    const bool f32 = w.dtype == DType::f32;
    // The full-width layers before the hidden ones (ConvFirst's grouped k x k, ConvNeXt's depthwise): their
    // weights are staged once per tile too where they take at most a quarter of the shared memory.
    long long full_weight_bytes = 0;
    int full_ks = 0;
    for (size_t i = 0; i + 1 < spec.layers.size(); ++i)
        if (!spec.layers[i].hidden) {
            const LayerSpec &l = spec.layers[i];
            full_weight_bytes += 4LL * shared_pad8(l.out_ch) * (l.in_ch / l.groups) * l.ks * l.ks;
            full_ks = std::max(full_ks, l.ks);
        }
    const bool stage_full = full_ks > 0 && full_weight_bytes <= shared_budget / 4;
    const bool wide_full_taps = full_ks >= 5;
    int input_vec = 0;
    for (int v : {8, 4, f32 ? 2 : 0}) {
        if (wide_full_taps) break;
        if (!v) break;
        bool ok = true;
        for (const auto &l : spec.layers)
            if (pointwise_hidden_layer(l) && l.in_ch % v) ok = false;
        if (ok) {
            input_vec = v;
            break;
        }
    }
    int full_vec = 4;
    for (size_t i = 0; i + 1 < spec.layers.size(); ++i)
        if (!spec.layers[i].hidden)
            while (full_vec > 1 && (spec.layers[i].out_ch % full_vec || (full_vec == 2 && !f32))) full_vec /= 2;
    const int stage_weights = depth_first ? 0 : stage_full ? 2 : 1, stage_padded = depth_first ? 0 : 1;
    const long long out_w = w.out_w(), out_h = w.out_h();
    static const std::pair<int, int> tiles[] = {{56, 8},  {28, 16}, {28, 14}, {32, 8}, {32, 4}, {16, 8},
                                                {14, 14}, {16, 4},  {14, 7},  {8, 8},  {8, 4},  {7, 7},
                                                {4, 4},   {4, 2},   {2, 2},   {2, 1},  {1, 1}};
    struct Tile {
        int x = 0, y = 0, vec = 1;
        double score = -1;
        long long need = 0;  // the least shared memory a tile asked for, where none fits
    };
    // Output channels per thread: the fewest that fit, 4 first under wide full-width taps (above).
    const std::array<int, 3> vec_order = wide_full_taps ? std::array<int, 3>{4, 2, 8} : std::array<int, 3>{2, 4, 8};
    auto best_tile = [&](int chunk) {
        Tile best;
        for (auto [tx, ty] : tiles) {
            int vec = 0;
            for (int v : vec_order)
                if (spec.cout % v == 0 &&
                    fused_kernel_threads(spec.cout, v, tx, spec.has_se(), chunk) <= kHeuristicMaxThreads) {
                    vec = v;
                    break;
                }
            if (!vec && spec.cout % 2 &&
                fused_kernel_threads(spec.cout, 1, tx, spec.has_se(), chunk) <= kHeuristicMaxThreads)
                vec = 1;
            const long long shared = fused_block_shared_bytes(spec, tx, ty, chunk, dtype_bytes(w.dtype), blocks,
                                                              stage_weights, stage_padded != 0);
            if (!vec || shared > shared_budget) {
                best.need = best.need ? std::min(best.need, shared) : shared;
                continue;
            }
            long long rx = tx, ry = ty;  // the region the first layer computes per tile
            for (int b = 0; b < blocks; ++b) grow_through_layers(spec, rx, ry);
            const double tiles_per_image = double(ceil_div(out_w, tx)) * double(ceil_div(out_h, ty));
            const double useful = double(out_w * out_h) / (tiles_per_image * double(rx * ry));
            const double fill = std::min(1.0, tiles_per_image * w.n / 264.0);
            const double score = useful * std::sqrt(fill);
            if (score > best.score + 1e-9) best = {tx, ty, vec, score, best.need};
        }
        return best;
    };
    // The chunk: the smallest of 8, 16, 32 that keeps the chunk loop within 32 steps, smaller again where
    // its staged weights would leave no tile of 32 pixels (or the whole image) in shared memory.
    int want = 8;
    while (want < 32 && spec.hidden > 32 * want) want *= 2;
    if (depth_first) want = std::max(want, 16);
    if (wide_full_taps) want = 32;
    int chunk = 0;
    Tile tile;
    for (int c = want; c >= 8 || !chunk; c /= 2) {
        chunk = effective_chunk(spec.hidden, std::max(c, 1));
        tile = best_tile(chunk);
        if (tile.x && (tile.x * tile.y >= 32 || tile.x * tile.y >= out_w * out_h || c <= 8)) break;
        if (c <= 1) break;
    }
    if (!tile.x)
        throw WorkloadError(fmt::format("{} for {}: the smallest tile needs {} bytes of shared memory per block, more "
                                        "than the {} the generated kernels may use",
                                        depth_first ? "depth_first" : "fused", to_key(w), tile.need, shared_budget));
    int hidden_vec = chunk >= 16 && chunk % 8 == 0 ? 8 : chunk % 4 == 0 ? 4 : chunk % 2 == 0 && f32 ? 2 : 1;
    while (hidden_vec > 1 &&
           !depth_first_one_point_per_thread(spec, blocks, tile.x, tile.y, tile.vec, chunk, hidden_vec).empty())
        hidden_vec = hidden_vec == 4 && f32 ? 2 : hidden_vec == 8 ? 4 : 1;
    ScheduleChoice s;
    s.knobs = {{"vec_k", tile.vec}, {"tile_x", tile.x},         {"tile_y", tile.y},
               {"chunk", chunk},    {"hidden_vec", hidden_vec}, {"full_vec", full_vec}};
    if (stage_weights) s.knobs["stage_weights"] = stage_weights;
    if (stage_padded) s.knobs["stage_padded"] = 1;
    if (input_vec && !depth_first) s.knobs["input_vec"] = input_vec;
    s.max_registers = depth_first || full_ks >= 5 ? 128 : 64;
    s.why = fmt::format("heuristic: {}x{} tiles (the most useful pixels per pixel computed), chunk {}", tile.x, tile.y,
                        chunk);
    return s;
}

}  // namespace

namespace {
// Hopper's wgmma tiling of a GEMM where it measured faster than mma.sync, else none (below gemm_heuristic).
// min_k: the shortest reduction measured faster there (a GEMM's and a block layer's differ, below).
std::optional<std::map<std::string, int>> hopper_wgmma_tiling(const GemmWorkload &w, Device device, long long min_k);
// Hopper's wgmma tiling of a dense convolution's implicit GEMM (below conv2d_tc_heuristic).
std::optional<std::map<std::string, int>> hopper_conv_wgmma_tiling(const GemmWorkload &g, Device device, int channels);
enum class WideTiles { allowed, not_in_blocks };
std::map<std::string, int> tensor_core_tiling(long long M, long long N, long long K, Device device,
                                              WideTiles wide = WideTiles::allowed);
}  // namespace

std::string depth_first_one_point_per_thread(const BlockSpec &spec, int blocks, int tile_x, int tile_y, int vec_k,
                                             int chunk, int hidden_vec) {
    const long long threads = fused_block_threads(spec.cout, vec_k, tile_x);
    const long long vectors = effective_chunk(spec.hidden, chunk) / std::max(hidden_vec, 1);
    // Block b's output region: the tile grown through the blocks after b (once per block, not per layer).
    std::vector<std::pair<long long, long long>> region(std::max(blocks, 1), {tile_x, tile_y});
    for (int b = blocks - 2; b >= 0; --b) {
        region[b] = region[b + 1];
        grow_through_layers(spec, region[b].first, region[b].second);
    }
    for (int b = 0; b + 1 < blocks; ++b) {
        for (size_t i = 0; i < spec.layers.size(); ++i) {
            if (!spec.layers[i].hidden) continue;
            auto [rx, ry] = region[b];  // then grown through b's layers after i
            grow_through_layers(spec, rx, ry, i + 1);
            if (vectors * rx * ry == threads)
                return fmt::format("depth_first: block {}'s hidden layer {} has one point per thread ({} chunk vectors "
                                   "x {}x{} pixels = {} threads), which Halide 21 does not build",
                                   b, i, vectors, rx, ry, threads);
        }
    }
    return "";
}

ScheduleChoice block_heuristic(const BlockWorkload &w, const std::string &strategy, Device device) {
    if (strategy == "depth_first" && w.blocks < 2)
        throw WorkloadError("depth_first needs a stage (blocks >= 2): " + to_key(w));
    if (strategy == kLayerByLayerTc) {
        if (w.dtype == DType::f32)
            throw WorkloadError(std::string(kLayerByLayerTc) + " needs f16 or bf16: " + to_key(w));
        ScheduleChoice s;
        const BlockSpec spec = w.spec();
        const auto layers = w.layers();
        // Grouped layers on their CUDA-core mapping (tc_grouped 0: on the H200 each of a tuner round's 1-3 draws of
        // the block-diagonal GEMM per ConvFirst row ran the block 2-7x slower; on the H100 that GEMM on this tiling
        // ran ConvFirst c=128 and c=256 0.76-0.85x as fast, c=64 level, bench/results/h100/block-dense-wgmma/), with
        // that GEMM's tiling beside it for the tuner's tc_grouped = 1.
        bool gemm_on_wgmma = false;
        for (size_t i = 0; i < layers.size(); ++i) {
            if (spec.layers[i].groups > 1)  // depthwise, grouped: their CUDA-core mapping
                set_mapping(s, "layer_",
                            device == Device::cpu ? cpu_mapping(layers[i]) : layer_mapping_for(layers[i], w.dtype));
            if (!tensor_core_capable_layer(spec.layers[i])) continue;
            const GemmWorkload g = implicit_gemm_of(layers[i]);
            const bool plain_gemm = spec.layers[i].ks == 1 && spec.layers[i].stride == 1 && spec.layers[i].groups == 1;
            // a 1x1 layer is a GEMM; on wgmma from K = 128. Unstaged, a K = 128-256 layer there ran level with or
            // behind mma.sync (bench/results/h100/tc-tune/); with the epilogue staged it is ahead: H100, N=128, the
            // blocks by their staged records 0.1177 / 0.1959 / 0.2845 ms, with that layer on the staged wgmma tiling
            // too 0.1001 / 0.1680 / 0.2746 (FFN c=256, ConvFirst c=256 / 128; bench/results/h100/stage-c/records/).
            // f16 only: no bf16 block was measured with it.
            // A dense k x k layer (FusedMBConv's expand) is the dense convolution's kernel (conv2d_tc) and takes its
            // Hopper tiling (hopper_conv_wgmma_tiling). H100, FusedMBConv N=128 (bench/results/h100/block-dense-wgmma/,
            // four passes in two runs): c=48 56x56 0.579-0.595 ms against 0.954-0.977 on the mma.sync tiling
            // (1.64-1.68x), c=64 28x28 1.12-1.24x, c=24 stride 2 at N=8 1.22-1.32x.
            const auto hopper = plain_gemm && w.dtype == DType::f16 ? hopper_wgmma_tiling(g, device, 128)
                                : !plain_gemm && spec.layers[i].groups == 1
                                    ? hopper_conv_wgmma_tiling(g, device, spec.layers[i].in_ch)
                                    : std::nullopt;
            const std::map<std::string, int> tiling =
                hopper                      ? *hopper
                : spec.layers[i].groups > 1 ? conv2d_tc_heuristic(layers[i], device).knobs
                                            : tensor_core_tiling(g.m, g.n, g.k, device, WideTiles::not_in_blocks);
            for (const auto &[k, v] : tiling) s.knobs[tensor_core_prefix(i) + k] = v;
            gemm_on_wgmma = gemm_on_wgmma || (plain_gemm && hopper);
        }
        // FFN and ConvFirst with their 1x1 layers on wgmma (8-warp blocks): at 128 registers two blocks share an SM,
        // where the default cap (255 for 256 threads) leaves one. These knobs at 0 against 128: FFN c=256 N=128
        // 0.1180-0.1204 against 0.0892-0.0901 ms (H100, each pair in one run, three runs), 0.1186 against 0.1023
        // (H200, one run); ConvFirst c=128 0.321 against 0.2723, c=256 0.1879 against 0.1551 at 96 (H200, two
        // consecutive runs on one machine; 168 in another run: 0.2737, 0.1778) (bench/results/h200/dense-wgmma-round/,
        // stage-c-records/; h100/tc-tune-round-2/, tc-tune-round-3/, block-dense-wgmma/). ConvFirst c=64, whose 1x1
        // layers stay on mma.sync, ran level at 168 and 0.74x at 128 on another grouped mapping: no cap there.
        if ((w.family == BlockFamily::ffn || w.family == BlockFamily::convfirst) && gemm_on_wgmma)
            s.max_registers = 128;
        s.why = "heuristic: each dense layer's tensor-core tiling from its implicit GEMM, the others' mapping from "
                "their shape";
        return s;
    }
    if (strategy == kFusedTc) {
        const BlockSpec spec = w.spec();
        if (!fused_tc_serves(w))
            throw WorkloadError(
                std::string(kFusedTc) +
                " builds FFN, FusedMBConv, ConvFirst and ConvNeXt blocks (and stages of them) with channels divisible "
                "by 16 and MBConv blocks without SE with channels divisible by 8, f16 or bf16: " +
                to_key(w));
        if (w.family == BlockFamily::mbconv) {
            // The H200's two tuner rounds (bench/results/h200/mbconv-tc/): chunks of 16 on 2 warps where the output
            // has up to 48 channels (c=24 56x56 N=128 0.232 ms on 8x14 tiles against 0.307 on the 8x8 tiles, chunks
            // of 48 and 4 warps first tried; c=16 112x112 0.506 on 14x14), chunks of 32 on 4 warps above (c=80
            // 14x14 0.084-0.088 on 7 or 8 x 14 or 16). Tiles of two rows of 7 or 8 pixels: 7 or 8 across,
            // whichever wastes fewer of the output (8 on a tie), 14 or 16 down (14 on a tie); fewer rows, then 8
            // warps, then chunks of 16, where the accumulators do not fit (below).
            // Accumulators a thread the heuristic allows (the knob check's 176 is what fits at all): the tuned
            // kernels hold 104 at most; 152 (c=40 k=5 on 7x14 tiles, 2 warps) spilled beside the 25-tap window, as
            // did 2 warps on 7x7 tiles and 4 on 7x14 (windows past 3x3: one row of 7 or 8 on 4 warps, 161 registers).
            constexpr int kHeuristicAccumulators = 128;
            auto side = [](int out, int a, int b) {
                auto waste = [out](int t) { return ceil_div(out, t) * t - out; };
                return out <= a ? out : waste(a) < waste(b) ? a : b;
            };
            const LayerSpec &dw = spec.layers[1];
            const int ow = (w.w - 1) / dw.stride + 1, oh = (w.h - 1) / dw.stride + 1;
            const bool narrow = spec.cout <= 48;
            BlockKnobs kn;
            kn.tile_x = side(ow, 7, 8);
            kn.tc_prefetch = 0;
            [&] {  // the first tiling in this order that fits
                // Chunks of 16 first for windows past 3x3 too: c=112 k=5 14x14 with chunks of 32 spilled 300-344
                // bytes at 255 registers in ptxas -arch=sm_90 (7x7 and 7x1 tiles), with chunks of 16 none (202).
                for (int limit : {kHeuristicAccumulators, kFusedTcMaxAccumulators})
                    for (int chunk : {narrow || dw.ks > 3 ? 16 : 32, 16})
                        for (int warps : {narrow && dw.ks <= 3 ? 2 : 4, 8})
                            for (int rows : {dw.ks <= 3 ? side(oh, 14, 16) : side(oh, 7, 8), side(oh, 7, 8), 1}) {
                                kn.chunk = chunk, kn.tc_warps = warps, kn.tile_y = rows;
                                if (fused_tc_error(spec, kn).empty() &&
                                    mbconv_tc_geometry(spec, kn).accumulators() <= limit)
                                    return;
                            }
            }();
            // Fewer than 4 warps an SM of the 132 (c=24 N=8 at 56x56: 224 tiles of 8x14 on 2 warps): columns of 4,
            // twice the thread blocks (the H200's record for that block, 4x14 tiles: 0.0228 ms; each block of a stage
            // on 8x14 tiles: 0.042-0.045; c=80 N=128 14x14, 256 tiles on 4 warps, stays on 7x14).
            const long long tiles = 1LL * w.n * ceil_div(ow, kn.tile_x) * ceil_div(oh, kn.tile_y);
            if (tiles * kn.tc_warps < 4 * 132 && kn.tile_x > 4) kn.tile_x = 4;
            ScheduleChoice s;
            s.knobs = {{"chunk", kn.chunk},
                       {"tc_warps", kn.tc_warps},
                       {"tile_x", kn.tile_x},
                       {"tile_y", kn.tile_y},
                       {"tc_prefetch", 0}};
            s.why = "heuristic: fused_tc MBConv's tile from the output image, its chunk and warps from the output "
                    "channels";
            return s;
        }
        if (w.family == BlockFamily::fused_mbconv) {
            // The H200's tuner records (bench/results/h200/fused-mbconv-tc/): 8 warps of 16 pixels, chunks of 32,
            // the next chunk's weights prefetched, the mma.sync register floor (168), one thread block an SM by
            // shared memory (its im2col rows hold k k C elements a pixel, 880 bytes at c=48 3x3: 145 KB): c=48
            // 56x56 N=128 0.545 ms, c=64 28x28 0.206, against 0.624 and 0.298 on 4 or 2 warps with chunks of 32 or
            // 16 under half an SM's shared memory. Fewer warps, then chunks of 16, where the rows do not fit one
            // SM; 2 warps where the pixels are few (as the FFN's, below).
            constexpr long long kOneBlockPerSm = 227 * 1024;
            const long long pixels = 1LL * w.n * w.out_h() * w.out_w();
            BlockKnobs kn;
            kn.tc_warp_m = 16, kn.tc_prefetch = 1;  // in registers: no shared memory
            [&] {
                for (int warps : {pixels / 128 < 132 ? 2 : 8, 4, 2, 1})
                    for (int chunk : {32, 16}) {
                        kn.tc_warps = warps, kn.chunk = chunk;
                        if (fused_tc_error(spec, kn).empty() && fused_tc_shared_bytes(spec, kn) <= kOneBlockPerSm)
                            return;
                    }
            }();
            ScheduleChoice s;
            s.knobs = {{"chunk", kn.chunk}, {"tc_warps", kn.tc_warps}, {"tc_warp_m", 16}, {"tc_prefetch", 1}};
            s.max_registers = mma_ptx::kMinRegisters;  // the least a tensor-core module JITs with
            s.why = "heuristic: fused_tc FusedMBConv's warps and chunk from its im2col rows' shared memory";
            return s;
        }
        // The H200's tuner rounds on FFN c=256 (bench/results/h200/ffn-tc/): chunks of 64 hidden channels, 8 warps
        // of 16 pixels (one 128-pixel block per SM): 0.161 ms at N=128 (0.232 on 4 warps with chunks of 32); where
        // 128-pixel blocks leave SMs idle (N=8: 1568 pixels), 2 warps (0.070 ms, the best 0.064). Smaller chunks where
        // 64 does not divide the hidden width, or past the accumulator budget. No prefetch: its 64 registers a thread
        // for the next chunk spill in the kernel's general entry (tails) at 8 warps; the tuned record prefetches where
        // it measured faster (0.155 ms).
        ScheduleChoice s;
        const long long pixels = 1LL * w.n * w.h * w.w;
        int chunk = 16;
        for (int c : {64, 32})
            if (spec.hidden % c == 0 && fused_tc_accumulators(spec, 16, c) <= kFusedTcMaxAccumulators) {
                chunk = c;
                break;
            }
        // ConvFirst: 4 warps (its grouped layer runs before the FFN in each block; the H200's tuner rounds,
        // bench/results/h200/convfirst-tc/: c=64 N=128 0.451 ms on 4 warps, 0.509 on 8; c=256 0.260 and 0.273; N=8
        // 0.038 and 0.052; c=128 the exception, 0.335 and 0.318).
        // ConvNeXt likewise (its depthwise 7x7 and LayerNorm before the FFN).
        const int many = w.family == BlockFamily::convfirst || w.family == BlockFamily::convnext ? 4 : 8;
        s.knobs = {
            {"chunk", chunk}, {"tc_warps", pixels / 128 < 132 ? 2 : many}, {"tc_warp_m", 16}, {"tc_prefetch", 0}};
        s.why = "heuristic: fused_tc's chunk from the hidden width, its warps from the pixels";
        return s;
    }
    if (device == Device::cpu) {
        // fused and depth-first on the CPU read tile_x, tile_y and chunk; layer by layer each layer's CPU
        // mapping by its shape (the 1x1 layers share one: that of the layer with the most flops)
        ScheduleChoice s;
        s.knobs = {{"chunk", effective_chunk(w.spec().hidden, 8)}};
        if (strategy == "layer_by_layer") {
            std::map<LayerMapping, std::pair<double, Conv2dWorkload>> heaviest;
            for (const auto &l : w.layers()) {
                auto &h = heaviest[layer_mapping(l.r, l.groups)];
                if (conv2d_flops(l) > h.first) h = {conv2d_flops(l), l};
            }
            for (const auto &[m, h] : heaviest) set_mapping(s, knob_prefix(m), cpu_mapping(h.second));
        }
        s.why = "heuristic: the CPU defaults, each layer's register tile from its shape";
        return s;
    }
    if (strategy != "layer_by_layer") {
        ScheduleChoice s = fused_gpu(w, strategy == "depth_first" ? w.blocks : 1,
                                     device == Device::opencl ? kOpenClSharedBytes : kHeuristicSharedBytes);
        // OpenCL (PoCL's CPU device): an SE block's kernels on tiles more than one pixel wide and high come out wrong
        // on some small-channel shapes under PoCL's optimizer, right with -cl-opt-disable (docs/correctness.md);
        // tiles one row high passed on every shape tried. The weights are read where used.
        if (device == Device::opencl && w.spec().has_se()) {
            s.knobs["tile_y"] = 1;
            s.knobs.erase("stage_weights");
            s.why += ", tiles one row high, weights not staged (SE on OpenCL)";
        }
        return s;
    }
    ScheduleChoice s;
    std::vector<Conv2dWorkload> pointwise;
    int depthwise_k = 0;
    for (const auto &l : w.layers()) {
        switch (layer_mapping(l.r, l.groups)) {
        case LayerMapping::pointwise: pointwise.push_back(l); break;
        case LayerMapping::full: set_mapping(s, "full_", layer_mapping_for(l, w.dtype)); break;
        case LayerMapping::layer:  // depthwise (flat), or grouped (the 2-D default)
            set_mapping(s, "layer_", layer_mapping_for(l, w.dtype));
            if (l.kind() == ConvKindTag::depthwise) depthwise_k = l.r;
            break;
        }
    }
    if (!pointwise.empty()) set_mapping(s, "pw_", pointwise_mapping(pointwise));
    // A 5x5 or larger depthwise layer took 229 registers uncapped (MBConv c=40, H200) and ran 2.5%
    // faster at 128, with more warps per SM.
    if (depthwise_k >= 5) s.max_registers = 128;
    s.why = "heuristic: each layer's mapping from its shape";
    return s;
}

ScheduleChoice stem_heuristic(const StemWorkload &w, const std::string &strategy, Device device) {
    ScheduleChoice s;
    s.why = "heuristic: the stem defaults";
    if (device == Device::cpu || strategy != "depth_first") return s;
    // Each producing thread reuses its pixel's 27 inputs for conv_vec channels (H200, N=128 224x224:
    // 0.87 ms at 16 against 3.28 at 1).
    int conv_vec = 16;
    while (conv_vec > 1 && w.k % conv_vec) conv_vec /= 2;
    s.knobs = {{"conv_vec", conv_vec}};
    s.why = fmt::format("heuristic: {} conv channels per producing thread", conv_vec);
    return s;
}

namespace {
// K split over blocks where a tiling gives `blocks` < the 132 SMs and the reduction has at least 8 panels: up to about
// 4 blocks per SM, each split keeping at least 2 panels (tensor_core_tiling says where it was measured).
int split_k_for(long long blocks, long long panels) {
    int split = 1;
    while (blocks < 132 && panels >= 8 && split < 8 && blocks * split * 2 <= 4 * 132 && panels / (split * 2) >= 2)
        split *= 2;
    return split;
}

// The tensor-core tiling of a product of M x N outputs over a reduction of K (the GEMM family, and the
// implicit GEMM of a convolution). CUDA: 128 x 128 block tiles of 2 x 2 warps of 64 x 64 and K steps of 64
// (H200, bf16, the fastest of the tilings measured at 4096^3 and both FFN shapes: 268.5, 134.6 and 141.4
// TFLOP/s against 184.2, 109.9 and 104.0 with K steps of 32, and 234.6, 116.6 and 128.3 with 128 x 256 tiles);
// K steps of 32 or 16 where the reduction is that short (a longer step only adds zeros); one warp (of 64 or 32
// columns) along N where N is that narrow, so no warp computes only padding; then, where the tiles give fewer
// blocks than the 132 SMs of the target class, 64 x 64 tiles of four 32 x 32 warps. Long
// reductions onto wide outputs (K >= 512, N >= 256) take 2 x 4 warps (128 x 256 tiles) with the panels
// prefetched (H200, 2026-12-02: 4096^3 f16 0.438 ms, 52% of mma.sync, against 0.514 on 2 x 2 warps; 25088 x 256
// x 1024 0.089 against 0.098; at K = 256 the 2 x 2 tiles stay ahead, 0.110 against 0.115), but not a block's
// layers: as the FFN c=256 block's project layer (that same 25088 x 256 x 1024) they made the block 0.236 ms
// against 0.194-0.196 on 2 x 2 warps (docs/tensor-cores.md). The panel prefetch
// wherever its registers fit beside the accumulators (4 per 16-byte vector a thread loads, at most 176 with the
// accumulators): on 32 x 64 warp tiles of 1-2 warps it measured 1.11-1.27x on most dense conv2d rows (0.87x on
// one), on 2 x 2 warps of 64 x 64 with K steps of 64 (254 registers) 0.90-0.98x, so not there. One panel stage: the
// cp.async ring (knob stages) measured 0.59-1.36x against the best one-stage tiling of the same row, with no rule of
// the shape between its wins and losses (H200, 2026-12-03, bench/results/h200/cp-async/), so it comes from the
// tuner's records only. Where the smallest
// tiles still leave SMs idle, K is split over up to 8 blocks per tile (split_k, schedules/gemm_knobs.h).
// OpenCL and the CPU run the emulation (fragments in shared memory or block arrays): 32 x 32 warp tiles keep
// OpenCL's block within 48 KB.
std::map<std::string, int> tensor_core_tiling(long long M, long long N, long long K, Device device, WideTiles wide) {
    if (device != Device::cuda) {
        if (device == Device::opencl) return {{"warp_m", 32}, {"warp_n", 32}, {"k_step", 32}};
        return {{"k_step", 32}};
    }
    const int k_step = K <= 16 ? 16 : K <= 32 ? 32 : 64;
    std::map<std::string, int> t{{"warp_m", 64}, {"warp_n", 64}, {"warps_m", 2}, {"warps_n", 2}, {"k_step", k_step}};
    if (N <= 64) t["warps_n"] = 1;
    if (N <= 32) t["warp_n"] = 32;
    auto blocks = [&] { return ceil_div(M, t["warp_m"] * t["warps_m"]) * ceil_div(N, t["warp_n"] * t["warps_n"]); };
    // Fewer blocks than SMs: 64 x 64 tiles of 2 x 2 warps of 32 x 32 (4 x 1 warps where N <= 32), the K split below
    // filling the SMs, rather than fewer warps per block: a block's panel loads (the implicit GEMM's gather) spread
    // over 4 warps instead of 1-2. H200, 2026-12-02 (bench/results/h200/dense-tc-tuned/): 1.09x geomean over the
    // 1-2-warp tiles on 15 dense conv2d/conv3d rows (0.91-1.39x; resnet-3x3's short reduction the slower).
    if (blocks() < 132) {
        t["warp_m"] = 32, t["warp_n"] = 32, t["warps_m"] = 2, t["warps_n"] = 2;
        if (N <= 32) t["warps_m"] = 4, t["warps_n"] = 1;
    }
    if (wide == WideTiles::allowed && K >= 512 && N >= 256 && t["warps_m"] == 2 && t["warp_m"] == 64) t["warps_n"] = 4;
    const int threads = 32 * t["warps_m"] * t["warps_n"];
    const int panel_vectors = (t["warp_m"] * t["warps_m"] + t["warp_n"] * t["warps_n"]) * (k_step / 8);
    const int prefetch_registers = 4 * ceil_div(panel_vectors, threads);
    const int accumulator_registers = t["warp_m"] * t["warp_n"] / 32;
    // Still fewer blocks than SMs with the smallest tiles, and a reduction of at least 8 panels: the K split over
    // blocks, up to about 4 blocks per SM, each split keeping at least 2 panels. H200, 2026-12-02
    // (bench/results/h200/split-k/): 1.3-4.0x on the rows it splits (deeplabv3-aspp conv2d 0.279 -> 0.070 ms with 8
    // splits, unet-aspp conv3d 0.106 -> 0.059 with 4, encodec-deep conv1d 0.025 -> 0.019 with 8), 1.0x on two; slower
    // on the short reductions, so not there: late-stage-1x1 (4 panels) 0.0106 -> 0.0125 with 2, whisper-conv1
    // (4 panels, 240 blocks) 0.027 -> 0.039.
    const long long panels = ceil_div(K, k_step);
    const int split = split_k_for(blocks(), panels);
    if (split > 1) t["split_k"] = split;
    t["prefetch"] = ceil_div(panels, split) > 1 && accumulator_registers + prefetch_registers <= 176 ? 1 : 0;
    return t;
}
}  // namespace

namespace {
// The mma.sync tiling of tensor_core_tiling, with the reason.
ScheduleChoice mma_sync_gemm_choice(const GemmWorkload &w, Device device) {
    ScheduleChoice s;
    s.knobs = tensor_core_tiling(w.m, w.n, w.k, device);
    const GemmKnobs kn = gemm_knobs_from(s.knobs);
    s.why =
        fmt::format("heuristic: {}x{} block tiles of {}x{} warps, K steps of {}{}{}", kn.warp_m * kn.warps_m,
                    kn.warp_n * kn.warps_n, kn.warps_m, kn.warps_n, kn.k_step, kn.prefetch ? ", panels prefetched" : "",
                    kn.split_k > 1 ? fmt::format(", K split over {} blocks", kn.split_k) : "");
    return s;
}
}  // namespace

// A GEMM on Hopper (compute capability 9.0), f16 or bf16, K >= 256 (a block's 1x1 layer: K >= 128), its 128 x 128 tiles at
// least the 132 SMs: wgmma (sm_90a) on 8 warps (two warpgroups of 64 rows) of 16 x 128, K steps of 64 in 128-byte
// swizzled panels, a 3-stage cp.async ring (gemm_wgt_f16's tiling). H100, 2026-12-06
// (bench/results/h100/wgmma/README.md): 0.318-0.327 ms at 4096^3 against 0.440-0.449 for the fastest mma.sync tiling,
// 0.058-0.062 against 0.086 at 25088 x 256 x 1024; at 25088 x 1024 x 256 a tuner round put it first, 0.0707 ms
// against 0.0837 for the best mma.sync tiling (bench/results/h100/gemm-epilogue/, retune/). Shorter reductions not
// measured. bf16 the same (H100, 25088 x 1024 x 256 bf16: 0.0533 ms against 0.0874 on mma.sync; every tiling of that
// plan checked against float64 first, bench/results/h100/gemm-store-loop/).
// A convolution's implicit GEMM takes one-warpgroup tiles (hopper_conv_wgmma_tiling, below). A block's 1x1 layer is
// that GEMM with the layer's epilogue (layer_by_layer_tc below: FFN's and ConvFirst's project, K = 4c), its ring
// copying the previous layer's buffer: H100, N=128, the blocks 1.07-1.11x faster than with that layer's stages = 1 (FFN
// c=256 0.198 ms, ConvFirst c=256 0.246, c=128 0.369; medians of three alternated timings,
// bench/results/h100/block-ring/), which was 1.03-1.06x faster than the layer on mma.sync (../wgmma/README.md,
// blocks/). The epilogue staged through shared memory (stage_c) where K <= 1024, the output's store then a larger share
// of the time: H100, same kernels otherwise, 25088 x 1024 x 256 0.0714 -> 0.0529 ms, 25088 x 256 x 1024 0.0467 ->
// 0.0424, but 4096^3 0.2645 -> 0.2747 (bench/results/h100/stage-c/); with the staged store's barriers gone
// (schedules/gemm_schedule.cpp) 0.0499 and 0.0412, and 4096^3 staged level with unstaged (0.2620-0.2658 against 0.2645,
// ../gemm-store-loop/): not measured enough to stage it there.
namespace {
// wgmma's 128 x 128 block tiles of two warpgroups (8 warps of 16 x 128), K steps of 64 in 128-byte swizzled panels, a
// 3-stage cp.async ring; the epilogue staged in shared memory or not.
std::map<std::string, int> two_warpgroup_tiling(bool stage_c) {
    return {{"warp_m", 16}, {"warp_n", 128}, {"warps_m", 8},
            {"warps_n", 1}, {"k_step", 64},  {"pad", 0},
            {"wgmma", 1},   {"stages", 3},   {"stage_c", stage_c ? 1 : 0}};
}

std::optional<std::map<std::string, int>> hopper_wgmma_tiling(const GemmWorkload &w, Device device, long long min_k) {
    const long long tiles = ceil_div(w.m, 128) * ceil_div(w.n, 128);
    if (device != Device::cuda || launch_limits(device).compute_capability != 90 ||
        (w.dtype != DType::f16 && w.dtype != DType::bf16) || w.k < min_k || w.m < 128 || w.n < 128 || tiles < 132)
        return std::nullopt;
    return two_warpgroup_tiling(w.k <= 1024);
}
}  // namespace

ScheduleChoice gemm_heuristic(const GemmWorkload &w, Device device) {
    if (auto t = hopper_wgmma_tiling(w, device, 256)) {
        ScheduleChoice s;
        s.knobs = *t;
        s.why = "heuristic: Hopper's wgmma, 128x128 block tiles of two warpgroups, K steps of 64 in 128-byte swizzled "
                "panels, a 3-stage cp.async ring";
        if (s.knobs.at("stage_c")) s.why += ", the epilogue staged in shared memory";
        return s;
    }
    return mma_sync_gemm_choice(w, device);
}

namespace {
// A dense convolution's implicit GEMM on Hopper (compute capability 9.0), f16 or bf16: wgmma on one warpgroup (4
// warps of 16 rows: 64-row tiles) of warp_n columns, K steps of 64 in 128-byte swizzled panels, the epilogue staged in
// shared memory. warp_n: the widest of 128, 64, 32 not past twice N that gives the 132 SMs a tile each. K split as
// tensor_core_tiling does, but only over a reduction of at least 32 panels or onto fewer than 33 tiles. Where the
// input channels are a multiple of 8 (cp.async copies whole 16-byte rows), a cp.async ring of 4 stages over at least
// 16 panels a split, 3 from 4 (2 on 64 x 128 tiles, whose panels take more shared memory). K steps of 32 where at
// most 4 channels (their taps packed, generators/conv_windows.h) make a reduction of at most 128.
// H100, 2026-12-07 (bench/results/h100/conv-tc-heuristic/), 41 dense rows of conv2d-dense, conv1d, conv3d and
// Conv3x3-BN-ReLU, every kernel checked against float64: the first form (K split as tensor_core_tiling, 2 stages from
// 4 panels) against the mma.sync tilings before, every row faster, 1.10-2.11x (geomean 1.46x; highres 0.125 -> 0.071
// ms, 68% of the mma.sync ceiling; the same tiles unstaged 1.18x, 11 rows slower); this form against the first in a
// second run 1.00-1.49x (geomean 1.09x: bottleneck-reduce unsplit 1.49x, resnet-3x3 on 3 stages 1.28-1.30x; 3 stages
// on whisper-conv1's 64 x 128 tiles ran 0.80x, so 2 there). K steps of 32 against 64 on the 11 rows of at most 4
// channels (few-channels.txt and conv2d's stem, reductions of 8-112): 1.05-1.09x on the conv1d rows (8-16), 1.33x on
// conv3d r3d-stem (112), 0.97x on the conv2d stem (40), one run (bench/results/h100/conv-tc-heuristic/few/).
// Long reductions (at least 16 panels, with the ring) onto enough 128 x 128 tiles for two blocks on every SM take the
// GEMM's tiling instead (two_warpgroup_tiling, staged: its C tile over the ring's memory): H100,
// 2026-12-07 (bench/results/h100/conv2d-wide-tiles/), highres (12544 x 512 x 2304) 0.0625 against 0.0724 ms on the
// one-warpgroup tiling above, highres-bias 0.0636 against 0.0729 (64 x 256 tiles 0.066-0.069, 128 x 256 0.076, a
// 2- or 4-stage ring 0.066-0.073); in two further runs 1.09-1.17x the one-warpgroup tiling on highres and three larger
// 3x3 shapes (reductions of 1152-2304), the fastest of its neighbours in every pass.
std::optional<std::map<std::string, int>> hopper_conv_wgmma_tiling(const GemmWorkload &g, Device device, int channels) {
    if (device != Device::cuda || launch_limits(device).compute_capability != 90 ||
        (g.dtype != DType::f16 && g.dtype != DType::bf16))
        return std::nullopt;
    if (channels % 8 == 0 && ceil_div(g.k, 64) >= 16 && g.n >= 128 &&
        ceil_div(g.m, 128) * ceil_div(g.n, 128) >= 2 * 132)
        return two_warpgroup_tiling(true);
    int warp_n = 128;
    auto tiles = [&] { return ceil_div(g.m, 64) * ceil_div(g.n, warp_n); };
    while (warp_n > 32 && (warp_n >= 2 * ceil_div(g.n, 32) * 32 || tiles() < 132)) warp_n /= 2;
    const bool ring = channels % 8 == 0;
    const int k_step = channels <= 4 && g.k <= 128 ? 32 : 64;
    const long long panels = ceil_div(g.k, k_step);
    const int split = panels >= 32 || tiles() < 33 ? split_k_for(tiles(), panels) : 1;
    const long long per_split = ceil_div(panels, split);
    const int stages = !ring ? 1 : per_split >= 16 ? 4 : per_split >= 4 ? (warp_n >= 128 ? 2 : 3) : 1;
    std::map<std::string, int> t{{"warp_m", 16}, {"warp_n", warp_n}, {"warps_m", 4},
                                 {"warps_n", 1}, {"k_step", k_step}, {"pad", 0},
                                 {"wgmma", 1},   {"stage_c", 1},     {"stages", stages}};
    if (split > 1) t["split_k"] = split;
    return t;
}
}  // namespace

ScheduleChoice conv2d_tc_heuristic(const Conv2dWorkload &w, Device device, const TcDepth &z) {
    if (const int window = conv_windows(w).window_n(); window > 0) {
        // Grouped: a warp's columns within one window (each window its own A fragments, so a warp over several
        // loads one per mma), 4 x 2 warps of 32-row tiles (2 x 1 where two warps' columns would straddle a window),
        // K steps of 16, 32 or 64, whichever pads the short reduction (taps x the window's channels) least. On the
        // H200 ConvFirst's groups of 8 run 14-17x above their DRAM floor (0.33-0.53x cuDNN, 1.2-2.1x our CUDA cores):
        // a warp's A serves 8 outputs.
        const long long K = implicit_gemm_of(w, z).k;
        ScheduleChoice s;
        int warp_n = 8;
        for (int n : {16, 32})
            if (window % n == 0) warp_n = n;
        int k_step = 64;
        for (int step : {32, 16})
            if (ceil_div(K, step) * step < ceil_div(K, k_step) * k_step) k_step = step;
        s.knobs = {{"warp_m", 32}, {"warp_n", warp_n}, {"warps_m", 4}, {"warps_n", 2}, {"k_step", k_step}};
        if (!gemm_windows_error(gemm_knobs_from(s.knobs), window).empty()) s.knobs["warps_n"] = 1;
        s.why = fmt::format("heuristic: grouped, windows of {} output channels, 128x{} block tiles of 4x{} warps, K "
                            "steps of {} (the convolution's block-diagonal implicit GEMM)",
                            window, warp_n * s.knobs["warps_n"], s.knobs["warps_n"], k_step);
        return s;
    }
    const GemmWorkload g = implicit_gemm_of(w, z);
    if (auto t = hopper_conv_wgmma_tiling(g, device, w.c)) {
        ScheduleChoice s;
        s.knobs = *t;
        const GemmKnobs kn = gemm_knobs_from(s.knobs);
        s.why = fmt::format("heuristic: Hopper's wgmma, {}x{} block tiles of {}, K steps of {}{}{}, the "
                            "epilogue staged in shared memory{} (the convolution's implicit GEMM)",
                            kn.warp_m * kn.warps_m, kn.warp_n,
                            kn.warps_m == 4 ? "one warpgroup" : fmt::format("{} warpgroups", kn.warps_m / 4), kn.k_step,
                            kn.k_step == 64 ? " in 128-byte swizzled panels" : "",
                            kn.stages > 1 ? fmt::format(", a {}-stage cp.async ring", kn.stages) : "",
                            kn.split_k > 1 ? fmt::format(", K split over {} blocks", kn.split_k) : "");
        return s;
    }
    ScheduleChoice s = mma_sync_gemm_choice(g, device);
    s.why += " (the convolution's implicit GEMM)";
    return s;
}

}  // namespace blockfuse
