// conv2d (and conv3d) on tensor cores as an implicit GEMM, the algorithm only: out[b][y][x][k] = act(bias[k] +
// sum_{ky,kx,c} in[b][y*sy - pt + ky*dy][x*sx - pl + kx*dx][c] w[k][c][ky][kx]), f16 or bf16,
// f32 accumulation. The GEMM of generators/gemm_algorithm.h with M = images x output pixels, N = output
// channels, K = taps x channels: the im2col gather is A's shared-panel load (never materialized), C is
// stored at (k, x, y, b). A conv3d adds the depth: its taps are (kz, ky, kx), its pixels (x, y, z), and its
// input and output hold depth and batch in one dimension (z + D b), so M = images x OD x OH x OW and the
// store is the conv2d's with that dimension as (oz + OD b). NHWC makes the channels the reduction's
// innermost run: with C a multiple of 8 each 8-element group of A is one tap's 8 contiguous channels, one
// 16-byte vector load (zero where the tap falls in the padding). A 1x1 convolution is the GEMM itself (A the input seen as pixels x channels).
// Grouped (ConvTcShape::window_n): the output channels in windows, A per window (c below counted from the
// window's first input channel), the weights zero where an input channel is not in the output channel's group.
//
// Layouts (Halide dims, innermost first): input (c, x, y, b) bits; weights (kr, k): the filter as N x K,
// kr = (ky * S + kx) * Cp + c with Cp = C rounded up to 8 (zeros at c >= C), rows of K_padded = R S Cp
// (runtime/conv2d_tc.cpp lays them out so once at load time; grouped: Cp the window's channels rounded up, row k
// holding the window of k; one group of C <= 4: 8 / C taps to each 8 of the row, ConvWindows::packed_taps);
// bias (k) f32 (BatchNorm folded in); output
// (k, x, y, b) bits. A conv3d's: input (c, x, y, z + D b), weights kr = ((kz * R + ky) * S + kx) * Cp + c,
// output (k, x, y, oz + OD b).
#pragma once
#include "generators/conv_windows.h"
#include "generators/gemm_algorithm.h"
#include "generators/storage.h"

namespace blockfuse {

// The static shape of one convolution (a kernel is made per shape: every division below is by a constant).
struct ConvTcShape {
    int c = 0, h = 0, w = 0, k = 0, r = 1, s = 1;
    int stride_x = 1, stride_y = 1, dil_x = 1, dil_y = 1, pad_l = 0, pad_r = 0, pad_t = 0, pad_b = 0;
    int d = 1, t = 1, stride_z = 1, dil_z = 1, pad_z = 0;  // a conv3d's depth (padding on both sides); 1 x 1: a conv2d
    int groups = 1;
    ConvWindows windows() const { return {c, k, groups}; }
    int window_n() const { return windows().window_n(); }
    int window_channels() const { return windows().window_channels(); }
    int c_padded() const { return windows().window_channels_padded(); }
    int out_w() const { return (w + pad_l + pad_r - dil_x * (s - 1) - 1) / stride_x + 1; }
    int out_h() const { return (h + pad_t + pad_b - dil_y * (r - 1) - 1) / stride_y + 1; }
    int out_d() const { return (d + 2 * pad_z - dil_z * (t - 1) - 1) / stride_z + 1; }
    int reduction() const { return windows().reduction(t * r * s); }
};

// `images`: the batch (a run-time extent); `storage`: the input's and output's type. See gemm() for the tiling
// and fragment_mutation. `residual` (optional, storage type, the output's shape and coordinates) is added after
// the activation; `prefix` names the Funcs (several convolutions in one pipeline).
inline GemmFuncs conv2d_tc(const Halide::Func &input, const Halide::Func &weights, const Halide::Func &bias,
                           const ConvTcShape &cs, const Halide::Expr &images, const Halide::Expr &activation,
                           const GemmTiling &t, mma::Elem elem, const Halide::Target &target, int fragment_mutation,
                           const Halide::Type &storage, const Halide::Func &residual = Halide::Func(),
                           const std::string &prefix = "") {
    using namespace Halide;
    const int OW = cs.out_w(), OH = cs.out_h(), OD = cs.out_d(), Cp = cs.c_padded(), groups_per_tap = Cp / 8;
    GemmShape s{images * (OW * OH * OD), Expr(cs.k), Expr(cs.reduction()), Expr(cs.reduction())};
    GemmIo io;
    io.window_n = cs.window_n();
    io.a_element = [&, OW, OH, OD, Cp, groups_per_tap](const Expr &ke, const Expr &kg, const Expr &m, const Expr &exact,
                                                       const Expr &window) {
        const bool depth = cs.d > 1 || cs.t > 1;  // a conv3d (a conv2d's expressions stay as they were without it)
        // Packed taps (ConvWindows::packed_taps): group kg holds taps g kg ... g kg + g - 1, lane ke is channel
        // ke % C of the group's tap ke / C (lanes from g C on are padding).
        const int g = cs.windows().taps_per_group();
        Expr tap = g > 1 ? g * kg + ke / cs.c : kg / groups_per_tap;
        Expr c = g > 1 ? ke % cs.c : 8 * (kg % groups_per_tap) + ke;
        Expr kx = tap % cs.s, ky = depth ? (tap / cs.s) % cs.r : tap / cs.s, kz = tap / (cs.s * cs.r);
        Expr ox = m % OW, oy = (m / OW) % OH, oz = (m / (OW * OH)) % OD, b = m / (OW * OH * OD);
        Expr ix = ox * cs.stride_x - cs.pad_l + kx * cs.dil_x, iy = oy * cs.stride_y - cs.pad_t + ky * cs.dil_y;
        Expr iz = oz * cs.stride_z - cs.pad_z + kz * cs.dil_z;
        Expr inside = tap < cs.t * cs.r * cs.s && ix >= 0 && ix < cs.w && iy >= 0 && iy < cs.h;
        if (g > 1) inside = inside && ke < g * cs.c;
        if (depth) inside = inside && iz >= 0 && iz < cs.d;
        // m < M is whole tiles' promise; elsewhere the row of an image past the batch reads nothing.
        inside = inside && (exact || m < s.M);
        // With C a multiple of 8 the group's channels are all real and contiguous (a dense vector); else each
        // element is clamped and the padding channels zeroed. Grouped: c counts from the window's first channel,
        // window x window_channels; its 8-groups are whole vectors where the window's channels are a multiple of 8
        // too (a window past the channels, the last block's beyond N, reads nothing).
        Expr ch;
        if (cs.groups == 1) {
            ch = cs.c % 8 == 0 ? unsafe_promise_clamped(c, 0, cs.c - 1) : min(c, cs.c - 1);
            if (cs.c % 8 != 0) inside = inside && c < cs.c;
        } else {
            const int wc = cs.window_channels();
            Expr first = window * wc;
            if (wc % 8 == 0 && cs.c % 8 == 0) {
                ch = unsafe_promise_clamped(first + c, 0, cs.c - 1);
                inside = inside && (exact || first + 8 * (kg % groups_per_tap) < cs.c);
            } else {
                ch = min(first + c, cs.c - 1);
                inside = inside && c < wc && first + c < cs.c;
            }
        }
        Expr zb = clamp(b, 0, images - 1);  // (z + D b): the input's depth and batch
        if (depth) zb = clamp(iz, 0, cs.d - 1) + cs.d * zb;
        Expr value = input(ch, clamp(ix, 0, cs.w - 1), clamp(iy, 0, cs.h - 1), zb);
        return select(inside, reinterpret(UInt(16), value), cast(UInt(16), 0));
    };
    io.c_coords = [OW, OH](const Expr &n, const Expr &m) {  // the last is (oz + OD b) for a conv3d
        return std::vector<Expr>{n, m % OW, (m / OW) % OH, m / (OW * OH)};
    };
    io.c_dims = 4;
    io.c_type = storage;
    io.prefix = prefix;
    if (residual.defined()) io.residual = [residual](const std::vector<Expr> &c) { return to_f32(residual(c)); };
    return gemm(Func(), weights, bias, s, activation, t, elem, target, fragment_mutation, io);
}

}  // namespace blockfuse
