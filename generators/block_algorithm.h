// Fused blocks, the algorithm only: a chain of conv2d layers (generators/conv2d_algorithm.h)
// described by a BlockSpec (generators/block_spec.h); hidden layers are stored in the block's
// storage type like PyTorch's intermediates, the last layer adds the residual. No scheduling here.
#pragma once
#include "generators/activation.h"
#include "generators/block_spec.h"
#include "generators/conv2d_algorithm.h"
#include "generators/storage.h"
#include <vector>

namespace blockfuse {

struct BlockFuncs {
    std::vector<Conv2dFuncs> layers;  // layers.back().output is the block output
};

// input: (c, x, y, n); weights[i]: (k, cg, kx, ky); biases[i]: (k) f32. W, H: input extents.
inline BlockFuncs block_algorithm(const Halide::Func &input, const std::vector<Halide::Func> &weights,
                                  const std::vector<Halide::Func> &biases, const BlockSpec &spec,
                                  const Halide::Expr &W, const Halide::Expr &H, const Halide::Type &storage) {
    using namespace Halide;
    BlockFuncs b;
    Func x = input;
    Expr w = W, h = H;
    for (size_t i = 0; i < spec.layers.size(); ++i) {
        const LayerSpec &L = spec.layers[i];
        Conv2dGeometry g;
        g.in_width = w;
        g.in_height = h;
        g.groups = L.groups;
        g.in_channels_per_group = L.in_ch / L.groups;
        g.out_channels_per_group = L.out_ch / L.groups;
        g.kernel_w = g.kernel_h = L.ks;
        g.stride_x = g.stride_y = L.stride;
        g.dilation_x = g.dilation_y = 1;
        g.pad_left = g.pad_top = L.ks / 2;
        const bool last = i + 1 == spec.layers.size();
        const int act = L.act;
        Func block_in = input;
        Epilogue epi = [act, last, residual = spec.residual, block_in](const Expr &acc, const std::vector<Var> &v) {
            Expr r = apply_activation(acc, Activation(act));
            if (last && residual) r += to_f32(block_in(v[0], v[1], v[2], v[3]));
            return r;
        };
        b.layers.push_back(conv2d(x, weights[i], biases[i], g, epi, storage, "layer" + std::to_string(i)));
        x = b.layers.back().output;
        w = (w + 2 * (L.ks / 2) - L.ks) / L.stride + 1;
        h = (h + 2 * (L.ks / 2) - L.ks) / L.stride + 1;
    }
    return b;
}

}  // namespace blockfuse
