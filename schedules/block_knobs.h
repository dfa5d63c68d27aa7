// The block schedules' knobs, declared once (schedules/knobs.h). Halide-free.
// The fused and depth-first strategies read the block-level knobs; layer by layer schedules each
// layer with the conv2d knobs of its mapping, prefixed: pw_ (1x1 layers), full_ (dense k x k),
// layer_ (depthwise and grouped); the GPU schedules' (pw_vec_k...) on a GPU, the CPU schedule's
// (pw_cpu_vec_k...) on the CPU. Layer by layer on the tensor cores (layer_by_layer_tc) gives each dense layer i
// its implicit GEMM's tiling, tc<i>_ (schedules/gemm_knobs.h), and the other layers the layer_ mapping.
#pragma once
#include "generators/block_spec.h"
#include "generators/conv_windows.h"
#include "generators/mbconv_tc_geometry.h"
#include "schedules/conv2d_knobs.h"
#include "schedules/gemm_knobs.h"
#include <algorithm>

#define BLOCKFUSE_BLOCK_KNOBS(X)                                                                                       \
    X(chunk, 8, (4, 8, 16, 24, 32, 48, 72),                                                                            \
      "hidden channels produced per step of the output's reduction (Eq. 32); the largest divisor of the hidden "       \
      "width not above it is used")                                                                                    \
    X(tile_x, 8, (4, 7, 8, 14, 16, 28, 32, 56), "output pixels per thread block (GPU) / per task (CPU), x")            \
    X(tile_y, 4, (1, 2, 4, 7, 8, 14, 16), "output pixels per thread block / task, y")                                  \
    X(vec_k, 4, (1, 2, 4, 8), "GPU: output channels per thread")                                                       \
    X(hidden_vec, 1, (1, 2, 4, 8), "GPU fused: hidden channels one thread produces per pixel (divides the chunk)")     \
    X(stage_weights, 0, (0, 1, 2),                                                                                     \
      "GPU fused: the chunk's weights of the chunked layers widened to f32 once per block in shared memory; 2: "       \
      "also the full-width layers' weights, once per tile")                                                            \
    X(stage_padded, 0, (0, 1), "GPU fused: a hidden chunk stored as the next layer's padded f32 view")                 \
    X(unroll_staging, 0, (0, 1), "GPU fused, with stage_weights: the weight copy's rounds unrolled")                   \
    X(full_vec, 1, (1, 2, 4, 8),                                                                                       \
      "GPU fused: channels one thread produces per pixel of a full-width layer on the tile (divides them)")            \
    X(input_vec, 0, (0, 2, 4, 8),                                                                                      \
      "GPU fused: a 1x1 hidden layer's input pixel in registers, this many channels per load (0: read per use)")       \
    X(tc_warps, 4, (2, 4, 8), "fused_tc: warps per thread block, stacked along the pixels")                            \
    X(tc_warp_m, 16, (16, 32), "fused_tc: pixels per warp (instruction tiles of 16 rows)")                             \
    X(tc_prefetch, 0, (0, 1),                                                                                          \
      "fused_tc: the next chunk's U and V rows loaded into registers while this chunk's mma run "                      \
      "(schedules/panel_prefetch.h)")                                                                                  \
    X(tc_grouped, 0, (0, 1),                                                                                           \
      "layer_by_layer_tc: grouped layers (ConvFirst's) on the tensor cores too, a block-diagonal implicit GEMM with "  \
      "tc<i>_ tiling (0: their CUDA-core layer_ mapping); fused_tc: ConvFirst's grouped layer on mma into X's rows "   \
      "(0: on CUDA cores)")

namespace blockfuse {

struct BlockKnobs {
    BLOCKFUSE_BLOCK_KNOBS(BLOCKFUSE_KNOB_FIELD)
    Conv2dGpuKnobs pointwise_gpu;                       // layer by layer: the 1x1 layers (pw_*)
    Conv2dGpuKnobs full_gpu;                            //  ... the dense k x k layers (full_*)
    Conv2dGpuKnobs layer_gpu;                           //  ... the depthwise and grouped layers (layer_*)
    Conv2dCpuKnobs pointwise_cpu, full_cpu, layer_cpu;  // the same on the CPU (pw_cpu_*, full_cpu_*, layer_cpu_*)
    GemmKnobs tensor_core[kMaxBlockLayers];             // layer_by_layer_tc: dense layer i's tiling (tc<i>_*)
};

// The strategy whose dense layers run on the tensor cores, and the prefix of layer i's tiling knobs.
constexpr const char *kLayerByLayerTc = "layer_by_layer_tc";
inline std::string tensor_core_prefix(size_t layer) { return "tc" + std::to_string(layer) + "_"; }
// Blocks fused on the tensor cores, strategy fused_tc: the FFN (generators/ffn_tc_algorithm.h), both 1x1 layers'
// mma in one kernel, the hidden chunk from the expand's accumulators into the project's A fragments, in registers;
// FusedMBConv's (its k x k expand over im2col rows of X), ConvFirst's (its grouped layer on CUDA cores, or on mma with
// tc_grouped, into the FFN's shared input rows), ConvNeXt's (its depthwise layer and LayerNorm likewise); and MBConv
// (generators/mbconv_tc_algorithm.h): expand and project on mma.sync over a tile and its halo, the depthwise layer
// on CUDA cores between them in shared memory.
constexpr const char *kFusedTc = "fused_tc";
// Whether a block strategy runs its dense layers on the tensor cores (and so reads their weight layout).
inline bool tensor_core_strategy(const std::string &strategy) {
    return strategy == kLayerByLayerTc || strategy == kFusedTc;
}
constexpr int kFusedTcPad = 8;  // elements past each shared panel row (ldmatrix rows in distinct banks)
// Accumulator registers per thread the fused_tc tiling may hold (output and one hidden chunk): above it the
// kernel spills at the 255-register cap.
constexpr int kFusedTcMaxAccumulators = 176;
inline int fused_tc_accumulators(const BlockSpec &spec, int warp_m, int chunk) {  // the FFN's
    return warp_m / 16 * (spec.cout / 8 + chunk / 8) * 4;
}
// MBConv's thread block for these knobs: tile_x x tile_y output pixels, tc_warps warps, the chunk.
inline MbconvTcGeometry mbconv_tc_geometry(const BlockSpec &spec, const BlockKnobs &kn) {
    const LayerSpec &dw = spec.layers[1];
    return {spec.c,    spec.hidden, spec.cout,
            dw.ks,     dw.stride,   kn.tc_warps,
            kn.tile_x, kn.tile_y,   effective_chunk(spec.hidden, kn.chunk)};
}
// The K of fused_tc's expand over X's rows: the input channels, FusedMBConv's k k C (im2col rows).
inline int fused_tc_expand_k(const BlockSpec &spec) {
    const int ks = spec.family == BlockFamily::fused_mbconv ? spec.layers[0].ks : 1;
    return ks * ks * spec.c;
}
// Shared memory of a fused_tc thread block. FFN, FusedMBConv, ConvFirst and ConvNeXt: X's rows, the chunk's rows of
// U (both of the expand's K) and columns of V, each row padded; ConvNeXt also the depthwise sums' f32 rows (padded by a channel group), its f32
// weights and each pixel's LayerNorm sums (8 lanes of two passes) and statistics (counted beside the rest: Halide may
// lay them over the chunk's panels, not assumed here); MBConv: its geometry's.
inline long long fused_tc_shared_bytes(const BlockSpec &spec, const BlockKnobs &kn) {
    if (spec.family == BlockFamily::mbconv) return mbconv_tc_geometry(spec, kn).shared_bytes();
    const int chunk = effective_chunk(spec.hidden, kn.chunk);
    const long long rows = 1LL * kn.tc_warps * kn.tc_warp_m;
    long long norm = 0;  // ConvNeXt's, f32 (schedules/fused_tc_schedule.cpp)
    if (spec.family == BlockFamily::convnext) {
        const int ks = spec.layers[0].ks;
        const long long sums = rows * (spec.c + 8);  // a row a pixel, padded by a channel group
        const long long stats = rows * (2 * 8 + 2);  // 8 lanes of each pass's sums, the mean and 1 / std
        norm = 4LL * (sums + stats + 1LL * spec.c * ks * ks);
    }
    return norm +
           2LL * ((rows + chunk) * (fused_tc_expand_k(spec) + kFusedTcPad) + 1LL * spec.cout * (chunk + kFusedTcPad));
}
// Why fused_tc cannot build this block with these knobs ("" if it can).
inline std::string fused_tc_error(const BlockSpec &spec, const BlockKnobs &kn) {
    auto n = [](int v) { return std::to_string(v); };
    const int chunk = effective_chunk(spec.hidden, kn.chunk);
    const bool mbconv = spec.family == BlockFamily::mbconv;
    if (spec.family != BlockFamily::ffn && spec.family != BlockFamily::fused_mbconv &&
        spec.family != BlockFamily::convfirst && spec.family != BlockFamily::convnext && !mbconv)
        return "strategy fused_tc is built for FFN, FusedMBConv, ConvFirst, ConvNeXt and MBConv blocks only";
    if (spec.has_se() && !mbconv) return "strategy fused_tc builds Squeeze-Excitation in MBConv blocks only";
    if (mbconv && (spec.c % 8 || spec.hidden % 16 || spec.cout % 8))
        return "fused_tc needs MBConv's input and output channels divisible by 8 (16-byte rows) and its hidden "
               "channels by 16 (mma.sync K steps), not " +
               n(spec.c) + ", " + n(spec.hidden) + ", " + n(spec.cout);
    if (!mbconv && (spec.c % 16 || spec.hidden % 16 || spec.cout % 16))
        return "fused_tc needs input, hidden and output channels divisible by 16 (mma.sync K steps and n-tile pairs), "
               "not " +
               n(spec.c) + ", " + n(spec.hidden) + ", " + n(spec.cout);
    if (chunk % 16)
        return "fused_tc: chunk " + n(chunk) + " (the divisor of the hidden width used) is not a multiple of 16";
    if (kn.tc_warps < 1 || kn.tc_warps > 32) return "fused_tc: tc_warps = " + n(kn.tc_warps) + " must be 1 to 32";
    if (mbconv) {
        if (kn.tile_x < 1 || kn.tile_y < 1)
            return "fused_tc: tile_x = " + n(kn.tile_x) + ", tile_y = " + n(kn.tile_y) + " must be positive";
        if (kn.tc_prefetch)
            return "fused_tc: tc_prefetch applies to FFN, FusedMBConv, ConvFirst and ConvNeXt blocks, not MBConv";
        const MbconvTcGeometry g = mbconv_tc_geometry(spec, kn);
        if (const int regs = g.accumulators(); regs > kFusedTcMaxAccumulators)
            return "fused_tc: " + n(regs) + " accumulator registers per thread (" + n(g.project_mt()) + " and " +
                   n(g.expand_mt()) + " m-tiles a warp of the project and the expand, " + n(g.n_padded()) +
                   " output channels, chunk " + n(chunk) + ") exceed " + n(kFusedTcMaxAccumulators);
        return "";
    }
    if (kn.tc_warp_m < 16 || kn.tc_warp_m % 16)
        return "fused_tc: tc_warp_m = " + n(kn.tc_warp_m) + " must be a multiple of 16";
    if (const int regs = fused_tc_accumulators(spec, kn.tc_warp_m, chunk); regs > kFusedTcMaxAccumulators)
        return "fused_tc: " + n(regs) + " accumulator registers per thread (tc_warp_m " + n(kn.tc_warp_m) + ", " +
               n(spec.cout) + " output channels, chunk " + n(chunk) + ") exceed " + n(kFusedTcMaxAccumulators);
    return "";
}
// Whether some fused_tc tiling builds this block (the smallest: one warp of 16 pixels or one pixel's tile, chunks
// of 16).
inline bool fused_tc_applies(const BlockSpec &spec) {
    BlockKnobs kn;
    kn.tc_warps = 1, kn.tc_warp_m = 16, kn.chunk = 16, kn.tile_x = 1, kn.tile_y = 1, kn.tc_prefetch = 0;
    return fused_tc_error(spec, kn).empty();
}

// The conv2d schedule kind of a block's layer.
inline ConvKind layer_conv_kind(const LayerSpec &l) {
    if (l.groups > 1 && l.groups == l.in_ch && l.in_ch == l.out_ch) return ConvKind::depthwise;
    if (l.ks == 1 && l.groups == 1) return ConvKind::pointwise;
    return ConvKind::general;
}

// Which layers of layer_by_layer_tc may be implicit GEMMs: the dense ones (one group), and grouped ones whose
// output channels per group are a multiple of 8 or divide 8 (generators/conv_windows.h); depthwise layers keep the
// CUDA-core layer_ mapping. Which are: the dense ones, and the grouped ones with knob tc_grouped.
inline bool tensor_core_capable_layer(const LayerSpec &l) {
    return l.groups == 1 ||
           (layer_conv_kind(l) != ConvKind::depthwise && ConvWindows{l.in_ch, l.out_ch, l.groups}.error().empty());
}
inline bool tensor_core_layer(const LayerSpec &l, const BlockKnobs &kn) {
    return l.groups == 1 || (kn.tc_grouped && tensor_core_capable_layer(l));
}
// Whether `strategy` runs layer l as its own implicit GEMM on the tensor cores (layer_by_layer_tc's GEMM layers).
inline bool layer_on_tensor_cores(const std::string &strategy, const LayerSpec &l, const BlockKnobs &kn) {
    return strategy == kLayerByLayerTc && tensor_core_layer(l, kn);
}

inline const KnobTable &block_fused_knobs() {
    static const KnobTable t{{BLOCKFUSE_BLOCK_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}
// Every knob of the block schedules on a device: the block-level ones and the three prefixed layer
// mappings of that device's conv2d schedule.
inline const KnobTable &block_knobs(bool gpu) {
    auto make = [](const KnobTable &conv) {
        std::vector<KnobTable> parts{block_fused_knobs(), prefixed(conv, "pw_"), prefixed(conv, "full_"),
                                     prefixed(conv, "layer_")};
        for (size_t i = 0; i < kMaxBlockLayers; ++i)
            parts.push_back(prefixed(gemm_knob_table(), tensor_core_prefix(i)));
        return concat(parts);
    };
    static const KnobTable g = make(conv2d_gpu_knobs()), c = make(conv2d_cpu_knobs());
    return gpu ? g : c;
}

BLOCKFUSE_DEFINE_KNOBS_FROM(block_level_knobs_from, BlockKnobs, BLOCKFUSE_BLOCK_KNOBS)

inline BlockKnobs block_knobs_from(const std::map<std::string, int> &set) {
    BlockKnobs k = block_level_knobs_from(set);
    k.pointwise_gpu = conv2d_gpu_knobs_from(set, "pw_");
    k.full_gpu = conv2d_gpu_knobs_from(set, "full_");
    k.layer_gpu = conv2d_gpu_knobs_from(set, "layer_");
    k.pointwise_cpu = conv2d_cpu_knobs_from(set, "pw_");
    k.full_cpu = conv2d_cpu_knobs_from(set, "full_");
    k.layer_cpu = conv2d_cpu_knobs_from(set, "layer_");
    for (size_t i = 0; i < kMaxBlockLayers; ++i) k.tensor_core[i] = gemm_knobs_from(set, tensor_core_prefix(i));
    return k;
}

// Threads per block of a GPU block schedule: layer by layer, the largest of the three layer mappings;
// fused and depth-first, the block's tile (with SE, its partial-sum kernel's chunk x tile_x too).
inline int block_threads_per_block(const BlockSpec &spec, const std::string &strategy, const BlockKnobs &kn) {
    if (strategy == "layer_by_layer")
        return std::max(
            {kn.layer_gpu.threads_per_block(), kn.pointwise_gpu.threads_per_block(), kn.full_gpu.threads_per_block()});
    if (strategy == kLayerByLayerTc) {
        int threads = 0;
        for (size_t i = 0; i < spec.layers.size(); ++i)
            threads = std::max(threads, tensor_core_layer(spec.layers[i], kn) ? kn.tensor_core[i].threads_per_block()
                                                                              : kn.layer_gpu.threads_per_block());
        return threads;
    }
    if (strategy == kFusedTc) return kn.tc_warps * 32;
    return fused_kernel_threads(spec.cout, kn.vec_k, kn.tile_x, spec.has_se(), effective_chunk(spec.hidden, kn.chunk));
}

// Whether a prefixed layer knob (tc<i>_*, pw_*, full_*, layer_*) is read by the block's kernel with `strategy`:
// layer by layer (on the tensor cores too) each layer reads its GEMM tiling (tc<i>_) or its mapping's knobs, so a
// tiling of a layer off the tensor cores, or a mapping no remaining layer uses, is not read; no other strategy reads
// a tc<i>_ knob. Block-level knobs, and the other strategies' mapping knobs, count as read.
inline bool block_layer_knob_read(const BlockSpec &spec, const std::string &strategy, const BlockKnobs &kn,
                                  const std::string &name) {
    const bool by_layer = strategy == "layer_by_layer" || strategy == kLayerByLayerTc;
    for (size_t i = 0; i < spec.layers.size(); ++i)
        if (name.rfind(tensor_core_prefix(i), 0) == 0) return layer_on_tensor_cores(strategy, spec.layers[i], kn);
    for (LayerMapping m : {LayerMapping::pointwise, LayerMapping::full, LayerMapping::layer}) {
        if (name.rfind(knob_prefix(m), 0) != 0) continue;
        if (!by_layer) return true;
        for (const LayerSpec &l : spec.layers)
            if (layer_mapping(l.ks, l.groups) == m && !layer_on_tensor_cores(strategy, l, kn)) return true;
        return false;
    }
    return true;
}

// Why these knobs cannot schedule the block with `strategy` ("" if they can): the generator's constraints,
// which it raises as a CompileError and the tuner checks before it builds a candidate. gpu: a GPU schedule.
inline std::string block_knobs_error(const BlockSpec &spec, const std::string &strategy, const BlockKnobs &kn,
                                     bool gpu) {
    const int chunk = effective_chunk(spec.hidden, kn.chunk);
    auto n = [](int v) { return std::to_string(v); };
    if (kn.hidden_vec < 1 || chunk % kn.hidden_vec)
        return "hidden_vec = " + n(kn.hidden_vec) + " must divide the chunk (" + n(chunk) + ")";
    if (kn.stage_weights < 0 || kn.stage_weights > 2)
        return "stage_weights = " + n(kn.stage_weights) + " must be 0, 1 or 2";
    if (kn.unroll_staging && !kn.stage_weights) return "unroll_staging needs stage_weights";
    if (kn.stage_padded && strategy != "fused") return "stage_padded applies to the fused strategy only";
    for (const LayerSpec &l : spec.layers)
        if (kn.input_vec > 0 && pointwise_hidden_layer(l) && l.in_ch % kn.input_vec)
            return "input_vec = " + n(kn.input_vec) + " must divide the input channels (" + n(l.in_ch) +
                   ") of every 1x1 hidden layer";
    for (size_t i = 0; i + 1 < spec.layers.size(); ++i)
        if (!spec.layers[i].hidden && (kn.full_vec < 1 || spec.layers[i].out_ch % kn.full_vec))
            return "full_vec = " + n(kn.full_vec) + " must divide the channels (" + n(spec.layers[i].out_ch) +
                   ") of every full-width layer before the last";
    if (strategy == kFusedTc)
        if (const std::string why = fused_tc_error(spec, kn); !why.empty()) return why;
    if (kn.tc_grouped != 0 && kn.tc_grouped != 1) return "tc_grouped = " + n(kn.tc_grouped) + " must be 0 or 1";
    if (kn.tc_grouped && strategy != kLayerByLayerTc &&
        !(strategy == kFusedTc && spec.family == BlockFamily::convfirst))
        return "tc_grouped applies to layer_by_layer_tc, and to fused_tc on ConvFirst";
    if (strategy == kLayerByLayerTc)
        for (size_t i = 0; i < spec.layers.size(); ++i)
            if (tensor_core_layer(spec.layers[i], kn)) {
                const LayerSpec &l = spec.layers[i];
                std::string why = gemm_knobs_error(kn.tensor_core[i]);
                if (why.empty())
                    why = gemm_windows_error(kn.tensor_core[i], ConvWindows{l.in_ch, l.out_ch, l.groups}.window_n());
                if (!why.empty()) return "layer " + std::to_string(i) + " (" + tensor_core_prefix(i) + "): " + why;
            }
    if (!gpu) {
        if (strategy == "layer_by_layer" || strategy == kLayerByLayerTc)
            for (const LayerSpec &l : spec.layers) {
                if (layer_on_tensor_cores(strategy, l, kn)) continue;
                const LayerMapping m = layer_mapping(l.ks, l.groups);
                const Conv2dCpuKnobs &k = m == LayerMapping::pointwise ? kn.pointwise_cpu
                                          : m == LayerMapping::full    ? kn.full_cpu
                                                                       : kn.layer_cpu;
                if (const std::string why = conv2d_cpu_knobs_error(k); !why.empty())
                    return std::string(knob_prefix(m)) + " mapping: " + why;
            }
        return "";
    }
    if (const int threads = block_threads_per_block(spec, strategy, kn); threads > kMaxThreadsPerBlock)
        return n(threads) + " threads per block (the largest kernel of this mapping" +
               std::string(spec.has_se() && (strategy == "fused" || strategy == "depth_first")
                               ? ", with SE's partial sums chunk x tile_x"
                               : "") +
               ") exceed " + n(kMaxThreadsPerBlock);
    if (strategy == "layer_by_layer" || strategy == kLayerByLayerTc)  // each layer on its mapping (static windows)
        for (const LayerSpec &l : spec.layers) {
            if (layer_on_tensor_cores(strategy, l, kn)) continue;
            const LayerMapping m = layer_mapping(l.ks, l.groups);
            const Conv2dGpuKnobs &k = m == LayerMapping::pointwise ? kn.pointwise_gpu
                                      : m == LayerMapping::full    ? kn.full_gpu
                                                                   : kn.layer_gpu;
            if (const std::string why =
                    conv2d_gpu_knobs_error(k, layer_conv_kind(l), true, l.in_ch / l.groups, l.out_ch, l.groups);
                !why.empty())
                return std::string(knob_prefix(m)) + " mapping: " + why;
        }
    return "";
}

}  // namespace blockfuse
