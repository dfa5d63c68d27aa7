// GPU thread mappings shared by the multi-stage schedules (fused blocks, depth-first stem).
#pragma once
#include "Halide.h"

namespace blockfuse {

// Shared memory for a Func computed at thread-block level. Halide 21 packs a kernel's shared allocations
// back to back, each aligned only to its element type (FuseGPUThreadLoops.cpp), so an allocation whose
// size is not a multiple of 16 bytes misaligns the vector accesses to the ones after it: on the H200 a
// fused ConvNeXt c=192 with 7x7 tiles faulted (misaligned address) reading its LayerNorm'd f16 tile
// 8 channels at a time behind the 13x13-pixel statistics. The innermost storage dimension of every
// shared Func is padded to a multiple of 8 elements, so every allocation is a multiple of 16 bytes.
constexpr int kSharedAlignElements = 8;
inline void store_in_shared(Halide::Func f) {
    f.store_in(Halide::MemoryType::GPUShared).align_storage(f.args()[0], kSharedAlignElements);
}

// The stores of an mma output's register pairs (two adjacent columns of a lane), the stage's pair loop unrolled
// already. Where the algorithm converts them natively (its Funcs' scalar_pairs: f16 on CUDA, cvt.rn.f16.f32 by
// to_b16_bits in generators/b16_bits.h) left so, each value stored alone: as a 2-element vector the conversion would
// be a 2-element f16 cast, which Halide 21's CUDA backend stores unconverted. Otherwise a 2-element vector (of the
// integer rounding).
inline void store_register_pairs(Halide::Stage st, const Halide::RVar &pair, bool scalar_pairs) {
    if (!scalar_pairs) st.vectorize(pair);
}

// Cooperative production of a Func computed at thread-block level into shared memory: its
// (channel, x, y) points are spread over a threads_x x threads_y block, the same shape as the
// consumer's thread loops, so the block has no idle lanes; each thread produces `vec` consecutive
// channels of one point (vec must divide the produced channel extent). unroll_rounds: the rounds
// of the block over the points unrolled (a copy's loads all in flight before its stores; the
// extent must be constant). Returns the innermost thread Var (for compute_at of the Func's own
// reduction, in registers).
// One loop `v` of a stage spread over a threads_x x threads_y block: rounds of the whole block (the
// outer loop, returned) over threads_x x threads_y threads, the tail guarded; *thread: the inner thread Var.
inline Halide::Var spread_var_over_block(Halide::Stage s, const Halide::Var &v, int threads_x, int threads_y,
                                         Halide::Var *thread = nullptr) {
    using namespace Halide;
    Var ho("ho"), hi("hi"), ha("ha"), hb("hb");
    s.split(v, ho, hi, threads_x * threads_y, TailStrategy::GuardWithIf)
        .split(hi, hb, ha, threads_x)
        .gpu_threads(ha, hb);
    if (thread) *thread = ha;
    return ho;
}

inline Halide::Var spread_over_block(Halide::Func h, int threads_x, int threads_y, int vec = 1,
                                     bool unroll_rounds = false) {
    using namespace Halide;
    Var hk = h.args()[0], hx = h.args()[1], hy = h.args()[2];
    Var hxy("hxy"), hi("hi"), hkv("hkv"), ha;
    store_in_shared(h);
    if (vec > 1) h.split(hk, hk, hkv, vec, TailStrategy::RoundUp).vectorize(hkv);
    h.fuse(hx, hy, hxy).fuse(hk, hxy, hi);
    const Var ho = spread_var_over_block(h, hi, threads_x, threads_y, &ha);
    if (unroll_rounds) h.unroll(ho);
    return ha;
}

// An output (k, x, y, n) over thread blocks: a block owns tile_x x tile_y pixels and every
// channel; thread (kt, xi) owns vec_k channels of a tile_y pixel column (unrolled).
// Returns the block-level Var (the loop stages of the block are computed at).
inline Halide::Var tile_output_over_threads(Halide::Func out, int tile_x, int tile_y, int vec_k) {
    using namespace Halide;
    const TailStrategy guard = TailStrategy::GuardWithIf;
    Var k = out.args()[0], x = out.args()[1], y = out.args()[2], n = out.args()[3];
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), t("t"), kt("kt"), kv("kv");
    out.tile(x, y, xo, yo, xi, yi, tile_x, tile_y, guard)
        .split(k, kt, kv, vec_k, guard)
        .reorder(kv, yi, kt, xi, xo, yo, n)
        .fuse(yo, n, t)
        .gpu_blocks(xo, t)
        .gpu_threads(kt, xi)
        .unroll(kv)
        .unroll(yi);
    return xo;
}

// The reduction of a Func produced by spread_over_block: `vec` channels of one point per
// thread, in registers.
inline void accumulate_in_register(Halide::Func acc, const Halide::Func &h, const Halide::Var &thread, int vec = 1) {
    using namespace Halide;
    acc.compute_at(h, thread).store_in(MemoryType::Register);
    const std::vector<Var> args = acc.args();
    for (size_t i = 0; i < args.size(); ++i) acc.bound_extent(args[i], i == 0 ? vec : 1);
    if (vec > 1) {
        acc.vectorize(args[0]);
        acc.update().vectorize(args[0]);
    }
}

}  // namespace blockfuse
