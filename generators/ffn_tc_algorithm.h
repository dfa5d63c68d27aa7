// The FFN of a block fused on tensor cores (Eq. 32 with the accumulators in mma.sync fragments), the algorithm
// only: y = phi(X U + a) V + b [+ residual], X the block input seen as pixels x channels (M x C), U the C -> E
// expand and V the E -> C' project, f16 or bf16 storage, f32 accumulation. No scheduling call appears here.
//
// Fragment space as generators/gemm_algorithm.h writes it (m16n8k16, the ISA tables of generators/mma_abi.h):
// a thread block of `warps` warps owns block_m = warps x warp_m pixels and every output channel; each warp
// owns warp_m pixels (mt_count instruction tiles of 16 rows) and all C' output channels (nt_count n-tiles of
// 8). The output accumulator acc(q, lane, nt, mt, w, bm) is the warp's registers for the whole hidden
// reduction, which runs over chunks of `chunk` hidden channels (hc): per chunk, the warp's hidden
// pre-activations hidden_acc(q, lane, ht, mt, w, bm, hc) = X U[chunk] (K = C), then phi(. + a) rounded to the
// storage type and packed into the project's A fragments in the same lane (C/D register pair q = 2 (r % 2),
// + 1 of n-tile 2 hk + r / 2 is A register r of hidden K step hk: the accumulator layout of two adjacent
// n-tiles is the A layout of one 16-wide K step), consumed by the project's mma, discarded. The hidden
// activations never leave the registers.
//
// Layouts (Halide dims, innermost first): input (c, x, y, n) in the storage type; u (kr, e) and v (kr, k) the
// weights as N x K bits with K innermost, rows of K rounded up to 8 (runtime/conv2d_tc.h's layout of a 1x1
// layer); a (e), b (k) f32; output (k, x, y, n). Needs C, E and C' multiples of 16 and chunk | E (checked by
// the generator's knob check).
//
// FusedMBConv (FfnTcShape's im2col()): the expand is the block's k x k convolution, X's rows its im2col rows in
// shared memory (K = k k C, tap-major as U's rows are laid out: 16-wide K steps within one tap, each 8-element group
// one 16-byte load of the tap's channels, zeros in the padding); the rest as above, the residual the block's input.
//
// ConvFirst (FfnTcPrologue): X is the grouped k x k convolution of the input (group width 8, stride s, zero
// padding k / 2, bias, no activation) instead of the input itself, computed on CUDA cores straight into X's
// shared rows (f32 sums of the group's 8 input channels over the window, rounded to the storage type as the
// layer's stored output would be); the FFN then runs as above and the residual is the block's input.
// With FfnTcPrologue::mma the grouped layer runs on the tensor cores instead: per warp, m-tile and group g (one
// n-tile of 8 output channels) an accumulator gx_acc over K = the window's taps x the group's 8 input channels
// (tap-major, 16-wide K steps of two taps, the last padded with zeros), A's registers two adjacent input channels
// of one tap at one pixel (zero outside the image) read from the input, B's two adjacent input channels' weights
// of one output channel; the bias its initial value; each lane's registers then rounded and scattered into X's
// shared rows (x_panel(ke, kg, row, bm), the block's rows), which the FFN reads as above.
//
// ConvNeXt (FfnTcPrologue with layer_norm): X is LayerNorm over channels (no affine: its gamma and beta are folded
// into U and a) of the depthwise k x k convolution of the input (bias, zero padding k / 2), both on CUDA cores: the
// depthwise sums in f32 (weights converted to f32 once per thread block) into the thread block's shared rows, each
// pixel's mean and variance over them (two passes, 8 lanes a pass summed over the channel groups, then the lanes),
// then X's rows normalized and rounded to the storage type; the FFN then runs as above.
#pragma once
#include "Halide.h"
#include "generators/activation.h"
#include "generators/block_spec.h"
#include "generators/gemm_algorithm.h"
#include "generators/mma.h"
#include "generators/storage.h"

namespace blockfuse {

struct FfnTcTiling {
    int warps = 4;          // warps per thread block, stacked along the pixels
    int warp_m = 16;        // pixels per warp, a multiple of 16
    int chunk = 32;         // hidden channels per step of the output's reduction, a multiple of 16
    bool prefetch = false;  // the next chunk's U and V rows loaded during this chunk's mma (the schedule's)
    int mt_count() const { return warp_m / mma::kTileM; }
    int block_m() const { return warps * warp_m; }
};

struct FfnTcShape {
    int c = 0, e = 0, k = 0;  // input, hidden, output channels
    int h = 0, w = 0;         // the output image, static (pixels are divided by constants)
    Activation act = Activation::relu;
    // FusedMBConv (in_w > 0): the expand a expand_ks x expand_ks convolution (stride expand_stride, zero padding
    // expand_ks / 2) of the in_w x in_h input; else the 1x1 layer over X.
    int expand_ks = 1, expand_stride = 1, in_h = 0, in_w = 0;
    bool im2col() const { return in_w > 0; }
    int expand_k() const { return expand_ks * expand_ks * c; }  // the expand's K
};

// The layer before the FFN, on CUDA cores. ConvFirst's grouped layer: weights (k, r, kx, ky) in the storage type (r
// the 8 input channels of k's group), on mma (kr, k) bits as runtime/conv2d_tc.h lays out a grouped layer; ConvNeXt's depthwise layer (layer_norm): weights (k, 0, kx, ky), then the
// LayerNorm. Bias (k) f32; the input image in_w x in_h (FfnTcShape's h, w are the output's).
struct FfnTcPrologue {
    Halide::Func weights, bias;
    int ks = 0, stride = 1, in_h = 0, in_w = 0;
    bool layer_norm = false;
    bool mma = false;  // ConvFirst's grouped layer on the tensor cores (knob tc_grouped)
    bool defined() const { return ks > 0; }
    int taps() const { return ks * ks; }
    int mma_k_steps() const { return (taps() * 8 + 15) / 16; }  // K = taps x 8 channels, in 16-wide steps
};

struct FfnTcFuncs {
    Halide::Func x_panel;      // (ke, kg, m): bits of X (FusedMBConv's im2col), zero past M; per block, all of K
                               // (prologue on mma: (ke, kg, row, bm), the block's rows, scattered from gx_acc)
    Halide::Func gx_a;         // (r, lane, mt, w, bm, g, ks): A of the grouped layer on mma, group g, K step ks
    Halide::Func gx_b;         // (r, lane, g, ks): its B, group g's weights
    Halide::Func gx_acc;       // (q, lane, mt, w, bm, g), f32: group g's 8 output channels, bias + the mma
    Halide::RDom rk_gx;        // (ks): its K steps
    Halide::RDom rx;           // (q0, mh, mt, g, lane, w): its C registers, scattered into x_panel
    Halide::Func x_conv;       // (ke, kg, m), f32: the prologue's layer at channel 8 kg + ke (else undefined)
    Halide::Func x_tap;        // (r, kg, m, kx, ky), f32: its input, tap (kx, ky) of channel 8 kg + r at pixel m
    Halide::RDom rk_group;     // grouped: (r, kx, ky), the window over the group's 8 input channels; depthwise (kx, ky)
    Halide::Func w_f32;        // (ke, kg, kx, ky), f32: ConvNeXt's depthwise weights converted (else undefined)
    Halide::Func x_rows;       // (ke, kg, m), f32: its x_conv stored, for the LayerNorm
    Halide::Func ln_sum;       // (ke, m), f32: lane ke of the channel groups summed
    Halide::Func ln_mean;      // (m), f32: the mean over the channels
    Halide::Func ln_sq;        // (ke, m), f32: the squared differences from it, likewise
    Halide::Func ln_rstd;      // (m), f32: 1 / sqrt(variance + eps)
    Halide::RDom rk_norm;      // (kg): the channel groups
    Halide::Func u_panel;      // (ke, kg, e): the chunk's rows of U
    Halide::Func v_panel;      // (ke, kg, n): V's rows, the chunk's columns
    Halide::Func x_frag;       // (r, lane, mt, w, bm, kt): A of the expand, its K step kt
    Halide::Func u_frag;       // (j, lane, ep, kt): B of hidden n-tiles 2 ep, 2 ep + 1 (j = 2 (nt % 2) + r)
    Halide::Func hidden_acc;   // (q, lane, ht, mt, w, bm, hc), f32: n-tile ht of chunk hc
    Halide::Func hidden_frag;  // (r, lane, hk, mt, w, bm, hc): A of the project, hidden K step hk of chunk hc
    Halide::Func v_frag;       // (j, lane, np, kh): B of output n-tiles 2 np, 2 np + 1, hidden K step kh
    Halide::Func acc;          // (q, lane, nt, mt, w, bm), f32
    Halide::Func output;       // (k, x, y, n): the epilogue as storage, an update over rc
    Halide::RDom rk_expand;    // (kt): K / 16 K steps (K = C, FusedMBConv's k k C)
    Halide::RDom rk_project;   // (hk, hc): chunk / 16 K steps of each chunk, E / chunk chunks
    Halide::RDom rc;           // (q0, mh, nt, mt, lane, w, bm): the C registers, as gemm()'s
    Halide::Var r{"r"}, j{"j"}, lane{"lane"}, q{"q"}, nt{"nt"}, ht{"ht"}, hk{"hk"}, hc{"hc"}, mt{"mt"}, w{"w"},
        bm{"bm"}, ep{"ep"}, np{"np"}, kt{"kt"}, kh{"kh"}, ke{"ke"}, kg{"kg"}, m{"m"};
    Halide::Expr exact;  // M is whole thread blocks: no row guard (schedules specialize on it)

    // Set with output: its register pairs are converted natively (f16 on CUDA), so stored a value at a time.
    bool scalar_pairs = false;
};

// fragment_mutation = 2 (tests only): the hidden A registers 1 and 2 swapped, a wrong C-to-A mapping the checks
// must catch; 4: ConvNeXt's LayerNorm statistics over all channel groups but the last; 5: the grouped layer's A
// registers 1 and 2 swapped (prologue on mma). `residual` (optional, the
// output's shape and storage type) is added after the project's bias. `prefix` starts every Func's and RDom's name
// (a stage's blocks, each its own).
inline FfnTcFuncs ffn_tc(const Halide::Func &input, const Halide::Func &u, const Halide::Func &a, const Halide::Func &v,
                         const Halide::Func &b, const FfnTcShape &s, const Halide::Expr &images, const FfnTcTiling &t,
                         mma::Elem elem, const Halide::Type &storage, const Halide::Target &target,
                         const Halide::Func &residual = Halide::Func(), int fragment_mutation = 0,
                         const FfnTcPrologue &prologue = FfnTcPrologue(), const std::string &prefix = "") {
    using namespace Halide;
    using namespace mma;
    FfnTcFuncs f;
    const bool native = target.has_feature(Target::CUDA);
    const int MT = t.mt_count(), BM = t.block_m(), NT = s.k / kTileN, HT = t.chunk / kTileN;
    const int W = s.w, HW = s.h * s.w;
    const Expr M = images * HW;
    f.exact = M % BM == 0;
    Var ke = f.ke, kg = f.kg, m = f.m, lane = f.lane;

    // Panels: 8-element groups of one row (16 bytes), so each is one vector load; X's rows past M are zeros.
    Expr mc = select(f.exact, unsafe_promise_clamped(m, 0, M - 1), clamp(m, 0, M - 1));
    // Tap (kx, ky) of a ks x ks window (zero padding ks / 2) at output pixel mc of an in_w x in_h input: the input's
    // column and row, clamped, and whether the tap is inside the image.
    struct Tap {
        Expr ix, iy, inside;
    };
    auto window_tap_at = [&](const Expr &p, const Expr &kx, const Expr &ky, int ks, int stride, int in_w, int in_h) {
        Expr ix = (p % W) * stride + kx - ks / 2, iy = ((p / W) % s.h) * stride + ky - ks / 2;
        return Tap{clamp(ix, 0, in_w - 1), clamp(iy, 0, in_h - 1), ix >= 0 && ix < in_w && iy >= 0 && iy < in_h};
    };
    auto window_tap = [&](const Expr &kx, const Expr &ky, int ks, int stride, int in_w, int in_h) {
        return window_tap_at(mc, kx, ky, ks, stride, in_w, in_h);
    };
    Expr x_bits;
    if (s.im2col()) {  // FusedMBConv's im2col rows: K group kg is channels 8 (kg % (C / 8)) of tap kg / (C / 8)
        const int groups = s.c / 8;
        Expr tap = kg / groups;
        const Tap at = window_tap(tap % s.expand_ks, tap / s.expand_ks, s.expand_ks, s.expand_stride, s.in_w, s.in_h);
        x_bits = select(at.inside, reinterpret(UInt(16), input(8 * (kg % groups) + ke, at.ix, at.iy, mc / HW)),
                        cast(UInt(16), 0));
    } else if (prologue.defined() && prologue.mma) {
        if (prologue.layer_norm) throw CompileError("ffn_tc: the prologue on mma is ConvFirst's grouped layer only");
        const int T = prologue.taps(), G = s.c / 8;
        Var r = f.r, g("g"), ks("ks");
        // A register r of lane `lane`: row a_row of m-tile mt, K columns a_col and + 1: two adjacent channels of one
        // tap (taps are 8 columns each), zero outside the image and past the window's taps.
        Expr ra = fragment_mutation == 5 ? select(r == 1, 2, r == 2, 1, r) : Expr(r);
        Expr p = f.bm * BM + f.w * t.warp_m + f.mt * kTileM + a_row(ra, Expr(lane));
        p = select(f.exact, unsafe_promise_clamped(p, 0, M - 1), clamp(p, 0, M - 1));
        Expr ka = ks * kTileK + a_col(ra, Expr(lane)), tap = ka / 8, ch = 8 * g + ka % 8;
        const Tap at = window_tap_at(p, tap % prologue.ks, tap / prologue.ks, prologue.ks, prologue.stride,
                                     prologue.in_w, prologue.in_h);
        Expr live = at.inside && tap < T;
        auto in_bits = [&](const Expr &c) {
            return select(live, reinterpret(UInt(16), input(c, at.ix, at.iy, p / HW)), cast(UInt(16), 0));
        };
        f.gx_a = Func(prefix + "ffn_gx_a");
        f.gx_a(r, lane, f.mt, f.w, f.bm, g, ks) = pack_b16(in_bits(ch), in_bits(ch + 1));
        // B register r: K rows b_k and + 1 (two adjacent input channels of one tap), column b_col (output channel),
        // from the weights' tensor-core layout (kr, k): row k's K is tap-major, 8 channels a tap, as A's.
        Expr kb = ks * kTileK + b_k(Expr(r), Expr(lane)), out = 8 * g + b_col(Expr(lane));
        auto w_bits = [&](const Expr &k) {
            return select(k < 8 * T, prologue.weights(min(k, 8 * T - 1), out), cast(UInt(16), 0));
        };
        f.gx_b = Func(prefix + "ffn_gx_b");
        f.gx_b(r, lane, g, ks) = pack_b16(w_bits(kb), w_bits(kb + 1));
        f.rk_gx = RDom(0, prologue.mma_k_steps(), prefix + "ffn_rk_gx");
        f.gx_acc = Func(prefix + "ffn_gx_acc");
        std::vector<Var> gx_args{f.q, lane, f.mt, f.w, f.bm, g};
        f.gx_acc(gx_args) = prologue.bias(8 * g + c_col(Expr(f.q), Expr(lane)));
        f.gx_acc(gx_args) = mma::mma(
            elem, f.q, lane,
            [&](const Expr &reg, const Expr &l) { return f.gx_a(reg, l, f.mt, f.w, f.bm, g, f.rk_gx); },
            [&](const Expr &reg, const Expr &l) { return f.gx_b(reg, l, g, f.rk_gx); }, f.gx_acc(gx_args), native);
        // Each lane's registers into X's rows of the block, rounded to the storage type as the layer's stored output.
        f.rx = RDom(Region{{0, 2}, {0, 2}, {0, MT}, {0, G}, {0, kWarp}, {0, t.warps}}, prefix + "ffn_rx");
        Expr q0 = f.rx[0], mh = f.rx[1], rmt = f.rx[2], rg = f.rx[3], rl = f.rx[4], rw = f.rx[5];
        Expr channel = 8 * rg + c_col(q0, rl), row = rw * t.warp_m + rmt * kTileM + c_row(2 * mh, rl);
        Expr x = f.gx_acc(2 * mh + q0, rl, rmt, rw, f.bm, rg);
        f.x_panel = Func(prefix + "ffn_x_panel");
        f.x_panel(ke, kg, m, f.bm) = undef(UInt(16));
        f.x_panel(channel % 8, channel / 8, row, f.bm) = to_b16_bits(x, elem, native);
    } else if (prologue.defined()) {
        const bool depthwise = prologue.layer_norm;
        f.rk_group = depthwise ? RDom(0, prologue.ks, 0, prologue.ks, prefix + "ffn_rk_group")
                               : RDom(0, 8, 0, prologue.ks, 0, prologue.ks, prefix + "ffn_rk_group");
        // The window's tap (kx, ky) of input channel 8 kg + r at pixel m, zero outside the image. A select, not a
        // reduction domain of the inside taps (RDom::where): its taps then ran one at a time, each load's latency
        // exposed (ConvNeXt c=96 N=128 on the H200: the window 57% of a 1.81 ms kernel that way, 49% of 1.56 ms this way).
        Var r = f.r, kx("kx"), ky("ky");
        const Tap at = window_tap(kx, ky, prologue.ks, prologue.stride, prologue.in_w, prologue.in_h);
        f.x_tap = Func(prefix + "ffn_x_tap");
        f.x_tap(r, kg, m, kx, ky) = select(at.inside, to_f32(input(8 * kg + r, at.ix, at.iy, mc / HW)), 0.0f);
        f.x_conv = Func(prefix + "ffn_x_conv");
        f.x_conv(ke, kg, m) = prologue.bias(8 * kg + ke);
        const RDom &g = f.rk_group;
        if (depthwise) {
            Var kx("kx"), ky("ky");
            f.w_f32 = Func(prefix + "ffn_w_f32");
            f.w_f32(ke, kg, kx, ky) = to_f32(prologue.weights(8 * kg + ke, 0, kx, ky));
            f.x_conv(ke, kg, m) += f.w_f32(ke, kg, g.x, g.y) * f.x_tap(ke, kg, m, g.x, g.y);
            f.x_rows = Func(prefix + "ffn_x_rows");
            f.x_rows(ke, kg, m) = f.x_conv(ke, kg, m);
            // Per pixel, each of the 8 lanes of a channel group summed over the groups, then the 8 sums: the
            // variance over the differences from the mean likewise.
            f.rk_norm = RDom(0, s.c / 8 - (fragment_mutation == 4), prefix + "ffn_rk_norm");
            const RVar rn = f.rk_norm.x;
            auto lanes_sum = [&](const Func &part) {
                Expr t = part(0, m);
                for (int i = 1; i < 8; ++i) t += part(i, m);
                return t * (1.0f / float(s.c));
            };
            f.ln_sum = Func(prefix + "ffn_ln_sum");
            f.ln_sum(ke, m) = 0.0f;
            f.ln_sum(ke, m) += f.x_rows(ke, rn, m);
            f.ln_mean = Func(prefix + "ffn_ln_mean");
            f.ln_mean(m) = lanes_sum(f.ln_sum);
            Expr d = f.x_rows(ke, rn, m) - f.ln_mean(m);
            f.ln_sq = Func(prefix + "ffn_ln_sq");
            f.ln_sq(ke, m) = 0.0f;
            f.ln_sq(ke, m) += d * d;
            f.ln_rstd = Func(prefix + "ffn_ln_rstd");
            f.ln_rstd(m) = 1.0f / sqrt(lanes_sum(f.ln_sq) + float(kLayerNormEps));
            x_bits = to_b16_bits((f.x_rows(ke, kg, m) - f.ln_mean(m)) * f.ln_rstd(m), elem, native);
        } else {
            f.x_conv(ke, kg, m) += to_f32(prologue.weights(8 * kg + ke, g.x, g.y, g.z)) * f.x_tap(g.x, kg, m, g.y, g.z);
            x_bits = to_b16_bits(f.x_conv(ke, kg, m), elem, native);
        }
    } else {
        x_bits = reinterpret(UInt(16), input(8 * kg + ke, mc % W, (mc / W) % s.h, mc / HW));
    }
    const bool block_rows = f.gx_acc.defined();  // x_panel (ke, kg, row, bm): the block's rows
    if (!block_rows) {
        f.x_panel = Func(prefix + "ffn_x_panel");
        f.x_panel(ke, kg, m) = select(f.exact || m < M, x_bits, cast(UInt(16), 0));
    }
    f.u_panel = Func(prefix + "ffn_u_panel");
    f.u_panel(ke, kg, f.m) = u(8 * kg + ke, f.m);
    f.v_panel = Func(prefix + "ffn_v_panel");
    f.v_panel(ke, kg, f.m) = v(8 * kg + ke, f.m);

    f.x_frag = Func(prefix + "ffn_x_frag");
    const PanelAt x_rows =
        block_rows ? PanelAt([&](const Expr &k, const Expr &row) { return f.x_panel(k % 8, k / 8, row, f.bm); })
                   : grouped_panel(f.x_panel);
    f.x_frag(f.r, lane, f.mt, f.w, f.bm, f.kt) = ldmatrix(
        4, f.r, lane, x_rows,
        [&](const Expr &l) {
            return std::pair{f.kt * kTileK + ldsm_a_k(l),
                             (block_rows ? Expr(0) : f.bm * BM) + f.w * t.warp_m + f.mt * kTileM + ldsm_a_row(l)};
        },
        native);
    f.u_frag = b_pair_fragments(Func(prefix + "ffn_u_frag"), f.u_panel, f.j, lane, f.ep, f.kt, native);
    f.v_frag = b_pair_fragments(Func(prefix + "ffn_v_frag"), f.v_panel, f.j, lane, f.np, f.kh, native);

    // The expand of chunk hc: its n-tile ht is hidden n-tile hc * HT + ht (HT even: pairs stay within a chunk).
    f.rk_expand = RDom(0, s.expand_k() / kTileK, prefix + "ffn_rk_expand");
    f.hidden_acc = Func(prefix + "ffn_hidden_acc");
    std::vector<Var> hid_args{f.q, lane, f.ht, f.mt, f.w, f.bm, f.hc};
    f.hidden_acc(hid_args) = 0.0f;
    Expr hnt = f.hc * HT + f.ht;
    f.hidden_acc(hid_args) = mma::mma(
        elem, f.q, lane, [&](const Expr &reg, const Expr &l) { return f.x_frag(reg, l, f.mt, f.w, f.bm, f.rk_expand); },
        [&](const Expr &reg, const Expr &l) { return f.u_frag(2 * (hnt % 2) + reg, l, hnt / 2, f.rk_expand); },
        f.hidden_acc(hid_args), native);

    // phi(hidden + a) in storage precision, packed as the project's A: register r of hidden K step hk holds
    // row c_row(2 (r % 2)), columns 16 hk + 8 (r / 2) + c_col(q0) of the chunk, i.e. registers 2 (r % 2) and
    // 2 (r % 2) + 1 of n-tile 2 hk + r / 2 of this lane.
    Expr reg = fragment_mutation == 2 ? select(f.r == 1, 2, f.r == 2, 1, f.r) : Expr(f.r);
    auto hidden_value = [&](const Expr &q0) {
        Expr tile = 2 * f.hk + reg / 2;
        Expr channel = f.hc * t.chunk + tile * kTileN + c_col(q0, Expr(lane));
        Expr x = apply_activation(f.hidden_acc(q0, lane, tile, f.mt, f.w, f.bm, f.hc) + a(channel), s.act, true);
        // Inside the chunk loop; every value here a scalar of an unrolled register (to_b16_bits).
        return to_b16_bits(x, elem, native);
    };
    f.hidden_frag = Func(prefix + "ffn_hidden_frag");
    f.hidden_frag(f.r, lane, f.hk, f.mt, f.w, f.bm, f.hc) =
        pack_b16(hidden_value(2 * (reg % 2)), hidden_value(2 * (reg % 2) + 1));

    f.rk_project = RDom(0, t.chunk / kTileK, 0, s.e / t.chunk, prefix + "ffn_rk_project");
    const Expr rhk = f.rk_project.x, rhc = f.rk_project.y;
    f.acc = Func(prefix + "ffn_acc");
    std::vector<Var> acc_args{f.q, lane, f.nt, f.mt, f.w, f.bm};
    f.acc(acc_args) = 0.0f;
    f.acc(acc_args) = mma::mma(
        elem, f.q, lane, [&](const Expr &r_, const Expr &l) { return f.hidden_frag(r_, l, rhk, f.mt, f.w, f.bm, rhc); },
        [&](const Expr &r_, const Expr &l) {
            return f.v_frag(2 * (f.nt % 2) + r_, l, f.nt / 2, rhc * (t.chunk / kTileK) + rhk);
        },
        f.acc(acc_args), native);

    // The store, from the fragment space as gemm()'s: each lane its registers, rows past M not stored.
    f.rc = RDom(Region{{0, 2}, {0, 2}, {0, NT}, {0, MT}, {0, kWarp}, {0, t.warps}, {0, (M + BM - 1) / BM}},
                prefix + "ffn_rc");
    Expr q0 = f.rc[0], mh = f.rc[1], cnt = f.rc[2], cmt = f.rc[3], cl = f.rc[4], cw = f.rc[5], cbm = f.rc[6];
    Expr cn = cnt * kTileN + c_col(q0, cl);
    Expr cm = cbm * BM + cw * t.warp_m + cmt * kTileM + c_row(2 * mh, cl);
    f.rc.where(f.exact || cm < M);
    cm = unsafe_promise_clamped(cm, 0, M - 1);
    const std::vector<Expr> coords{cn, cm % W, (cm / W) % s.h, cm / HW};
    Expr value = f.acc(2 * mh + q0, cl, cnt, cmt, cw, cbm) + b(cn);
    if (residual.defined()) value += to_f32(residual(coords));
    f.output = Func(prefix + "ffn_output");
    f.output(Var("k"), Var("x"), Var("y"), Var("n")) = undef(storage);
    f.output(coords) = reinterpret(storage, to_b16_bits(value, elem, native));
    f.scalar_pairs = converts_natively(elem, native);  // the schedule: store_register_pairs
    return f;
}

}  // namespace blockfuse
