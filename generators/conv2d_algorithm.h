// conv2d, the algorithm only: one definition for full, pointwise, depthwise (with channel
// multiplier), grouped, strided, dilated, symmetric or asymmetric zero padding, optional bias
// and an epilogue (activation, residual...). No scheduling call appears here.
//
// Layout NHWC: Halide dims (c, x, y, n), channels innermost (PyTorch channels_last order).
// Weights: (k, cg, kx, ky), output channel innermost so that threads that own consecutive
// output channels read consecutive weights. Accumulation is f32 whatever the storage type.
#pragma once
#include "Halide.h"
#include "generators/storage.h"
#include <functional>

namespace blockfuse {

// Every field is an Expr so that one definition serves static shapes (constants from
// GeneratorParams, better code) and dynamic ones (Params / buffer extents).
struct Conv2dGeometry {
    Halide::Expr in_width, in_height;     // input extents, for zero padding
    Halide::Expr groups;                  // number of groups
    Halide::Expr in_channels_per_group;   // Cg = C / groups
    Halide::Expr out_channels_per_group;  // Kg = K / groups
    Halide::Expr kernel_w, kernel_h;      // S, R
    Halide::Expr stride_x, stride_y;
    Halide::Expr dilation_x, dilation_y;
    Halide::Expr pad_left, pad_top;  // right/bottom padding follow from the output extent
    // No padding on any side: every stored output's window lies inside the input. Reads outside
    // then come only from the pixels an edge tile computes past the image and never stores, so
    // the clamped value serves and the zero select (one instruction per loaded value, inside the
    // reduction) is left out. The block layers set it for their 1x1 convolutions.
    bool unpadded = false;
    // The reduction's taps limited to those inside the image (an RDom predicate, which Halide turns into the window
    // loops' bounds per tile of outputs): the zero padding's taps are skipped instead of multiplied. A dilated window
    // with wide padding (deeplabv3-aspp: 44% of its taps) gains; elsewhere it only adds bounds to compute.
    bool trim_window = false;
};

struct Conv2dFuncs {
    Halide::Func padded;   // zero-padded input, f32 (c, x, y, n)
    Halide::Func accum;    // f32 accumulator (k, x, y, n): pure = bias, update = reduction
    Halide::Func output;   // epilogue(accum), cast to the storage type
    Halide::Func weights;  // the weights widened to f32 (k, cg, kx, ky): inline unless a schedule stages them
    Halide::RDom r;        // (cg, kx, ky)
};

using Epilogue = std::function<Halide::Expr(const Halide::Expr &acc, const std::vector<Halide::Var> &kxyn)>;

// input: (c, x, y, n) storage type; weights: (k, cg, kx, ky); bias: (k) f32.
inline Conv2dFuncs conv2d(const Halide::Func &input, const Halide::Func &weights, const Halide::Func &bias,
                          const Conv2dGeometry &g, const Epilogue &epilogue, const Halide::Type &out_type,
                          const std::string &name = "conv") {
    using namespace Halide;
    Var c("c"), k("k"), x("x"), y("y"), n("n");
    Conv2dFuncs f;

    // Clamp the access and select zero outside: Halide may evaluate the producer on the
    // halo outside the image, so the load itself must stay in bounds.
    f.padded = Func(name + "_padded");
    Expr inside = x >= 0 && x < g.in_width && y >= 0 && y < g.in_height;
    Expr clamped = to_f32(input(c, clamp(x, 0, g.in_width - 1), clamp(y, 0, g.in_height - 1), n));
    f.padded(c, x, y, n) = g.unpadded ? clamped : select(inside, clamped, 0.0f);

    f.r = RDom(0, g.in_channels_per_group, 0, g.kernel_w, 0, g.kernel_h, name + "_r");
    // One group: no per-lane group index, so a vector of output channels reads one input channel.
    Expr group = is_const_one(g.groups) ? Expr(0) : k / g.out_channels_per_group;
    Expr in_c = group * g.in_channels_per_group + f.r.x;
    Expr in_x = x * g.stride_x + f.r.y * g.dilation_x - g.pad_left;
    Expr in_y = y * g.stride_y + f.r.z * g.dilation_y - g.pad_top;
    if (g.trim_window) f.r.where(in_x >= 0 && in_x < g.in_width && in_y >= 0 && in_y < g.in_height);

    f.weights = Func(name + "_weights");
    f.weights(k, c, x, y) = to_f32(weights(k, c, x, y));

    f.accum = Func(name + "_accum");
    f.accum(k, x, y, n) = bias(k);
    f.accum(k, x, y, n) += f.padded(in_c, in_x, in_y, n) * f.weights(k, f.r.x, f.r.y, f.r.z);

    f.output = Func(name);
    f.output(k, x, y, n) = from_f32(out_type, epilogue(f.accum(k, x, y, n), {k, x, y, n}));
    return f;
}

}  // namespace blockfuse
