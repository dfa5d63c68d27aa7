// 16-bit floating-point values as their bit patterns (uint16), converted to and from f32 with integer
// operations only: exact, the same on every target, and free of native half types (PoCL's CPU device
// has none). The tensor-core kernels keep f16/bf16 data as bits from input to output.
#pragma once
#include "Halide.h"
#include "generators/mma_abi.h"

namespace blockfuse::mma {

enum class Elem { f16, bf16 };

inline Halide::Expr b16_to_f32(const Halide::Expr &bits, Elem e) {
    using namespace Halide;
    Expr h = cast(UInt(32), bits);
    if (e == Elem::bf16) return reinterpret(Float(32), h << 16);
    Expr sign = (h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    Expr normal = reinterpret(Float(32), sign | ((exp + 112) << 23) | (man << 13));
    Expr inf_nan = reinterpret(Float(32), sign | Expr(uint32_t(0x7f800000)) | (man << 13));
    Expr subnormal = select(sign != 0, -1.0f, 1.0f) * cast(Float(32), man) * (1.0f / 16777216.0f);
    return select(exp == 0, subnormal, exp == 31, inf_nan, normal);
}

// f32 -> bits, rounded to nearest even (as PyTorch does), integer arithmetic on every target. Not the
// native f16 cast: vectorized (a register pair of C stored as one 32-bit word), Halide 21's CUDA backend
// (LLVM 21.1 NVPTX) lowers cast<float16>(<2 x float>) to the two f32 packed in a 64-bit register and stores
// its low 32 bits, no cvt at all (wrong numbers on the H200; tests/tensor_core_sass.py refuses such a
// store); bf16 native casts crash that backend outright (generators/storage.h).
inline Halide::Expr f32_to_b16(const Halide::Expr &f, Elem e) {
    using namespace Halide;
    Expr x = reinterpret(UInt(32), f);
    if (e == Elem::bf16) {
        Expr rounded = (x + (Expr(uint32_t(0x7fff)) + ((x >> 16) & 1))) >> 16;
        return select(is_nan(f), Expr(uint16_t(0x7fc0)), cast(UInt(16), rounded));
    }
    auto u = [](uint32_t v) { return Halide::Expr(v); };
    Expr sign = cast(UInt(16), (x >> 16) & u(0x8000)), ax = x & u(0x7fffffff);
    // Below the smallest normal (2^-14): |f| * 2^24 is exact and rounds to the subnormal's mantissa
    // (1024 becomes the smallest normal, as it should).
    Expr sub = cast(UInt(16), round(abs(f) * 16777216.0f));
    Expr normal = cast(UInt(16), (ax - u(0x38000000) + u(0xfff) + ((ax >> 13) & u(1))) >> 13);
    Expr mag = select(ax > u(0x7f800000), Expr(uint16_t(0x7e00)),   // NaN
                      ax >= u(0x477ff000), Expr(uint16_t(0x7c00)),  // rounds to infinity
                      ax < u(0x38800000), sub, normal);
    return sign | mag;
}

// f32 -> bits of the storage type inside a kernel: on CUDA (native) by the hardware's conversion, elsewhere
// f32_to_b16. f16: Halide's native cast (cvt.rn.f16.f32, or cvt.rn.f16x2.f32 a pair of lanes: one instruction where
// f32_to_b16 takes about ten); the caller's schedule must convert scalars or vectors of a multiple of 4 lanes (a
// two-lane vector is the trap described above; tests/kernels/tensor_core_sass.py fails a kernel that stores an f32 as
// 16 bits). bf16: the extern kCvtBf16, which the driver shim rewrites into cvt.rn.bf16.f32 (runtime/mma_ptx.h; ptxas
// pairs two into one F2FP.BF16.F32.PACK_AB) when it loads any module that calls a blockfuse_ extern (every CUDA module
// blockfuse loads goes through it). Both round to nearest even as f32_to_b16 does; they differ only in a NaN's
// payload.
inline bool converts_natively(Elem e, bool native) { return native && e == Elem::f16; }
inline Halide::Expr to_b16_bits(const Halide::Expr &f, Elem e, bool native) {
    using namespace Halide;
    if (converts_natively(e, native)) return reinterpret(UInt(16), cast(Float(16), f));
    if (native && e == Elem::bf16) return Internal::Call::make(UInt(16), kCvtBf16, {f}, Internal::Call::PureExtern);
    return f32_to_b16(f, e);
}

// bits -> f32, the inverse: f16 on CUDA with the hardware's conversion (exact both ways).
inline Halide::Expr from_b16_bits(const Halide::Expr &bits, Elem e, bool native) {
    using namespace Halide;
    if (converts_natively(e, native)) return cast(Float(32), reinterpret(Float(16), bits));
    return b16_to_f32(bits, e);
}

}  // namespace blockfuse::mma
