// Fragment-space building blocks for mma.sync.m16n8k16 (f16/bf16 inputs, f32 accumulators), the
// algorithm side only: no scheduling here. A kernel is written over Funcs indexed by (register, lane,
// tile...) following the PTX ISA tables (generators/mma_abi.h).
//
// On CUDA targets the instructions are opaque scalar extern calls (one per result register), which
// runtime/mma_ptx.cpp fuses into mma.sync / ldmatrix when the module is loaded. On every other target
// they are emulated in Halide from the same tables, each lane reading the other lanes' registers, so
// the CPU and PoCL run the very fragment indexing the GPU does and a layout mistake shows as wrong
// numbers there.
#pragma once
#include "Halide.h"
#include "generators/b16_bits.h"
#include "generators/mma_abi.h"
#include <functional>
#include <string>
#include <utility>

namespace blockfuse::mma {

// A fragment Func as the mma reads it: the 32-bit register `reg` of lane `lane` (other coordinates bound).
using FragmentAt = std::function<Halide::Expr(const Halide::Expr &reg, const Halide::Expr &lane)>;
// A b16 panel in shared memory as ldmatrix reads it: element (k, row), k contiguous in memory.
using PanelAt = std::function<Halide::Expr(const Halide::Expr &k, const Halide::Expr &row)>;
// The start (k, row) of the 16-byte row lane `lane` points ldmatrix at.
using RowStart = std::function<std::pair<Halide::Expr, Halide::Expr>(const Halide::Expr &lane)>;

// Two b16 values (bit patterns) packed into one 32-bit register, the first in the low half.
inline Halide::Expr pack_b16(const Halide::Expr &lo, const Halide::Expr &hi) {
    using namespace Halide;
    return cast(UInt(32), lo) | (cast(UInt(32), hi) << 16);
}

// The low (half 0) or high (half 1) b16 of a packed register, as f32.
inline Halide::Expr unpack_f32(const Halide::Expr &reg, const Halide::Expr &half, Elem e) {
    using namespace Halide;
    return b16_to_f32(cast(UInt(16), (reg >> (cast(UInt(32), half) * 16)) & 0xffff), e);
}

// Register `reg` of lane `lane` after ldmatrix.x{count} (count 2 or 4) from `panel`, where lane i points
// at the row row_start(i). Native: an impure extern (so it is never moved across a barrier) whose
// address argument is the panel element itself plus the row's last element: the element tells the
// kernel's lowering pass which shared allocation and index to turn into a byte address
// (schedules/mma_lowering.h), and the pair tells bounds inference the whole 16-byte row is read.
inline Halide::Expr ldmatrix(int count, const Halide::Expr &reg, const Halide::Expr &lane, const PanelAt &panel,
                             const RowStart &row_start, bool native) {
    using namespace Halide;
    if (native) {
        auto [k, row] = row_start(lane);
        return Internal::Call::make(UInt(32), count == 4 ? kLdmatrixX4 : kLdmatrixX2,
                                    {reg, panel(k, row), panel(k + 7, row)}, Internal::Call::Extern);
    }
    auto [k, row] = row_start(ldmatrix_source_lane(reg, lane));
    Expr e = ldmatrix_element(lane);
    return pack_b16(panel(k + e, row), panel(k + e + 1, row));
}

// A panel of 8-element groups (ke, kg, row), element k of a row at (k % 8, k / 8): as ldmatrix reads it.
inline PanelAt grouped_panel(const Halide::Func &p) {
    return [p](const Halide::Expr &k, const Halide::Expr &row) { return p(k % 8, k / 8, row); };
}

// Defines frag(j, lane, pair, step) as the B fragments of n-tiles 2 pair and 2 pair + 1 (register j = 2 (n-tile %
// 2) + r) at K step `step`, one ldmatrix.x4 from a grouped panel whose rows are the N columns.
inline Halide::Func b_pair_fragments(Halide::Func frag, const Halide::Func &panel, const Halide::Var &j,
                                     const Halide::Var &lane, const Halide::Var &pair, const Halide::Var &step,
                                     bool native) {
    frag(j, lane, pair, step) = ldmatrix(
        4, j, lane, grouped_panel(panel),
        [&](const Halide::Expr &l) {
            return std::pair{step * kTileK + ldsm_b_k(l), pair * 2 * kTileN + ldsm_b_col(l)};
        },
        native);
    return frag;
}

// Register q of D = A * B + C for lane `lane`, where c is that lane's register q of C.
// Native: a pure extern carrying only its own c (a tuple-free update; Halide 21's SplitTuples does not
// look inside call arguments). Emulated: the 16-term dot product, A's and B's elements read from the
// lanes and registers that hold them.
inline Halide::Expr mma(Elem e, const Halide::Expr &q, const Halide::Expr &lane, const FragmentAt &a,
                        const FragmentAt &b, const Halide::Expr &c, bool native) {
    using namespace Halide;
    if (native) {
        return Internal::Call::make(Float(32), e == Elem::f16 ? kMmaF16 : kMmaBf16,
                                    {q, a(0, lane), a(1, lane), a(2, lane), a(3, lane), b(0, lane), b(1, lane), c},
                                    Internal::Call::PureExtern);
    }
    Expr row = c_row(q, lane), col = c_col(q, lane);
    Expr d = c;
    for (int k = 0; k < kTileK; ++k) {
        Expr ka = Expr(k);
        Expr av = unpack_f32(a(a_reg_of(row, ka), a_lane_of(row, ka)), k % 2, e);
        Expr bv = unpack_f32(b(b_reg_of(ka), b_lane_of(ka, col)), k % 2, e);
        d = d + av * bv;
    }
    return d;
}

// Register i (of n / 2) of wgmma.m64n{n}k16's D for lane `lane` of warp `warp` (0-3) of the warpgroup, c that lane's
// register i of C; a(k, row) is the bits of the warpgroup's 64 x 16 A tile (row 0-63, k 0-15) in a core-matrix panel,
// b(k, col) those of the n x 16 B tile. Native: an impure extern (never moved across a barrier) carrying, for each
// operand, its panel elements at (k, row) = (0, 0), (0, 1), (8, 0), (0, 8) and its last: the kernel's lowering pass
// turns them into the tile's shared byte address and the byte offsets between core matrices along K and along the
// rows, having checked that a core matrix's rows are 16 contiguous bytes each (schedules/mma_lowering.h); the last
// tells bounds inference the whole tile is read. Emulated: the 16-term dot
// product of the register's row and column, read from the panels.
inline Halide::Expr wgmma(Elem e, int n, const Halide::Expr &i, const Halide::Expr &lane, const Halide::Expr &warp,
                          const PanelAt &a, const PanelAt &b, const Halide::Expr &c, bool native) {
    using namespace Halide;
    if (native) {
        return Internal::Call::make(Float(32), e == Elem::f16 ? kWgmmaF16 : kWgmmaBf16,
                                    {i, n, a(0, 0), a(0, 1), a(8, 0), a(0, 8), a(15, kWgmmaM - 1), b(0, 0), b(0, 1),
                                     b(8, 0), b(0, 8), b(15, n - 1), c},
                                    Internal::Call::Extern);
    }
    Expr q = i % 4, row = kTileM * warp + c_row(q, lane), col = kTileN * (i / 4) + c_col(q, lane);
    Expr d = c;
    for (int k = 0; k < kTileK; ++k) d = d + b16_to_f32(a(k, row), e) * b16_to_f32(b(k, col), e);
    return d;
}

}  // namespace blockfuse::mma
