// MBConv fused on tensor cores, the algorithm only: y = P dw(phi(X U + a)) + b [+ x], the 1x1 expand U and the
// 1x1 project P on mma.sync (f16/bf16 storage, f32 accumulation), the depthwise k x k layer dw (with its bias and
// phi) on CUDA cores between them, every hidden activation in shared memory or registers of one thread block. No
// scheduling call appears here.
//
// A thread block owns a tile of output pixels of one image and every output channel (generators/
// mbconv_tc_geometry.h has its numbers); the output accumulator acc(q, lane, nt, mt, w, bm) is the warps'
// registers for the whole hidden reduction, which runs over chunks of `chunk` hidden channels (hc). Per chunk:
//   1. the expand's GEMM over the tile's input halo (a row per halo pixel, K the input channels padded to whole K
//      steps): hidden_acc(q, lane, ht, mt, w, bm, hc), fragment space as generators/gemm_algorithm.h writes it;
//   2. phi(. + a) scattered from the fragments into hidden(ke, kg, hp, bm, hc) (shared, the storage type), zero at
//      halo pixels outside the image: the depthwise layer's zero padding is of its input, not of X;
//   3. the depthwise window over it into dw_panel(ke, kg, m, bm, hc), bits of phi(dw + bias) for output pixel m of
//      the tile, rounded to the storage type as a stored layer would be: the project's A rows;
//   4. the project's mma from those rows (ldmatrix) and the chunk's columns of P into acc.
// Then the store from acc, bias and residual (from the halo's input rows) added, pixels outside the image and
// channels past C' not stored.
//
// Layouts (Halide dims, innermost first): input (c, x, y, n) in the storage type; u (kr, e) and v (kr, k) the 1x1
// weights as N x K bits with K innermost, rows of K rounded up to 8 (runtime/conv2d_tc.h's layout); the depthwise
// weights (e, 1, kx, ky) in the storage type; biases f32; output (k, x, y, n). Needs C, C' multiples of 8, E and
// the chunk multiples of 16 (the generator's knob check, schedules/block_knobs.h).
#pragma once
#include "Halide.h"
#include "generators/activation.h"
#include "generators/mbconv_tc_geometry.h"
#include "generators/mma.h"
#include "generators/storage.h"

namespace blockfuse {

struct MbconvTcShape {
    int h = 0, w = 0;  // the input image, static (pixels and tiles are divided by constants)
    Activation act = Activation::relu6;
    bool residual = false;
};

struct MbconvTcFuncs {
    Halide::Func x_panel;     // (ke, kg, m): bits of the input at halo pixel m % rows of block m / rows
    Halide::Func u_panel;     // (ke, kg, e): U's rows, the chunk's hidden channels e
    Halide::Func x_frag;      // (r, lane, mt, w, bm, kt): A of the expand
    Halide::Func u_frag;      // (j, lane, ep, kt): B of hidden n-tiles 2 ep, 2 ep + 1 (global)
    Halide::Func hidden_acc;  // (q, lane, ht, mt, w, bm, hc), f32: n-tile ht of chunk hc over the halo's rows
    Halide::Func hidden;      // (ke, kg, hp, bm, hc): phi(expand + a) at halo pixel hp, channel 8 kg + ke of the chunk
    Halide::Func dw_sum;      // (ke, kg, m, bm, hc), f32: the depthwise layer's sum at the tile's pixel m
    Halide::Func dw_panel;    // (ke, kg, m, bm, hc): its bits after bias and phi (and SE's gate), the project's A rows
    Halide::Func tile_sum;    // (ke, kg, bm, hc), f32: dw_panel's values summed over the tile's pixels in the image
    Halide::RDom rt;          // (m): those pixels
    Halide::Func p_frag;      // (r, lane, mt, w, bm, hk, hc): A of the project, K step hk of chunk hc
    Halide::Func v_panel;     // (ke, kg, n): P's rows (output channels, zero past C'), hidden columns kg
    Halide::Func v_frag;      // (j, lane, np, kh): B of output n-tiles 2 np, 2 np + 1, global hidden K step kh
    Halide::Func acc;         // (q, lane, nt, mt, w, bm), f32
    Halide::Func output;      // (k, x, y, n): the epilogue as storage, an update over rc
    Halide::RDom rk_expand;   // (kt): the padded input channels / 16
    Halide::RDom rh;          // (q0, mh, ht, mt, lane, w): the expand's C registers, scattered into `hidden`
    Halide::RDom rdw;         // (kx, ky): the depthwise window
    Halide::RDom rk_project;  // (hk, hc): chunk / 16 K steps of each chunk, E / chunk chunks
    Halide::RDom rc;          // (q0, mh, nt, mt, lane, w, bm): the output's C registers
    Halide::Var r{"r"}, j{"j"}, lane{"lane"}, q{"q"}, nt{"nt"}, ht{"ht"}, hk{"hk"}, hc{"hc"}, mt{"mt"}, w{"w"},
        bm{"bm"}, ep{"ep"}, np{"np"}, kt{"kt"}, kh{"kh"}, ke{"ke"}, kg{"kg"}, m{"m"}, hp{"hp"};

    // Set with output: its register pairs are converted natively (f16 on CUDA), so stored a value at a time.
    bool scalar_pairs = false;
};

// The depthwise layer's (and the block's) output extent of an input extent.
inline int mbconv_tc_out(int in, const MbconvTcGeometry &g) { return (in - 1) / g.stride + 1; }

// fragment_mutation = 3 (tests only): the dw_panel's rows read one pixel off, a wrong tile-to-row mapping the
// checks must catch. `prefix` starts every Func's and RDom's name (a stage's blocks, each its own). gate (e, n),
// f32: Squeeze-Excitation's gate of the depthwise output (undefined: none).
inline MbconvTcFuncs mbconv_tc(const Halide::Func &input, const Halide::Func &u, const Halide::Func &a,
                               const Halide::Func &dw, const Halide::Func &dw_bias, const Halide::Func &v,
                               const Halide::Func &b, const MbconvTcGeometry &g, const MbconvTcShape &s,
                               const Halide::Expr &images, mma::Elem elem, const Halide::Type &storage,
                               const Halide::Target &target, int fragment_mutation = 0, const std::string &prefix = "",
                               const Halide::Func &gate = Halide::Func()) {
    using namespace Halide;
    using namespace mma;
    MbconvTcFuncs f;
    const bool native = target.has_feature(Target::CUDA);
    const int OH = mbconv_tc_out(s.h, g), OW = mbconv_tc_out(s.w, g), pad = g.ks / 2;
    const int TX = MbconvTcGeometry::ceil_div(OW, g.tile_x), TY = MbconvTcGeometry::ceil_div(OH, g.tile_y);
    const int HX = g.halo_x(), HP = g.halo_pixels(), TP = g.tile_pixels();
    const int MTE = g.expand_mt(), MTP = g.project_mt(), ER = g.expand_rows(), HT = g.chunk / kTileN;
    const int KG = g.c / 8;
    Var ke = f.ke, kg = f.kg, m = f.m, lane = f.lane, bm = f.bm, hc = f.hc;
    // Block bm's tile (tx, ty) of image n; pixel (px, py) of its halo in the image.
    auto tile_x = [&](const Expr &blk) { return blk % TX; };
    auto tile_y = [&](const Expr &blk) { return (blk / TX) % TY; };
    auto image = [&](const Expr &blk) { return blk / (TX * TY); };
    auto halo_ix = [&](const Expr &blk, const Expr &p) { return tile_x(blk) * (g.tile_x * g.stride) - pad + p % HX; };
    auto halo_iy = [&](const Expr &blk, const Expr &p) { return tile_y(blk) * (g.tile_y * g.stride) - pad + p / HX; };

    // The panels: 8-element groups of one row (16 bytes), one vector load each; channels past C are zeros.
    {
        Expr blk = m / ER, p = min(m % ER, HP - 1);
        Expr ix = clamp(halo_ix(blk, p), 0, s.w - 1), iy = clamp(halo_iy(blk, p), 0, s.h - 1);
        Expr bits = reinterpret(UInt(16), input(8 * min(kg, KG - 1) + ke, ix, iy, image(blk)));
        f.x_panel = Func(prefix + "mbtc_x_panel");
        f.x_panel(ke, kg, m) = select(kg < KG, bits, cast(UInt(16), 0));
    }
    f.u_panel = Func(prefix + "mbtc_u_panel");
    f.u_panel(ke, kg, m) = select(kg < KG, u(8 * min(kg, KG - 1) + ke, m), cast(UInt(16), 0));
    f.v_panel = Func(prefix + "mbtc_v_panel");
    f.v_panel(ke, kg, m) = select(m < g.k, v(8 * kg + ke, min(m, g.k - 1)), cast(UInt(16), 0));

    f.x_frag = Func(prefix + "mbtc_x_frag");
    f.x_frag(f.r, lane, f.mt, f.w, bm, f.kt) = ldmatrix(
        4, f.r, lane, grouped_panel(f.x_panel),
        [&](const Expr &l) {
            return std::pair{f.kt * kTileK + ldsm_a_k(l), bm * ER + (f.w * MTE + f.mt) * kTileM + ldsm_a_row(l)};
        },
        native);
    f.u_frag = b_pair_fragments(Func(prefix + "mbtc_u_frag"), f.u_panel, f.j, lane, f.ep, f.kt, native);
    f.v_frag = b_pair_fragments(Func(prefix + "mbtc_v_frag"), f.v_panel, f.j, lane, f.np, f.kh, native);

    // 1. The expand of chunk hc over the halo's rows: its n-tile ht is hidden n-tile hc * HT + ht.
    f.rk_expand = RDom(0, g.k_padded() / kTileK, prefix + "mbtc_rk_expand");
    f.hidden_acc = Func(prefix + "mbtc_hidden_acc");
    std::vector<Var> hid_args{f.q, lane, f.ht, f.mt, f.w, bm, hc};
    f.hidden_acc(hid_args) = 0.0f;
    Expr hnt = hc * HT + f.ht;
    f.hidden_acc(hid_args) = mma::mma(
        elem, f.q, lane, [&](const Expr &reg, const Expr &l) { return f.x_frag(reg, l, f.mt, f.w, bm, f.rk_expand); },
        [&](const Expr &reg, const Expr &l) { return f.u_frag(2 * (hnt % 2) + reg, l, hnt / 2, f.rk_expand); },
        f.hidden_acc(hid_args), native);

    // 2. Each lane's registers into the halo's shared rows, phi(. + a) in the storage type; zero outside the image.
    f.rh = RDom(Region{{0, 2}, {0, 2}, {0, HT}, {0, MTE}, {0, kWarp}, {0, g.warps}}, prefix + "mbtc_rh");
    {
        Expr q0 = f.rh[0], mh = f.rh[1], rht = f.rh[2], rmt = f.rh[3], rl = f.rh[4], rw = f.rh[5];
        Expr ch = rht * kTileN + c_col(q0, rl);
        Expr p = (rw * MTE + rmt) * kTileM + c_row(2 * mh, rl);
        f.rh.where(p < HP);
        p = unsafe_promise_clamped(p, 0, HP - 1);
        Expr ix = halo_ix(bm, p), iy = halo_iy(bm, p);
        Expr x =
            apply_activation(f.hidden_acc(2 * mh + q0, rl, rht, rmt, rw, bm, hc) + a(hc * g.chunk + ch), s.act, true);
        x = select(ix >= 0 && ix < s.w && iy >= 0 && iy < s.h, x, 0.0f);
        // Each value a scalar of an unrolled register (generators/b16_bits.h: to_b16_bits).
        Expr value = reinterpret(storage, to_b16_bits(x, elem, native));
        f.hidden = Func(prefix + "mbtc_hidden");
        f.hidden(ke, kg, f.hp, bm, hc) = undef(storage);
        f.hidden(ch % 8, ch / 8, p, bm, hc) = value;
    }

    // 3. The depthwise window at the tile's pixel m (rows past the tile repeat its last pixel: never stored).
    f.rdw = RDom(0, g.ks, 0, g.ks, prefix + "mbtc_rdw");
    {
        Expr pm = min(m + (fragment_mutation == 3 ? 1 : 0), TP - 1);
        Expr p = ((pm / g.tile_x) * g.stride + f.rdw.y) * HX + (pm % g.tile_x) * g.stride + f.rdw.x;
        Expr e = hc * g.chunk + 8 * kg + ke;
        f.dw_sum = Func(prefix + "mbtc_dw_sum");
        f.dw_sum(ke, kg, m, bm, hc) = dw_bias(e);
        f.dw_sum(ke, kg, m, bm, hc) += to_f32(dw(e, 0, f.rdw.x, f.rdw.y)) * to_f32(f.hidden(ke, kg, p, bm, hc));
        f.dw_panel = Func(prefix + "mbtc_dw_panel");
        // Vectors of 8 lanes (the schedule's), so the native f16 conversion is right on CUDA (to_b16_bits).
        Expr dw_bits = to_b16_bits(apply_activation(f.dw_sum(ke, kg, m, bm, hc), s.act, true), elem, native);
        // Squeeze-Excitation: the stored layer's value times its channel's gate for this image, rounded again (as
        // generators/block_algorithm.h's se.gated).
        f.dw_panel(ke, kg, m, bm, hc) =
            gate.defined() ? to_b16_bits(from_b16_bits(dw_bits, elem, native) * gate(e, image(bm)), elem, native)
                           : dw_bits;
    }
    // The depthwise values' sum over the tile's pixels inside the image, per channel of chunk hc (before any gate):
    // Squeeze-Excitation's pooling, block by block (realized only by its pooling kernel).
    f.rt = RDom(0, TP, prefix + "mbtc_rt");
    f.rt.where(tile_x(bm) * g.tile_x + f.rt.x % g.tile_x < OW && tile_y(bm) * g.tile_y + f.rt.x / g.tile_x < OH);
    f.tile_sum = Func(prefix + "mbtc_tile_sum");
    f.tile_sum(ke, kg, bm, hc) = 0.0f;
    f.tile_sum(ke, kg, bm, hc) += from_b16_bits(f.dw_panel(ke, kg, f.rt.x, bm, hc), elem, native);

    // 4. The project of chunk hc from the depthwise rows: A's K step hk is the chunk's channels 16 hk...
    f.p_frag = Func(prefix + "mbtc_p_frag");
    f.p_frag(f.r, lane, f.mt, f.w, bm, f.hk, hc) = ldmatrix(
        4, f.r, lane, [&](const Expr &k, const Expr &row) { return f.dw_panel(k % 8, k / 8, row, bm, hc); },
        [&](const Expr &l) {
            return std::pair{f.hk * kTileK + ldsm_a_k(l), (f.w * MTP + f.mt) * kTileM + ldsm_a_row(l)};
        },
        native);
    f.rk_project = RDom(0, g.chunk / kTileK, 0, g.e / g.chunk, prefix + "mbtc_rk_project");
    const Expr rhk = f.rk_project.x, rhc = f.rk_project.y;
    f.acc = Func(prefix + "mbtc_acc");
    std::vector<Var> acc_args{f.q, lane, f.nt, f.mt, f.w, bm};
    f.acc(acc_args) = 0.0f;
    f.acc(acc_args) = mma::mma(
        elem, f.q, lane, [&](const Expr &r_, const Expr &l) { return f.p_frag(r_, l, f.mt, f.w, bm, rhk, rhc); },
        [&](const Expr &r_, const Expr &l) {
            return f.v_frag(2 * (f.nt % 2) + r_, l, f.nt / 2, rhc * (g.chunk / kTileK) + rhk);
        },
        f.acc(acc_args), native);

    // The store, from the fragment space: each lane its registers; pixels outside the tile or the image not stored;
    // the n-tiles of C' only (C' a multiple of 8: a register pair is all in or all out), the padding's never visited
    // (a where-clause on them let the simplifier drop what bounds inference then missed: the bias read past C').
    f.rc = RDom(Region{{0, 2}, {0, 2}, {0, g.k / kTileN}, {0, MTP}, {0, kWarp}, {0, g.warps}, {0, TX * TY * images}},
                prefix + "mbtc_rc");
    Expr q0 = f.rc[0], mh = f.rc[1], cnt = f.rc[2], cmt = f.rc[3], cl = f.rc[4], cw = f.rc[5], cbm = f.rc[6];
    Expr cn = cnt * kTileN + c_col(q0, cl);
    Expr cm = (cw * MTP + cmt) * kTileM + c_row(2 * mh, cl);
    Expr ox = tile_x(cbm) * g.tile_x + cm % g.tile_x, oy = tile_y(cbm) * g.tile_y + cm / g.tile_x;
    f.rc.where(cm < TP && ox < OW && oy < OH);
    cn = unsafe_promise_clamped(cn, 0, g.k - 1);
    const std::vector<Expr> coords{cn, unsafe_promise_clamped(ox, 0, OW - 1), unsafe_promise_clamped(oy, 0, OH - 1),
                                   image(cbm)};
    Expr value = f.acc(2 * mh + q0, cl, cnt, cmt, cw, cbm) + b(cn);
    if (s.residual) {  // stride 1: the tile's pixel is in its halo's input rows already
        Expr pm = min(cm, TP - 1);
        Expr row = cbm * ER + (pm / g.tile_x + pad) * HX + pm % g.tile_x + pad;
        value += to_f32(reinterpret(storage, f.x_panel(cn % 8, cn / 8, row)));
    }
    f.output = Func(prefix + "mbtc_output");
    f.output(Var("k"), Var("x"), Var("y"), Var("n")) = undef(storage);
    f.output(coords) = reinterpret(storage, to_b16_bits(value, elem, native));
    f.scalar_pairs = converts_natively(elem, native);  // the schedule: store_register_pairs
    return f;
}

// Squeeze-Excitation's mean (e, n) of the depthwise output over each image, from a pooling instance of mbconv_tc
// (its tile_sum, one per block of the image and chunk of channels): sum (its update over the image's blocks), then
// that over the output's pixels. Returns the mean; `sum` is the Func to schedule.
inline Halide::Func mbconv_tc_se_mean(const MbconvTcFuncs &pool, const MbconvTcGeometry &g, const MbconvTcShape &s,
                                      Halide::Func &sum, const std::string &prefix) {
    using namespace Halide;
    const int OH = mbconv_tc_out(s.h, g), OW = mbconv_tc_out(s.w, g);
    const int tiles = MbconvTcGeometry::ceil_div(OW, g.tile_x) * MbconvTcGeometry::ceil_div(OH, g.tile_y);
    Var e("e"), n("n");
    RDom rt(0, tiles, prefix + "mbtc_se_rt");
    Expr ec = e % g.chunk;
    sum = Func(prefix + "mbtc_se_sum");
    sum(e, n) = 0.0f;
    sum(e, n) += pool.tile_sum(ec % 8, ec / 8, n * tiles + rt, e / g.chunk);
    Func mean(prefix + "mbtc_se_mean");
    mean(e, n) = sum(e, n) / float(OH * OW);
    return mean;
}

}  // namespace blockfuse
