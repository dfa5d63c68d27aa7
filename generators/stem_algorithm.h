// The stem: 3x3 stride-2 conv (+ folded BN, ReLU) then a 3x3 stride-2 max pool (padding 1), the
// depth-first tiling example. Algorithm only.
#pragma once
#include "generators/activation.h"
#include "generators/conv2d_algorithm.h"
#include "generators/storage.h"

namespace blockfuse {

struct StemFuncs {
    Conv2dFuncs conv;
    Halide::Func pool;  // (k, x, y, n), storage type
    Halide::RDom window;
};

inline int stem_out(int in) { return (in - 1) / 2 + 1; }  // k3 s2 p1, applied twice for conv then pool

inline StemFuncs stem_algorithm(const Halide::Func &input, const Halide::Func &weights, const Halide::Func &bias,
                                const Halide::Expr &W, const Halide::Expr &H, int C, int K,
                                const Halide::Type &storage) {
    using namespace Halide;
    StemFuncs s;
    Conv2dGeometry g;
    g.in_width = W;
    g.in_height = H;
    g.groups = 1;
    g.in_channels_per_group = C;
    g.out_channels_per_group = K;
    g.kernel_w = g.kernel_h = 3;
    g.stride_x = g.stride_y = 2;
    g.dilation_x = g.dilation_y = 1;
    g.pad_left = g.pad_top = 1;
    s.conv = conv2d(
        input, weights, bias, g,
        [](const Expr &acc, const std::vector<Var> &) { return apply_activation(acc, Activation::relu); }, storage,
        "stem_conv");
    Expr CW = (W - 1) / 2 + 1, CH = (H - 1) / 2 + 1;  // conv output extents
    Var k("k"), x("x"), y("y"), n("n");
    s.window = RDom(0, 3, 0, 3, "pool_r");
    Expr cx = 2 * x + s.window.x - 1, cy = 2 * y + s.window.y - 1;
    Expr inside = cx >= 0 && cx < CW && cy >= 0 && cy < CH;
    // Clamped access, -inf outside: the pool never reads the conv outside its extent.
    Expr v = select(inside, to_f32(s.conv.output(k, clamp(cx, 0, CW - 1), clamp(cy, 0, CH - 1), n)), Float(32).min());
    s.pool = Func("stem_pool");
    s.pool(k, x, y, n) = from_f32(storage, maximum(v));
    return s;
}

}  // namespace blockfuse
