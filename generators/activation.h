// Element-wise activations shared by every algorithm. Pure expressions: no scheduling here.
#pragma once
#include "Halide.h"
#include <string>

namespace blockfuse {

// The numeric ids are part of the kernels' ABI (the `activation` runtime argument).
enum class Activation : int { none = 0, relu = 1, relu6 = 2, silu = 3, gelu = 4, sigmoid = 5, gelu_erf = 6 };

// `gelu` is the tanh approximation (PyTorch's gelu(approximate="tanh")); `gelu_erf` the exact form
// (nn.GELU's default, torchvision's ConvNeXt) through Halide's f32 erf, accurate to its last three bits.
// division_free: SiLU's and the sigmoid's 1 / (1 + exp(-x)) by Newton's iteration from an integer first guess, for
// kernels that apply the activation inside their mma loops (generators/ffn_tc_algorithm.h's hidden chunk):
// CUDA's division and reciprocal (div.rn, rcp.rn; Halide's fast_inverse is rcp.rn there) have a slow path ptxas
// makes a subroutine CALL, whose calling convention pins registers across the loop.
inline Halide::Expr reciprocal_of_at_least_one(const Halide::Expr &d) {
    using namespace Halide;
    // d in [1, 1e30] (exp's overflow clamped: x / d then rounds to the 0 it should be). The guess is within 5.1%,
    // each step squares the relative error: after three, 1.5e-7 (f32's rounding; checked over [1, 1e30] in numpy).
    Expr dc = min(d, 1e30f);
    Expr r = reinterpret(Float(32), cast(Int(32), 0x7EF311C3) - reinterpret(Int(32), dc));
    for (int i = 0; i < 3; ++i) r = r * (2.0f - dc * r);
    return r;
}
// erf without a division: Abramowitz and Stegun's 7.1.26 (absolute error below 1.5e-7), the reciprocal 1 / (1 + p|x|)
// by reciprocal_of_at_least_one. Halide's erf raises a polynomial to the power -16: a division, which ptxas leaves
// as a CALL in the loop.
inline Halide::Expr erf_division_free(const Halide::Expr &x) {
    using namespace Halide;
    Expr ax = abs(x);
    Expr t = reciprocal_of_at_least_one(1.0f + 0.3275911f * ax);
    Expr poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    Expr e = 1.0f - poly * exp(-ax * ax);
    return select(x < 0.0f, -e, e);
}

inline Halide::Expr apply_activation(const Halide::Expr &x, Activation a, bool division_free = false) {
    using namespace Halide;
    auto inverse = [division_free](const Expr &d) { return division_free ? reciprocal_of_at_least_one(d) : 1.0f / d; };
    switch (a) {
    case Activation::none: return x;
    case Activation::relu: return max(x, 0.0f);
    case Activation::relu6: return clamp(x, 0.0f, 6.0f);
    case Activation::silu: return division_free ? x * inverse(1.0f + exp(-x)) : x / (1.0f + exp(-x));
    case Activation::gelu: {
        Expr inner = 0.7978845608028654f * (x + 0.044715f * x * x * x);
        // Division-free: 0.5 (1 + tanh(z)) is the sigmoid of 2z, so no tanh (ptxas branches on its ranges).
        if (division_free) return x * inverse(1.0f + exp(-2.0f * inner));
        return 0.5f * x * (1.0f + tanh(inner));
    }
    case Activation::sigmoid: return inverse(1.0f + exp(-x));
    case Activation::gelu_erf: {
        Expr u = x * 0.7071067811865476f;
        return 0.5f * x * (1.0f + (division_free ? erf_division_free(u) : erf(u)));
    }
    }
    return x;
}

// Activation chosen at run time by id (conv2d family kernels take it as an argument). gelu_erf is not
// among them: it serves the block families (a static param), and another arm of this select would be
// computed by every conv2d kernel's generic epilogue; conv2d keys reject it.
inline Halide::Expr apply_activation(const Halide::Expr &x, const Halide::Expr &id) {
    using namespace Halide;
    return select(id == int(Activation::relu), apply_activation(x, Activation::relu), id == int(Activation::relu6),
                  apply_activation(x, Activation::relu6), id == int(Activation::silu),
                  apply_activation(x, Activation::silu), id == int(Activation::gelu),
                  apply_activation(x, Activation::gelu), id == int(Activation::sigmoid),
                  apply_activation(x, Activation::sigmoid), x);
}

}  // namespace blockfuse
