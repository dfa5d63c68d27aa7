// Conversions between storage types and the f32 compute type. bf16 is converted with integer
// bit operations: Halide 21's PTX backend hits an LLVM "Invalid cast" assertion on native
// bf16 casts (seen building host-cuda-cuda_capability_80), and the bit form is exact anyway.
#pragma once
#include "Halide.h"

namespace blockfuse {

inline Halide::Expr to_f32(const Halide::Expr &e) {
    using namespace Halide;
    if (e.type().is_bfloat()) return reinterpret(Float(32), cast(UInt(32), reinterpret(UInt(16), e)) << 16);
    return cast<float>(e);
}

// Round to nearest even, as PyTorch does; a NaN becomes PyTorch's quiet NaN 0x7FC0. Without that test the
// rounding carries a NaN whose low mantissa bits are set (CUDA's canonical NaN 0x7FFFFFFF, what max.NaN and
// every NaN-producing instruction there return) into the sign bit: -0. The test is on the bits, which fast-math
// flags cannot fold away.
inline Halide::Expr from_f32(const Halide::Type &t, const Halide::Expr &f) {
    using namespace Halide;
    if (t.is_bfloat()) {
        Expr bits = reinterpret(UInt(32), f);
        Expr rounded = (bits + (Expr(uint32_t(0x7fff)) + ((bits >> 16) & 1))) >> 16;
        Expr nan = (bits & Expr(uint32_t(0x7fffffff))) > Expr(uint32_t(0x7f800000));
        return reinterpret(t, cast(UInt(16), select(nan, Expr(uint32_t(0x7fc0)), rounded)));
    }
    return cast(t, f);
}

// Whether a GPU schedule may store `lanes` lanes of type t as one vector. Halide 21's CUDA backend (LLVM
// NVPTX) stores a pair of f16 lanes as st.global.v2.b16 of the two f32 registers, the conversion dropped (the
// outputs come out zero or garbage on the H200); f16 vectors of 4k lanes convert in pairs (cvt.rn.f16x2.f32) and
// are right, other lane counts (2, 3, 6) end in such a pair. docs/halide-21.md.
inline bool gpu_vector_store_ok(const Halide::Type &t, int lanes) {
    return !(t.is_float() && t.bits() == 16) || lanes % 4 == 0;
}

}  // namespace blockfuse
