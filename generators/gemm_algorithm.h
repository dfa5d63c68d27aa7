// GEMM on tensor cores, the algorithm only: C[m][n] = act(sum_k A[m][k] B[n][k] + bias[n]) (C = A B^T with
// B the N x K weights), f16 or bf16 inputs, f32 accumulation, output in the input's storage type. No
// scheduling call appears here.
//
// Layouts (Halide dims, innermost first): A (k, m) = M x K with K innermost, as NHWC activations are
// pixels x channels; B (k, n) = the weights as N x K with K innermost (nn.Linear's layout, and the
// one ldmatrix reads without transposing); bias (n) f32; C (n, m). A, B and C are bit patterns (uint16);
// A's and B's rows are padded with zeros to a multiple of 8 elements (GemmShape::K_padded).
//
// The product is written in the fragment space of mma.sync.m16n8k16 (generators/mma.h): a block of
// warps_m x warps_n warps computes a block_m x block_n tile of C, each warp a warp_m x warp_n tile,
// i.e. mt_count x nt_count instruction tiles of 16 x 8, over K in steps of 16 (kt). The accumulator
// acc(q, lane, nt, mt, wn, wm, bn, bm) is register q of lane `lane` of instruction tile (nt, mt) of
// warp (wn, wm) of block (bn, bm). A and B are read through panels that are zero outside M x K and
// N x K, so every tile is whole and every lane takes part in every instruction (mma.sync needs all 32).
#pragma once
#include "Halide.h"
#include "generators/activation.h"
#include "generators/mma.h"
#include <functional>
#include <limits>
#include <vector>

namespace blockfuse {

// The tile shape the fragment space is built on (schedules/gemm_knobs.h declares the knobs).
struct GemmTiling {
    int warp_m = 64, warp_n = 64;  // multiples of 16
    int warps_m = 2, warps_n = 2;
    int k_step = 32;  // K per shared panel, a multiple of 16
    int split_k = 1;  // K split over this many blocks per output tile (partial sums added in the epilogue)
    // Hopper's wgmma instead of mma.sync: each 4 warps along M a warpgroup whose instruction covers 64 x warp_n
    // (warp_m = 16, one warp along N), A and B read by the tensor cores from the panels in shared memory (no ldmatrix,
    // no fragments in registers); the panels then in core matrices, (ke, row % 8, kg, row / 8), or with K steps of 64
    // in 128-byte swizzled rows (wgmma_swizzled).
    bool wgmma = false;
    // The epilogue's C tile staged in shared memory (GemmFuncs::c_tile), then stored by whole rows (a warp's store whole
    // 32-byte sectors) instead of each lane's register pairs (a warp's store half of each sector it touches).
    bool stage_c = false;
    // wgmma with K steps of 64: each panel row one 128-byte line, its 16-byte chunks swizzled (mma_abi.h
    // kWgmmaSwizzle128): the tensor cores read 8 rows' chunk c from 8 banks, not one.
    bool wgmma_swizzled() const { return wgmma && k_step == 64; }
    int mt_count() const { return warp_m / mma::kTileM; }
    int nt_count() const { return warp_n / mma::kTileN; }
    int block_m() const { return warp_m * warps_m; }
    int block_n() const { return warp_n * warps_n; }
    int kt_per_step() const { return k_step / mma::kTileK; }
};

struct GemmFuncs {
    // The panels a block stages in shared memory: A's (B's) bits, zero outside M x K (N x K), indexed by
    // (k % 8, k / 8, row), so that a row's 8-element groups are whole vectors in every schedule.
    Halide::Func a_panel;  // (ke, kg, m[, win]): win, the output columns' window where A has windows (GemmIo)
    Halide::Func b_panel;  // (ke, kg, n); with wgmma both (ke, ri, kg, ro): row 8 ro + ri (core matrices of 8 rows);
                           // swizzled (GemmTiling::wgmma_swizzled), kg the stored chunk: K group kg ^ ri of the K
                           // step's 8, stored (ke, kg, ri, ro)
    // Undefined with wgmma (the tensor cores read the panels):
    Halide::Func a_frag;  // (r, lane, mt, wm, bm, kt[, win]): A register r of instruction tile (mt, wm, bm), K step kt
    Halide::Func b_frag;  // (j, lane, np, wn, bn, kt): register j of the B fragments of n-tiles 2np, 2np+1
                          // (j = 2 * (nt % 2) + r; one n-tile, j = r, where nt_count is odd)
    Halide::Func acc;     // (q, lane, nt, mt, wn, wm, bn, bm[, ks]), f32: pure = 0, update over rk
    // Split K (split_k > 1): acc has a last dimension, the split ks, whose K steps are the panels ks, ks + split_k,
    // ks + 2 split_k, ... (ceil(panels / split_k) of them); `partial` is acc as a stage of its own (a global f32
    // workspace, its own kernel), which the epilogue sums over ks. Undefined without a split.
    Halide::Func partial;   // (q, lane, nt, mt, wn, wm, bn, bm, ks), f32
    Halide::Func epilogue;  // (q, lane, nt, mt, wn, wm, bn, bm): act(acc + bias) [+ residual] as the storage bits
    Halide::Func output;    // (n, m): the epilogue as storage bits, an update over rc (rs where C is staged)
    Halide::RDom rc;        // (q0, mh, nt, mt, lane, wn, wm, bn, bm): the C registers, see gemm(); staged, the first 7
    // GemmTiling::stage_c: c_tile (n, m, bn, bm), block (bn, bm)'s tile of C as storage bits (n, m within the tile), an
    // update over rc; the output an update over rs (n, m within the tile, bn, bm) reading it. Undefined otherwise.
    Halide::Func c_tile;
    Halide::RDom rs;
    Halide::RDom rk;  // (K step of 16 within a panel, panel): ceil(K / k_step) whole panels
    Halide::Var r{"r"}, lane{"lane"}, q{"q"}, nt{"nt"}, np{"np"}, mt{"mt"}, wn{"wn"}, wm{"wm"}, bn{"bn"}, bm{"bm"},
        kt{"kt"}, k{"k"}, m{"m"}, n{"n"}, ke{"ke"}, kg{"kg"}, ks{"ks"}, win{"win"}, ri{"ri"}, ro{"ro"};
    // > 0 (GemmIo::window_n): A depends on the output columns' window, the last dimension of a_panel and a_frag.
    int window_n = 0;
    Halide::Expr activation;  // the runtime activation id
    Halide::Expr exact;       // M, N and K are whole tiles: the panels need no clamps (schedules specialize on it)
    bool b_pairs = true;      // B fragments loaded two n-tiles at a time (ldmatrix.x4)
    bool wgmma = false;       // GemmTiling::wgmma
    bool swizzled = false;    // GemmTiling::wgmma_swizzled
    bool stage_c = false;     // GemmTiling::stage_c
    bool prefetch = false;    // set by the schedule: the K loop pipelined by schedules/panel_prefetch.h
    int stages = 1;           // set by the schedule: > 1, the panels a ring of that many K steps (same header)
};

struct GemmShape {
    Halide::Expr M, N, K;
    // A's and B's rows hold K_padded = K rounded up to a multiple of 8 (16 bytes), the columns past K
    // zero: a panel row's 8-element groups are whole aligned vectors whatever K is, and the padding adds
    // nothing to the products.
    Halide::Expr K_padded;
};

// Bits of x (8 * kg + ke, row): x where row < rows and kg < K_padded / 8, else zero. Columns K to
// K_padded of A and B hold zeros (GemmShape), so whole 8-element groups are in or out: the condition and
// the clamps (rows, groups) are one per vector. Where the shapes are whole tiles (`exact`) the clamps are
// only promises and nothing is zeroed.
inline Halide::Expr zero_filled(const Halide::Func &x, const Halide::Expr &ke, const Halide::Expr &kg,
                                const Halide::Expr &row, const Halide::Expr &rows, const GemmShape &s,
                                const Halide::Expr &exact) {
    using namespace Halide;
    const Expr groups = s.K_padded / 8;
    Expr k = unsafe_promise_clamped(ke + 8 * min(kg, groups - 1), 0, s.K_padded - 1);
    Expr rc = select(exact, unsafe_promise_clamped(row, 0, rows - 1), clamp(row, 0, rows - 1));
    return select(exact || (kg < groups && row < rows), x(k, rc), cast(UInt(16), 0));
}

// act(acc + bias) in f32, the epilogue the conv2d kernels will share; `activation` is the runtime id
// (generators/activation.h). The smooth activations through one sigmoid: sigmoid(x), silu = x sigmoid(x) and
// the tanh-form gelu = x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) (0.5 (1 + tanh(u)) = sigmoid(2u)), so a
// kernel needs two code paths, piecewise-linear (none, relu, relu6) and smooth, not six (schedules branch on
// smooth_activation(); with six, the epilogue copies were most of a kernel's code and compile time).
inline Halide::Expr smooth_activation(const Halide::Expr &activation) { return activation >= int(Activation::silu); }
// A constant activation (a block's layer: static) is applied as it is, gelu_erf included.
inline Halide::Expr gemm_epilogue(const Halide::Expr &acc, const Halide::Expr &bias, const Halide::Expr &activation) {
    using namespace Halide;
    Expr x = acc + bias;
    if (auto id = Internal::as_const_int(activation)) return apply_activation(x, Activation(*id));
    // relu and relu6 as one clamp whose upper end is uniform: two instructions a value, not three and a select.
    Expr upper = select(activation == int(Activation::relu6), 6.0f, std::numeric_limits<float>::infinity());
    Expr piecewise = select(activation == int(Activation::none), x, min(max(x, 0.0f), upper));
    Expr z = select(activation == int(Activation::gelu), 1.5957691216057308f * (x + 0.044715f * x * x * x), x);
    Expr s = 1.0f / (1.0f + exp(-z));
    Expr smooth = select(activation == int(Activation::sigmoid), s, x * s);
    return select(smooth_activation(activation), smooth, piecewise);
}

// What a GEMM-shaped stage reads as A and where it stores C, for operands that are no plain matrix: an
// implicit-GEMM convolution gathers A from its input (generators/conv2d_tc_algorithm.h) and stores C at
// (channel, x, y, image). Defaults: A a (k, m) matrix read through zero_filled, C an (n, m) matrix.
struct GemmIo {
    // Bits of A's element (8 * kg + ke, m), zero outside M x K; `exact`: M, N and K are whole tiles; `window`: the
    // output columns' window (window_n > 0; undefined otherwise).
    std::function<Halide::Expr(const Halide::Expr &ke, const Halide::Expr &kg, const Halide::Expr &m,
                               const Halide::Expr &exact, const Halide::Expr &window)>
        a_element;
    // > 0, a multiple of 8: A differs per window of this many output columns (columns n read A of window n /
    // window_n), a grouped convolution's block-diagonal GEMM with K = one window's input channels x taps. Each
    // n-tile of 8 lies in one window; a block holds the panels of every window its columns touch.
    int window_n = 0;
    // The output coordinates of C[m][n] (innermost first), and how many there are.
    std::function<std::vector<Halide::Expr>(const Halide::Expr &n, const Halide::Expr &m)> c_coords;
    int c_dims = 2;
    Halide::Type c_type = Halide::UInt(16);  // C's type: the bits, or the storage type they are (reinterpreted)
    // Added to C after the activation, at C's coordinates (a residual connection), in f32; none if undefined.
    std::function<Halide::Expr(const std::vector<Halide::Expr> &coords)> residual;
    std::string prefix;  // of every Func's name: several GEMMs in one pipeline (a block's layers)
};

// fragment_mutation = 1 (tests only): A registers 1 and 2 swapped (wgmma: A's K halves), a wrong layout the checks
// must catch.
// On CUDA targets the instructions are the externs runtime/mma_ptx.cpp rewrites; elsewhere they are emulated.
inline GemmFuncs gemm(const Halide::Func &A, const Halide::Func &B, const Halide::Func &bias, const GemmShape &s,
                      const Halide::Expr &activation, const GemmTiling &t, mma::Elem elem, const Halide::Target &target,
                      int fragment_mutation = 0, GemmIo io = {}) {
    using namespace Halide;
    using namespace mma;
    GemmFuncs f;
    const bool native = target.has_feature(Target::CUDA);
    const int MT = t.mt_count(), NT = t.nt_count(), BM = t.block_m(), BN = t.block_n();
    f.activation = activation;
    // (K steps of 16 within a panel, panels): whole panels, so the panel loop needs no tail; with a split, each
    // split's share of them (the last split's past K read zeros, except where the split is exact).
    const Expr panels = (s.K + t.k_step - 1) / t.k_step, split_panels = (panels + t.split_k - 1) / t.split_k;
    f.exact = s.M % BM == 0 && s.N % BN == 0 && s.K % t.k_step == 0 && panels % t.split_k == 0;
    Var k = f.k, m = f.m, n = f.n, r = f.r, lane = f.lane;
    if (!io.a_element)
        io.a_element = [&](const Expr &ke, const Expr &kg, const Expr &row, const Expr &exact, const Expr &) {
            return zero_filled(A, ke, kg, row, s.M, s, exact);
        };
    if (!io.c_coords) io.c_coords = [](const Expr &cn, const Expr &cm) { return std::vector<Expr>{cn, cm}; };
    f.window_n = io.window_n;
    const bool windows = io.window_n > 0;
    if (windows && io.window_n % kTileN)
        throw CompileError("gemm: window_n = " + std::to_string(io.window_n) + " must be a multiple of 8");
    // The extra last argument of a_panel and a_frag where A has windows (none otherwise: the dense GEMM unchanged).
    auto with_window = [windows](std::vector<Expr> args, const Expr &w) {
        if (windows) args.push_back(w);
        return args;
    };
    auto with_window_var = [windows](std::vector<Var> args, const Var &w) {
        if (windows) args.push_back(w);
        return args;
    };

    f.wgmma = t.wgmma;
    if (t.wgmma &&
        (windows || t.warp_m != kTileM || t.warps_m % kWgmmaWarps || t.warps_n != 1 || t.warp_n > kWgmmaMaxN))
        throw CompileError("gemm: wgmma needs warp_m = 16, warps_m a multiple of 4, warps_n = 1, warp_n <= 256 and no "
                           "grouped windows");
    const bool split = t.split_k > 1;
    f.rk = RDom(0, t.kt_per_step(), 0, split ? split_panels : panels, io.prefix + "rk");
    // Split ks takes every split_k-th panel from panel ks (a constant stride: bounds inference then proves each
    // fragment a single K step; a block of contiguous panels, ks x a run-time count, it could not for a run-time K).
    Expr kt = (split ? f.rk.y * t.split_k + f.ks : Expr(f.rk.y)) * t.kt_per_step() + f.rk.x;
    f.acc = Func(io.prefix + "acc");
    std::vector<Var> acc_args{f.q, lane, f.nt, f.mt, f.wn, f.wm, f.bn, f.bm};
    if (split) acc_args.push_back(f.ks);
    f.acc(acc_args) = 0.0f;
    if (t.wgmma) {
        // Core-matrix panels: element (k, row) at (k % 8, row % 8, k / 8, row / 8), each 8 rows x 16 bytes one
        // contiguous core matrix as wgmma's descriptors read them. Swizzled: K group g of the step's 8 at chunk
        // g ^ (row % 8) (an involution: the chunk's K group is chunk ^ (row % 8)), the schedule storing each row's
        // 8 chunks together.
        f.swizzled = t.wgmma_swizzled();
        auto chunk = [&](const Expr &group, const Expr &row_in_8) {
            if (!f.swizzled) return group;
            // x ^ r of two 3-bit values, bit by bit in arithmetic: Halide 21's bounds inference takes a bitwise xor
            // as unbounded (and its simplifier drops a clamp around one), so the panels would have no bounds.
            Expr x = group % 8, swapped = 0;
            for (int bit = 1; bit < 8; bit *= 2) swapped += bit * ((x / bit + row_in_8 / bit) % 2);
            return 8 * (group / 8) + swapped;
        };
        f.a_panel = Func(io.prefix + "a_panel");
        f.a_panel(f.ke, f.ri, f.kg, f.ro) = io.a_element(f.ke, chunk(f.kg, f.ri), 8 * f.ro + f.ri, f.exact, Expr());
        f.b_panel = Func(io.prefix + "b_panel");
        f.b_panel(f.ke, f.ri, f.kg, f.ro) = zero_filled(B, f.ke, chunk(f.kg, f.ri), 8 * f.ro + f.ri, s.N, s, f.exact);
        auto core = [&](const Func &p, const Expr &k, const Expr &row) {
            return p(k % 8, row % 8, chunk(k / 8, row % 8), row / 8);
        };
        // The warpgroup of warp wm holds rows (wm / 4) x 64 of the block's; its warp wm % 4 rows 16 (wm % 4) on.
        Expr a_row0 = f.bm * BM + (f.wm / kWgmmaWarps) * kWgmmaM, b_col0 = f.bn * BN + f.wn * t.warp_n;
        f.acc(acc_args) = mma::wgmma(
            elem, t.warp_n, 4 * f.nt + f.q, lane, f.wm % kWgmmaWarps,
            [&](const Expr &kk, const Expr &row) {
                // fragment_mutation = 1: the K halves of A swapped (a wrong layout the checks must catch)
                Expr ka = fragment_mutation == 1 ? (kk + 8) % kTileK : kk;
                return core(f.a_panel, kt * kTileK + ka, a_row0 + row);
            },
            [&](const Expr &kk, const Expr &col) { return core(f.b_panel, kt * kTileK + kk, b_col0 + col); },
            f.acc(acc_args), native);
    } else {
        f.a_panel = Func(io.prefix + "a_panel");
        f.a_panel(with_window_var({f.ke, f.kg, m}, f.win)) =
            io.a_element(f.ke, f.kg, m, f.exact, windows ? Expr(f.win) : Expr());
        f.b_panel = Func(io.prefix + "b_panel");
        f.b_panel(f.ke, f.kg, n) = zero_filled(B, f.ke, f.kg, n, s.N, s, f.exact);

        // A: one ldmatrix.x4 per instruction tile and K step; rows mt * 16 of the warp's rows.
        Expr a_reg = fragment_mutation == 1 ? select(r == 1, 2, r == 2, 1, r) : Expr(r);
        f.a_frag = Func(io.prefix + "a_frag");
        f.a_frag(with_window_var({r, lane, f.mt, f.wm, f.bm, f.kt}, f.win)) = ldmatrix(
            4, a_reg, lane,
            [&](const Expr &kk, const Expr &row) {
                return f.a_panel(with_window({kk % 8, kk / 8, row}, f.win));
            },
            [&](const Expr &l) {
                return std::pair{f.kt * kTileK + ldsm_a_k(l),
                                 f.bm * BM + f.wm * t.warp_m + f.mt * kTileM + ldsm_a_row(l)};
            },
            native);

        // B: two n-tiles per ldmatrix.x4 (one with x2 where the warp has an odd number of n-tiles).
        f.b_pairs = NT % 2 == 0;
        const int tiles_per_load = f.b_pairs ? 2 : 1;
        f.b_frag = Func(io.prefix + "b_frag");
        f.b_frag(r, lane, f.np, f.wn, f.bn, f.kt) = ldmatrix(
            2 * tiles_per_load, r, lane,
            [&](const Expr &kk, const Expr &col) { return f.b_panel(kk % 8, kk / 8, col); },
            [&](const Expr &l) {
                Expr col = f.b_pairs ? ldsm_b_col(l) : ldsm_b_col(l) % 8;
                return std::pair{f.kt * kTileK + ldsm_b_k(l),
                                 f.bn * BN + f.wn * t.warp_n + f.np * (kTileN * tiles_per_load) + col};
            },
            native);

        // The window of n-tile (nt, wn, bn): its first column over window_n.
        const Expr window = windows ? (f.bn * BN + f.wn * t.warp_n + f.nt * kTileN) / io.window_n : Expr();
        auto a_at = [&](const Expr &reg, const Expr &l) {
            return f.a_frag(with_window({reg, l, f.mt, f.wm, f.bm, kt}, window));
        };
        auto b_at = [&](const Expr &reg, const Expr &l) {
            if (!f.b_pairs) return f.b_frag(reg, l, f.nt, f.wn, f.bn, kt);
            return f.b_frag(2 * (f.nt % 2) + reg, l, f.nt / 2, f.wn, f.bn, kt);
        };
        f.acc(acc_args) = mma::mma(elem, f.q, lane, a_at, b_at, f.acc(acc_args), native);
    }
    if (split) {
        f.partial = Func(io.prefix + "partial");
        f.partial(acc_args) = f.acc(acc_args);
    }

    // C is written from the fragment space: each lane stores the registers it holds (the C table:
    // register q = 2 * mh + q0 of lane `lane` is row 8 * mh + lane / 4, column 2 * (lane % 4) + q0 of its
    // 16 x 8 tile). As a scatter over these coordinates, rather than C(n, m) reading acc at (m % 16, ...),
    // the lane index of every accumulator read is the loop's own lane: no warp shuffles, no index algebra
    // for Halide 21's LowerWarpShuffles to prove. Rows and columns past M and N are not stored.
    // Staged (stage_c), the registers of one block's tile, the block (bn, bm) the pure variables of c_tile.
    f.stage_c = t.stage_c;
    const Expr n_blocks = (s.N + BN - 1) / BN, m_blocks = (s.M + BM - 1) / BM;
    Region c_registers{{0, 2}, {0, 2}, {0, NT}, {0, MT}, {0, kWarp}, {0, t.warps_n}, {0, t.warps_m}};
    if (!t.stage_c) c_registers.insert(c_registers.end(), {{0, n_blocks}, {0, m_blocks}});
    f.rc = RDom(c_registers, io.prefix + "rc");
    Expr q0 = f.rc[0], mh = f.rc[1], cnt = f.rc[2], cmt = f.rc[3], cl = f.rc[4], cwn = f.rc[5], cwm = f.rc[6],
         cbn = t.stage_c ? Expr(f.bn) : f.rc[7], cbm = t.stage_c ? Expr(f.bm) : f.rc[8];
    // C's column and row of register q of lane `lane` of instruction tile (nt, mt) of warp (wn, wm) of block (bn, bm).
    auto c_column = [&](const Expr &q, const Expr &l, const Expr &nt, const Expr &wn, const Expr &bn) {
        return bn * BN + wn * t.warp_n + nt * kTileN + c_col(q, l);
    };
    auto c_row_of = [&](const Expr &q, const Expr &l, const Expr &mt, const Expr &wm, const Expr &bm) {
        return bm * BM + wm * t.warp_m + mt * kTileM + c_row(q, l);
    };
    Expr cn = c_column(q0, cl, cnt, cwn, cbn);
    Expr cm = c_row_of(2 * mh, cl, cmt, cwm, cbm);
    if (!t.stage_c) f.rc.where(f.exact || (cn < s.N && cm < s.M));  // whole tiles: no guard at all
    // The epilogue in fragment space, ending in the storage bits: a schedule can compute it per thread and
    // specialize it on the activation (a uniform branch) without touching the accumulator, and each value is a
    // scalar there, so on CUDA f16 and bf16 round by the hardware's conversion (generators/b16_bits.h: to_b16_bits;
    // a register pair converted as one 2-lane vector is the f16 backend's trap; the integer rounding takes six to ten
    // instructions a value).
    f.epilogue = Func(io.prefix + "epilogue");
    std::vector<Var> c_args{f.q, lane, f.nt, f.mt, f.wn, f.wm, f.bn, f.bm};
    Expr col_n = c_column(f.q, lane, f.nt, f.wn, f.bn);
    Expr sum = split ? Expr() : f.acc(c_args);
    for (int i = 0; split && i < t.split_k; ++i) {  // a fixed order: the same sum for every run
        std::vector<Expr> at(c_args.begin(), c_args.end());
        at.push_back(i);
        sum = i == 0 ? f.partial(at) : sum + f.partial(at);
    }
    Expr value = gemm_epilogue(sum, bias(min(col_n, s.N - 1)), activation);
    if (io.residual) {
        // Every register of a tile is computed, stored or not: past M and N the residual is read clamped.
        Expr row_m = c_row_of(f.q, lane, f.mt, f.wm, f.bm);
        auto inside = [&](const Expr &x, const Expr &extent) {
            return select(f.exact, unsafe_promise_clamped(x, 0, extent - 1), clamp(x, 0, extent - 1));
        };
        value += io.residual(io.c_coords(inside(col_n, s.N), inside(row_m, s.M)));
    }
    f.epilogue(c_args) = to_b16_bits(value, elem, native);
    f.output = Func(io.prefix + "gemm");
    std::vector<Var> out_vars;
    for (int d = 0; d < io.c_dims; ++d) out_vars.push_back(d == 0 ? n : d == 1 ? m : Var("c" + std::to_string(d)));
    f.output(out_vars) = undef(io.c_type);
    // Bounds inference does not see the `where`: the promise gives it the stored range (which the
    // predicate guarantees) and costs no code.
    auto c_at = [&](const Expr &n_at, const Expr &m_at) {
        return io.c_coords(unsafe_promise_clamped(n_at, 0, s.N - 1), unsafe_promise_clamped(m_at, 0, s.M - 1));
    };
    const Expr registers = f.epilogue(2 * mh + q0, cl, cnt, cmt, cwn, cwm, cbn, cbm);
    if (!t.stage_c) {
        f.output(c_at(cn, cm)) = reinterpret(io.c_type, registers);
        return f;
    }
    // Staged: every register of the block's tile into c_tile (whole tiles: the rows and columns past M and N too), then
    // the output's stores from it, row by row, past M and N not stored.
    f.c_tile = Func(io.prefix + "c_tile");
    f.c_tile(n, m, f.bn, f.bm) = undef(UInt(16));
    f.c_tile(c_column(q0, cl, cnt, cwn, 0), c_row_of(2 * mh, cl, cmt, cwm, 0), f.bn, f.bm) = registers;
    f.rs = RDom(Region{{0, BN}, {0, BM}, {0, n_blocks}, {0, m_blocks}}, io.prefix + "rs");
    const Expr sn = f.rs[2] * BN + f.rs[0], sm = f.rs[3] * BM + f.rs[1];
    f.rs.where(f.exact || (sn < s.N && sm < s.M));
    f.output(c_at(sn, sm)) = reinterpret(io.c_type, f.c_tile(f.rs[0], f.rs[1], f.rs[2], f.rs[3]));
    return f;
}

}  // namespace blockfuse
