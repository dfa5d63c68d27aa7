// Fused blocks, the algorithm only: a chain of conv2d layers (generators/conv2d_algorithm.h)
// described by a BlockSpec (generators/block_spec.h); hidden layers are stored in the block's
// storage type like PyTorch's intermediates, the last layer adds the residual. No scheduling here.
#pragma once
#include "generators/activation.h"
#include "generators/block_spec.h"
#include "generators/conv2d_algorithm.h"
#include "generators/gemm_algorithm.h"
#include "generators/storage.h"
#include <functional>
#include <optional>
#include <vector>

namespace blockfuse {

// LayerNorm over channels without affine (its gamma/beta are folded into the next layer's
// weights and bias at load time, like BatchNorm).
struct NormFuncs {
    Halide::Func mean, rstd;  // (x, y, n), f32
    Halide::Func normed;      // (c, x, y, n), storage type
    bool defined() const { return normed.defined(); }
};

// Squeeze-Excitation of a layer's output h (c, x, y, n): the spatial mean, two 1x1 "convs" on
// it, and h times the gate.
struct SEFuncs {
    Halide::Func pooled;   // (e, n) f32: mean over x, y (update: sum over r)
    Halide::RDom r;        // the pixels of h
    Halide::Func reduced;  // (j, n) f32: act(Wr pooled + br)
    Halide::Func gate;     // (e, n) f32: sigmoid(We reduced + be)
    Halide::Func gated;    // (e, x, y, n) storage type: h * gate, the next layer's input
    bool defined() const { return gated.defined(); }
};

struct BlockFuncs {
    std::vector<Conv2dFuncs> layers;  // layers.back().output is the block output
    // tensor_core[i]: layer i as an implicit GEMM on mma.sync fragments (layers[i] then holds its output only).
    std::vector<std::optional<GemmFuncs>> tensor_core;
    std::vector<NormFuncs> norms;  // norms[i]: after layers[i], if its spec asks for one
    SEFuncs se;                    // after layers[spec.se_after], if any
};

// The SE gate from the spatial mean: s.reduced (j, n) and s.gate (e, n) of mean (e, n), f32. se_weights: reduce
// (R, E, 1, 1) and expand (E, R, 1, 1) in the storage type; se_biases f32.
inline void se_gate(SEFuncs &s, const Halide::Func &mean, const BlockSpec &spec,
                    const std::vector<Halide::Func> &se_weights, const std::vector<Halide::Func> &se_biases,
                    const std::string &prefix) {
    using namespace Halide;
    Var e("e"), j("j"), n("n");
    const int E = spec.layers[spec.se_after].out_ch, R = spec.se_ch;
    RDom re(0, E, prefix + "se_re"), rj(0, R, prefix + "se_rj");
    s.reduced = Func(prefix + "se_reduced");
    s.reduced(j, n) = apply_activation(se_biases[0](j) + sum(to_f32(se_weights[0](j, re, 0, 0)) * mean(re, n)),
                                       Activation(spec.se_act));
    s.gate = Func(prefix + "se_gate");
    Expr a = se_biases[1](e) + sum(to_f32(se_weights[1](e, rj, 0, 0)) * s.reduced(rj, n));
    s.gate(e, n) = 1.0f / (1.0f + exp(-a));
}

inline SEFuncs squeeze_excitation(const Halide::Func &h, const BlockSpec &spec,
                                  const std::vector<Halide::Func> &se_weights,
                                  const std::vector<Halide::Func> &se_biases, const Halide::Expr &W,
                                  const Halide::Expr &H, const Halide::Type &storage, const std::string &prefix) {
    using namespace Halide;
    SEFuncs s;
    Var e("e"), x("x"), y("y"), n("n");
    s.r = RDom(0, W, 0, H, prefix + "se_r");
    s.pooled = Func(prefix + "se_pooled");
    s.pooled(e, n) = 0.0f;
    s.pooled(e, n) += to_f32(h(e, s.r.x, s.r.y, n));
    Func mean(prefix + "se_mean");
    mean(e, n) = s.pooled(e, n) / cast<float>(W * H);
    se_gate(s, mean, spec, se_weights, se_biases, prefix);
    s.gated = Func(prefix + "se_gated");
    s.gated(e, x, y, n) = from_f32(storage, to_f32(h(e, x, y, n)) * s.gate(e, n));
    return s;
}

inline NormFuncs layer_norm(const Halide::Func &h, int channels, const Halide::Type &storage, const std::string &name) {
    using namespace Halide;
    NormFuncs f;
    Var c("c"), x("x"), y("y"), n("n");
    RDom r(0, channels, name + "_r");
    f.mean = Func(name + "_mean");
    f.mean(x, y, n) = sum(to_f32(h(r, x, y, n))) / float(channels);
    Expr d = to_f32(h(r, x, y, n)) - f.mean(x, y, n);
    f.rstd = Func(name + "_rstd");
    f.rstd(x, y, n) = 1.0f / sqrt(sum(d * d) / float(channels) + float(kLayerNormEps));
    f.normed = Func(name);
    f.normed(c, x, y, n) = from_f32(storage, (to_f32(h(c, x, y, n)) - f.mean(x, y, n)) * f.rstd(x, y, n));
    return f;
}

// Which layers run on the tensor cores, and how: given layer i, its input and the residual to add (undefined but
// for the last layer of a residual block), the layer's implicit GEMM (generators/conv2d_tc_algorithm.h), or
// nothing for the CUDA-core convolution.
using TensorCoreLayer =
    std::function<std::optional<GemmFuncs>(size_t layer, const Halide::Func &in, const Halide::Func &residual)>;

// input: (c, x, y, n); weights[i]: (k, cg, kx, ky); biases[i]: (k) f32. W, H: input extents.
// se_weights / se_biases: Squeeze-Excitation's reduce and expand, when spec.has_se().
inline BlockFuncs block_algorithm(const Halide::Func &input, const std::vector<Halide::Func> &weights,
                                  const std::vector<Halide::Func> &biases, const BlockSpec &spec, const Halide::Expr &W,
                                  const Halide::Expr &H, const Halide::Type &storage, const std::string &prefix = "",
                                  const std::vector<Halide::Func> &se_weights = {},
                                  const std::vector<Halide::Func> &se_biases = {},
                                  const TensorCoreLayer &tensor_core = {}) {
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
        g.unpadded = L.ks == 1;
        const bool last = i + 1 == spec.layers.size();
        const int act = L.act;
        Func block_in = input;
        // The residual read is clamped to the block input: a no-op for every output pixel, but
        // it bounds the read when a depth-first stage computes this block on a region grown by
        // halos (Halide's bounds of the fused thread mappings are loose: without the clamp the
        // stage kernel "read" the stage input at y = -62 and failed its bounds check).
        Expr W0 = W, H0 = H;
        Epilogue epi = [act, last, residual = spec.residual, block_in, W0, H0](const Expr &acc,
                                                                               const std::vector<Var> &v) {
            Expr r = apply_activation(acc, Activation(act));
            if (last && residual) r += to_f32(block_in(v[0], clamp(v[1], 0, W0 - 1), clamp(v[2], 0, H0 - 1), v[3]));
            return r;
        };
        std::optional<GemmFuncs> tc;
        if (tensor_core) tc = tensor_core(i, x, last && spec.residual ? input : Func());
        if (tc) {
            b.layers.emplace_back().output = tc->output;
        } else {
            b.layers.push_back(conv2d(x, weights[i], biases[i], g, epi, storage, prefix + "layer" + std::to_string(i)));
        }
        b.tensor_core.push_back(tc);
        x = b.layers.back().output;
        b.norms.emplace_back();
        if (L.norm_after) {
            b.norms.back() = layer_norm(x, L.out_ch, storage, prefix + "norm" + std::to_string(i));
            x = b.norms.back().normed;
        }
        w = (w + 2 * (L.ks / 2) - L.ks) / L.stride + 1;
        h = (h + 2 * (L.ks / 2) - L.ks) / L.stride + 1;
        if (spec.se_after == int(i)) {
            b.se = squeeze_excitation(x, spec, se_weights, se_biases, w, h, storage, prefix);
            x = b.se.gated;
        }
    }
    return b;
}

}  // namespace blockfuse
