// The tensor-core GEMM's schedule knobs (schedules/knobs.h convention: one declaration per knob). The
// implicit-GEMM convolutions (generators/implicit_gemm.h) take the same tiling.
#pragma once
#include "schedules/knobs.h"
#include <algorithm>
#include <map>
#include <string>
#include <vector>

// name, default, the values the search may take, meaning
#define BLOCKFUSE_GEMM_KNOBS(X)                                                                                        \
    X(warp_m, 64, (16, 32, 64), "rows of C per warp, a multiple of 16 (16-row instruction tiles)")                     \
    X(warp_n, 64, (32, 64, 128, 256), "columns of C per warp, a multiple of 8 (8-column instruction tiles)")           \
    X(warps_m, 2, (1, 2, 4, 8), "warps per thread block along M")                                                      \
    X(warps_n, 2, (1, 2, 4), "warps per thread block along N")                                                         \
    X(k_step, 32, (16, 32, 64), "K per shared-memory panel (one barrier-separated step), a multiple of 16")            \
    X(pad, 8, (0, 8), "b16 elements of padding per panel row: 8 makes ldmatrix rows conflict-free")                    \
    X(prefetch, 0, (0, 1),                                                                                             \
      "1: the next K step's panels loaded into registers while this step's mma run (K of more than one step)")         \
    X(stages, 1, (1, 2, 3, 4),                                                                                         \
      "shared-memory copies of the panels: 1 one per K step; 2-4 a ring filled by cp.async that many K steps "         \
      "ahead (schedules/panel_prefetch.h)")                                                                            \
    X(split_k, 1, (1, 2, 4, 8),                                                                                        \
      "K split over this many blocks per output tile: f32 partial sums in a workspace, added by the epilogue's "       \
      "kernel")                                                                                                        \
    X(wgmma, 0, (0, 1),                                                                                                \
      "1: Hopper's wgmma.mma_async (sm_90a) instead of mma.sync: each 4 warps along M one warpgroup instruction of "   \
      "64 x warp_n x 16, A and B read by the tensor cores from core-matrix panels in shared memory (warp_m = 16, "     \
      "warps_m a multiple of 4, warps_n = 1, warp_n <= 256, pad = 0)")                                                 \
    X(stage_c, 0, (0, 1),                                                                                              \
      "1: the epilogue's C tile staged in shared memory, then stored by whole rows (CUDA and the CPU); 0: each lane "  \
      "stores its register pairs")

namespace blockfuse {
struct GemmKnobs {
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_FIELD)
    int threads_per_block() const { return 32 * warps_m * warps_n; }
};
inline const KnobTable &gemm_knob_table() {
    static const KnobTable t{{BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}
// Why the knobs cannot make a kernel ("" if they can), naming the knob: what the generators raise and what the
// tuner checks before building a candidate.
inline std::string gemm_knobs_error(const GemmKnobs &kn) {
    auto bad = [](const std::string &knob, int v, const std::string &why) {
        return "gemm: " + knob + " = " + std::to_string(v) + " " + why;
    };
    if (kn.warp_m <= 0 || kn.warp_m % 16) return bad("warp_m", kn.warp_m, "must be a positive multiple of 16");
    if (kn.warp_n <= 0 || kn.warp_n % 8) return bad("warp_n", kn.warp_n, "must be a positive multiple of 8");
    if (kn.warps_m <= 0) return bad("warps_m", kn.warps_m, "must be positive");
    if (kn.warps_n <= 0) return bad("warps_n", kn.warps_n, "must be positive");
    if (kn.threads_per_block() > 1024)
        return bad("warps_m * warps_n", kn.warps_m * kn.warps_n, "exceeds 32 warps per block");
    if (kn.k_step <= 0 || kn.k_step % 16) return bad("k_step", kn.k_step, "must be a positive multiple of 16");
    if (kn.pad < 0 || kn.pad % 8) return bad("pad", kn.pad, "must be a non-negative multiple of 8 (16-byte rows)");
    if (kn.prefetch != 0 && kn.prefetch != 1) return bad("prefetch", kn.prefetch, "must be 0 or 1");
    if (kn.stages < 1 || kn.stages > 8) return bad("stages", kn.stages, "must be 1 to 8");
    if (kn.stages > 1 && kn.prefetch)
        return bad("stages", kn.stages, "with prefetch = 1: the cp.async ring replaces the register prefetch");
    if (kn.split_k < 1 || kn.split_k > 64) return bad("split_k", kn.split_k, "must be 1 to 64");
    if (kn.wgmma != 0 && kn.wgmma != 1) return bad("wgmma", kn.wgmma, "must be 0 or 1");
    if (kn.stage_c != 0 && kn.stage_c != 1) return bad("stage_c", kn.stage_c, "must be 0 or 1");
    // The register prefetch's pass is not written for a tile that Halide places over the panels' memory.
    if (kn.stage_c && kn.prefetch) return bad("stage_c", kn.stage_c, "with prefetch = 1: stage the tile on the ring");
    if (kn.wgmma) {  // one warpgroup instruction covers 4 warps' rows (16 each) and the warp's columns
        const std::string with = "with wgmma = 1";
        if (kn.warp_m != 16) return bad("warp_m", kn.warp_m, "must be 16 " + with + " (a warp's rows of the m64 tile)");
        if (kn.warps_m % 4) return bad("warps_m", kn.warps_m, "must be a multiple of 4 " + with + " (warpgroups)");
        if (kn.warps_n != 1) return bad("warps_n", kn.warps_n, "must be 1 " + with);
        if (kn.warp_n > 256) return bad("warp_n", kn.warp_n, "must be at most 256 " + with + " (m64n256k16)");
        if (kn.pad) return bad("pad", kn.pad, "must be 0 " + with + " (core-matrix panels have no row padding)");
    }
    return "";
}
// Why the tiling cannot serve a GEMM whose A has windows of `window_n` output columns (a grouped convolution,
// generators/gemm_algorithm.h GemmIo::window_n): a warp's columns (warp_n) and a block's (warp_n x warps_n) must
// each cover whole windows or lie within one.
inline std::string gemm_windows_error(const GemmKnobs &kn, int window_n) {
    if (window_n <= 0) return "";
    if (kn.wgmma) return "gemm: wgmma = 1 serves no grouped convolution (its A differs per window of output channels)";
    const int block_n = kn.warp_n * kn.warps_n;
    for (auto [name, cols] : {std::pair<const char *, int>{"warp_n", kn.warp_n}, {"warp_n * warps_n", block_n}})
        if (cols % window_n && window_n % cols)
            return std::string("gemm: ") + name + " = " + std::to_string(cols) +
                   " must be a multiple or a divisor of the grouped convolution's window of " +
                   std::to_string(window_n) + " output channels";
    return "";
}
// The windows `cols` output columns hold (a block's: its A panels; a warp's: its A fragments): whole windows, or
// one where the columns lie within a window (gemm_windows_error). 1 without windows (a dense GEMM).
inline int gemm_windows_in(int cols, int window_n) { return window_n > 0 ? std::max(1, cols / window_n) : 1; }
// A knob set (one GEMM's, or a block's with each layer's GEMM knobs under its prefix "tc<i>_") in which every GEMM with
// wgmma = 1 is given the tiling wgmma requires: warp_m = 16, warps_n = 1, pad = 0, warps_m rounded up to a multiple of
// 4. The tuner draws knobs independently; this maps a wgmma point onto the kernel it can only mean.
inline void conform_wgmma_knobs(std::map<std::string, int> &knobs) {
    const std::string name = "wgmma";
    std::vector<std::string> prefixes;
    for (const auto &[k, v] : knobs)
        if (v == 1 && k.size() >= name.size() && k.compare(k.size() - name.size(), name.size(), name) == 0)
            prefixes.push_back(k.substr(0, k.size() - name.size()));
    for (const std::string &p : prefixes) {
        knobs[p + "warp_m"] = 16;
        knobs[p + "warps_n"] = 1;
        knobs[p + "pad"] = 0;
        const int warps_m = knobs.count(p + "warps_m") ? knobs[p + "warps_m"] : 4;
        knobs[p + "warps_m"] = std::max(4, (warps_m + 3) / 4 * 4);
    }
}
// A knob struct from a knob set (missing names keep their defaults); `prefix` as conv2d_gpu_knobs_from.
BLOCKFUSE_DEFINE_KNOBS_FROM(gemm_knobs_from, GemmKnobs, BLOCKFUSE_GEMM_KNOBS)
}  // namespace blockfuse
