// What each fused block is, as data: a chain of conv layers (the last one takes the residual).
// Halide-free, so the generator (Exprs) and the runtime (keys, reference, accounting) read the
// same description.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace blockfuse {

enum class BlockFamily { mbconv, fused_mbconv, ffn, convfirst, convnext };

struct LayerSpec {
    int ks = 1, stride = 1;
    int groups = 1;  // number of groups
    int in_ch = 0, out_ch = 0;
    int act = 0;              // Activation id (generators/activation.h)
    bool hidden = false;      // output has the block's hidden width: produced chunk by chunk when fused
    bool norm_after = false;  // LayerNorm over channels after this layer (affine folded into the next layer)
};

// Which thread mapping serves a layer in the layer-by-layer schedule (BlockKnobs: pointwise_gpu,
// full_gpu, layer_gpu). Its knobs carry the prefix in the generator's params and the registry.
enum class LayerMapping { pointwise, full, layer };
inline LayerMapping layer_mapping(int ks, int groups) {
    if (groups > 1) return LayerMapping::layer;  // depthwise, grouped
    return ks == 1 ? LayerMapping::pointwise : LayerMapping::full;
}
inline const char *knob_prefix(LayerMapping m) {
    switch (m) {
    case LayerMapping::pointwise: return "pw_";
    case LayerMapping::full: return "full_";
    case LayerMapping::layer: return "layer_";
    }
    return "";
}

// The most layers a block has (MBConv, ConvFirst, ConvNeXt: 3): per-layer knobs are declared for this many.
constexpr size_t kMaxBlockLayers = 3;

// LayerNorm epsilon of the ConvNeXt block (kernels and reference read this one constant).
constexpr double kLayerNormEps = 1e-6;

struct BlockSpec {
    BlockFamily family;
    int c = 0, hidden = 0, cout = 0;
    bool residual = false;
    std::vector<LayerSpec> layers;
    // Squeeze-Excitation after layer se_after (-1: none): gate(e) = sigmoid(We act(Wr mean_xy(h) +
    // br) + be), the layer's output multiplied by it; se_ch = max(1, c / 4) reduced channels
    // (EfficientNet's ratio 0.25 of the block input), act = the block's activation.
    int se_after = -1, se_ch = 0, se_act = 0;
    bool has_se() const { return se_after >= 0; }
};

// The layers a fused block produces or consumes a hidden chunk at a time (Eq. 32): the hidden ones,
// and the last, whose reduction runs over the hidden chunks. Their weights are read per chunk.
inline bool chunked_layer(const BlockSpec &b, size_t i) { return b.layers[i].hidden || i + 1 == b.layers.size(); }

// A hidden 1x1 dense layer: the fused GPU schedule's input_vec copies its input pixel to registers.
inline bool pointwise_hidden_layer(const LayerSpec &l) { return l.hidden && l.ks == 1 && l.groups == 1; }

// A hidden layer whose chunk the fused GPU schedule may store as the next layer's padded f32 view
// (stage_padded: zero outside the image, widened once per element), because the next layer reads
// nothing else of it: no LayerNorm in between (it needs every channel of a pixel, a chunk has some).
// Squeeze-Excitation's gate is per channel and computed per tile before the chunks (se_gate_in_tile):
// the staged view carries the gated value, multiplied once per element, not once per read.
inline bool padded_view_stageable(const BlockSpec &b, size_t i) {
    return b.layers[i].hidden && i + 1 < b.layers.size() && !b.layers[i].norm_after;
}

inline const char *block_family_name(BlockFamily f) {
    switch (f) {
    case BlockFamily::mbconv: return "mbconv";
    case BlockFamily::fused_mbconv: return "fused_mbconv";
    case BlockFamily::ffn: return "ffn";
    case BlockFamily::convfirst: return "convfirst";
    case BlockFamily::convnext: return "convnext";
    }
    return "?";
}

// The family a name (block_family_name's) stands for; false if none.
inline bool block_family_from_name(const std::string &name, BlockFamily *f) {
    for (BlockFamily x : {BlockFamily::mbconv, BlockFamily::fused_mbconv, BlockFamily::ffn, BlockFamily::convfirst,
                          BlockFamily::convnext})
        if (name == block_family_name(x)) {
            *f = x;
            return true;
        }
    return false;
}

// c: input channels; expansion: hidden = c * expansion; ks: the spatial kernel (depthwise for
// MBConv, expand conv for FusedMBConv, grouped conv for ConvFirst); act: activation id after the
// expanding layer(s). Residual when input and output shapes match (stride 1).
inline BlockSpec make_block_spec(BlockFamily f, int c, int expansion, int ks, int stride, int act, bool se = false) {
    BlockSpec b;
    b.family = f;
    b.c = c;
    b.hidden = c * expansion;
    b.cout = c;
    const int E = b.hidden, none = 0, relu = 1;
    switch (f) {
    case BlockFamily::mbconv:  // 1x1 expand + act -> depthwise kxk + act -> 1x1 project (+ residual)
        b.layers = {{1, 1, 1, c, E, act, true}, {ks, stride, E, E, E, act, true}, {1, 1, 1, E, c, none, false}};
        break;
    case BlockFamily::fused_mbconv:  // kxk expand + act -> 1x1 project (+ residual)
        b.layers = {{ks, stride, 1, c, E, act, true}, {1, 1, 1, E, c, none, false}};
        break;
    case BlockFamily::ffn:  // Eq. 30: phi(X U + a) V + b, no residual
        b.layers = {{1, 1, 1, c, E, act, true}, {1, 1, 1, E, c, none, false}};
        break;
    case BlockFamily::convfirst:  // grouped kxk (group width 8) -> FFN with ReLU -> residual
        if (c % 8) throw std::invalid_argument("convfirst needs c divisible by the group width 8");
        b.layers = {{ks, stride, c / 8, c, c, none, false}, {1, 1, 1, c, E, relu, true}, {1, 1, 1, E, c, none, false}};
        break;
    case BlockFamily::convnext:  // depthwise kxk -> LayerNorm -> 1x1 expand + act -> 1x1 project (+ residual)
        b.layers = {{ks, stride, c, c, c, none, false, true}, {1, 1, 1, c, E, act, true}, {1, 1, 1, E, c, none, false}};
        break;
    }
    b.residual = f != BlockFamily::ffn && stride == 1;
    if (se) {
        if (f != BlockFamily::mbconv) throw std::invalid_argument("Squeeze-Excitation is part of mbconv only");
        b.se_after = 1;  // after the depthwise layer and its activation
        b.se_ch = c / 4 > 1 ? c / 4 : 1;
        b.se_act = act;
    }
    return b;
}

// Threads per block of the fused GPU schedule: vec_k output channels x one pixel column per
// thread, tile_x columns (schedules/block_schedule.cpp; the launch checker reads it too). The
// block's threads are fused_threads_k(...) along the channels by tile_x along the columns.
inline int fused_threads_k(int cout, int vec_k) { return (cout + vec_k - 1) / vec_k; }
inline int fused_block_threads(int cout, int vec_k, int tile_x) { return fused_threads_k(cout, vec_k) * tile_x; }
// The largest thread block a fused block launches: with Squeeze-Excitation its partial-sum kernel too,
// chunk x tile_x threads (a chunk of channels by the tile's columns; schedules/block_schedule.cpp).
inline int fused_kernel_threads(int cout, int vec_k, int tile_x, bool se, int chunk) {
    const int block = fused_block_threads(cout, vec_k, tile_x);
    return se && chunk * tile_x > block ? chunk * tile_x : block;
}

// The chunk the fused schedule uses: the largest divisor of the hidden width not above `chunk`.
inline int effective_chunk(int hidden, int chunk) {
    int c = 1;
    for (int d = 1; d <= chunk; ++d)
        if (hidden % d == 0) c = d;
    return c;
}

// The input region of layers [from_layer, end) of a block for an output region rx x ry.
inline void grow_through_layers(const BlockSpec &b, long long &rx, long long &ry, size_t from_layer = 0) {
    for (size_t j = b.layers.size(); j-- > from_layer;) {
        rx = (rx - 1) * b.layers[j].stride + b.layers[j].ks;
        ry = (ry - 1) * b.layers[j].stride + b.layers[j].ks;
    }
}

// Shared memory of the fused GPU schedule, per thread block (the launch checker's estimate): the
// f32 output accumulator tile, each hidden layer's chunk on its region (the tile grown by the halos of
// the spatial layers after it), each full-width layer (and LayerNorm) on its region.
// blocks > 1 (depth-first stage): the same for every block on its region (the tile grown by the
// halos of the blocks after it), plus the output of every block but the last; the sum, as if no
// allocation were reused. stage_weights: plus the f32 chunk of weights of the last block's chunked layers
// (2: and the whole weights of its full-width layers).
// stage_padded: the hidden chunks padded_view_stageable() allows are f32.
// Every shared allocation's innermost dimension is padded to 8 elements (schedules/gpu_mapping.h).
inline long long shared_pad8(long long n) { return (n + 7) / 8 * 8; }
inline long long fused_block_shared_bytes(const BlockSpec &b, int tile_x, int tile_y, int chunk, int elem_bytes,
                                          int blocks = 1, int stage_weights = 0, bool stage_padded = false) {
    const int ch = effective_chunk(b.hidden, chunk);
    const long long cout = shared_pad8(b.cout);
    long long bytes = 0, bx = tile_x, by = tile_y;  // region of the current block's output
    for (int blk = blocks - 1; blk >= 0; --blk) {
        bytes += 4LL * cout * bx * by;                               // accumulator
        if (blk + 1 < blocks) bytes += cout * bx * by * elem_bytes;  // block output
        for (size_t i = 0; i + 1 < b.layers.size(); ++i) {
            long long rx = bx, ry = by;  // region of layer i's output the block needs
            grow_through_layers(b, rx, ry, i + 1);
            const LayerSpec &L = b.layers[i];
            const int bytes_per = stage_padded && padded_view_stageable(b, i) ? 4 : elem_bytes;
            bytes += shared_pad8(L.hidden ? ch : L.out_ch) * rx * ry * bytes_per;
            if (L.norm_after)  // normed, then the mean and reciprocal deviation per pixel (x innermost)
                bytes += shared_pad8(L.out_ch) * rx * ry * elem_bytes + 2 * 4 * shared_pad8(rx) * ry;
        }
        grow_through_layers(b, bx, by);
    }
    // Squeeze-Excitation: the block's mean, reduce and gate; and, counted on top though they live in the other kernel
    // (which holds the same hidden chunks and fewer weights), the partial-sum kernel's column and tile sums.
    if (b.has_se()) {
        const long long e = shared_pad8(b.layers[b.se_after].out_ch);
        bytes += 4LL * (2 * e + shared_pad8(b.se_ch)) + 4LL * (shared_pad8(chunk) * tile_x + e);
    }
    if (stage_weights) {  // the last block's chunk of weights of every chunked layer, f32 (2: every layer's)
        for (size_t i = 0; i < b.layers.size(); ++i) {
            if (!chunked_layer(b, i) && stage_weights < 2) continue;
            const LayerSpec &L = b.layers[i];
            const bool last = i + 1 == b.layers.size();
            const long long k = L.hidden ? ch : L.out_ch, cg = last ? ch : L.in_ch / L.groups;
            bytes += 4LL * shared_pad8(k) * cg * L.ks * L.ks;
        }
    }
    return bytes;
}

}  // namespace blockfuse
