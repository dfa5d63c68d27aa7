// Pooling, the algorithm only: average and max pooling (with PyTorch's argmax indices) over 1 to 3
// spatial axes with kernel, stride, padding, dilation, ceil-mode output sizes, count_include_pad and
// divisor_override; adaptive pooling (PyTorch's floor/ceil windows); and FLA's mean pooling over
// chunks of a sequence, uniform or ragged. No scheduling call appears here.
//
// Every shape is static (the kernel cache builds one kernel per workload). Funcs are indexed
// (x, y, z, c, n), x innermost in memory (PyTorch's contiguous NCL / NCHW / NCDHW), an axis a
// lower-rank op does not have of extent 1. Sums and comparisons are in f32 whatever the storage.
#pragma once
#include "Halide.h"
#include "generators/pool_windows.h"
#include "generators/storage.h"
#include <array>
#include <limits>
#include <string>

namespace blockfuse {

// One spatial axis of a pooling window. Windowed: taps start + t * dilation, start = o * stride - pad.
// Adaptive: start = floor(o * in / out), end = ceil((o + 1) * in / out), taps start + t below end;
// `kernel` is then the widest window (adaptive_kernel).
struct PoolAxis {
    int in = 1, out = 1, kernel = 1, stride = 1, pad = 0, dilation = 1;
};

enum class PoolOp { avg, max };

struct PoolGeometry {
    PoolOp op = PoolOp::max;
    bool adaptive = false;
    std::array<PoolAxis, 3> axis;  // x, y, z
    bool count_include_pad = true;
    int divisor = 0;  // avg: divisor_override (0: none)
    // The input is read through blocks of `vec` consecutive x values (1: element by element): the same
    // values, but a schedule can then load each block as one aligned vector. Needs in.x % vec == 0.
    int vec = 1;
    // CUDA: the maximum through LLVM's llvm.maximum.f32 (IEEE maximum: NaN in, NaN out), which the PTX
    // backend emits as one max.NaN.f32 (sm_80+); elsewhere a compare and a select (the OpenCL backend writes
    // C). IEEE maximum orders -0 below +0 where PyTorch keeps the first of the two: the values compare
    // equal, and the index is PyTorch's either way (the first tap equal to the maximum).
    bool nan_max_intrinsic = false;
};

struct PoolFuncs {
    Halide::Func blocks;   // (v, xb, y, z, c, n) storage type: input block xb, lane v; pad value outside
    Halide::Func reduce;   // (x, y, z, c, n) f32: avg the sum; max the maximum, NaN if a tap is NaN
    Halide::Func nan_tap;  // max with indices: the offset of the last NaN tap (-1: none)
    Halide::Func argmax;   // max with indices: the offset of the first tap equal to the maximum
    Halide::Func output;   // (x, y, z, c, n) storage type
    Halide::Func indices;  // max: int64 argmax, the flattened index into the input plane (volume), else undefined
    Halide::RDom r;        // taps (kx, ky, kz): x innermost, PyTorch's scan order
};

namespace pool_detail {
using namespace Halide;

inline Expr window_start(const PoolAxis &a, bool adaptive, const Expr &o) {
    return adaptive ? (o * a.in) / a.out : o * a.stride - a.pad;
}
// Taps of the window of output o that lie inside the input: [first, last] (tap numbers).
inline Expr first_tap(const PoolAxis &a, bool adaptive, const Expr &o) {
    if (adaptive || a.pad == 0) return 0;
    Expr s = window_start(a, false, o);
    return max(0, (-s + a.dilation - 1) / a.dilation);  // PyTorch: while (start < 0) start += dilation
}
// Adaptive: the window's length; windowed avg: the clipped and the padded window lengths.
inline Expr adaptive_length(const PoolAxis &a, const Expr &o) {
    return ((o + 1) * a.in + a.out - 1) / a.out - (o * a.in) / a.out;
}
}  // namespace pool_detail

// input: (x, y, z, c, n) in the storage type, its extents geometry's in.
inline PoolFuncs pool_algorithm(const Halide::Func &input, const PoolGeometry &g, const Halide::Type &storage,
                                bool indices) {
    using namespace Halide;
    using namespace pool_detail;
    Var x("x"), y("y"), z("z"), c("c"), n("n"), v("v"), xb("xb");
    const PoolAxis &ax = g.axis[0], &ay = g.axis[1], &az = g.axis[2];
    const int V = g.vec;
    if (ax.in % V)
        throw CompileError("pool: vec = " + std::to_string(V) + " must divide the input width " +
                           std::to_string(ax.in));
    PoolFuncs f;

    // Positions outside the input read the pad value: -inf for max (a strict > never takes it, so the
    // first valid tap keeps the argmax), 0 for avg. The load itself is clamped in bounds. With blocks,
    // the row width is a multiple of vec, so a block is wholly inside or wholly outside its row.
    Expr pad_value = from_f32(storage, g.op == PoolOp::max ? Float(32).min() : Expr(0.0f));
    const int nb = ax.in / V;
    Expr inside = xb >= 0 && xb < nb && y >= 0 && y < ay.in && z >= 0 && z < az.in;
    Expr load = input(clamp(xb, 0, nb - 1) * V + v, clamp(y, 0, ay.in - 1), clamp(z, 0, az.in - 1), c, n);
    f.blocks = Func("pool_blocks");
    f.blocks(v, xb, y, z, c, n) = select(inside, load, pad_value);

    f.r = RDom(0, ax.kernel, 0, ay.kernel, 0, az.kernel, "pool_r");
    const RDom &r = f.r;
    Expr sx = window_start(ax, g.adaptive, x), sy = window_start(ay, g.adaptive, y),
         sz = window_start(az, g.adaptive, z);
    Expr px = sx + r.x * ax.dilation, py = sy + r.y * ay.dilation, pz = sz + r.z * az.dilation;
    Expr raw = f.blocks(px % V, px / V, py, pz, c, n);  // Euclidean: px < 0 falls in block -1
    if (g.adaptive) {  // taps past the window's end (narrower windows than the widest) read nothing
        Expr valid = r.x < adaptive_length(ax, x) && r.y < adaptive_length(ay, y) && r.z < adaptive_length(az, z);
        raw = select(valid, raw, pad_value);
    }
    Expr value = to_f32(raw);

    f.reduce = Func("pool_reduce");
    f.output = Func("pool");
    if (g.op == PoolOp::avg) {
        f.reduce(x, y, z, c, n) = 0.0f;
        f.reduce(x, y, z, c, n) += value;
        // PyTorch's divide_factor: divisor_override, else the window clipped to the padded input
        // (count_include_pad) or to the input; adaptive: the window.
        auto length = [&](const PoolAxis &a, const Expr &o, bool clip) -> Expr {
            if (g.adaptive) return adaptive_length(a, o);
            Expr s = window_start(a, false, o);
            Expr e = min(s + a.kernel, a.in + a.pad);
            return clip ? min(e, a.in) - max(s, 0) : e - s;
        };
        const bool clip = !g.count_include_pad;
        Expr div = g.divisor ? Expr(g.divisor) : length(ax, x, clip) * length(ay, y, clip) * length(az, z, clip);
        f.output(x, y, z, c, n) = from_f32(storage, f.reduce(x, y, z, c, n) / cast<float>(div));
        return f;
    }
    // Max: PyTorch's scan, `if (val > maxval || isnan(val))`, gives the first maximum and the last NaN.
    // Written as single-valued reductions, the taps unrolled: the maximum; for the index, the last NaN tap
    // where the maximum is NaN, else the first tap equal to the maximum (a scan in reverse order, so the
    // last match written is the first tap), starting at the first valid tap (a window of -inf keeps it:
    // no tap compares equal to the NaN that stands for -inf there). Tap offsets are relative to the window's start in the input plane, constants
    // per unrolled tap. No Tuple: Halide 21 splits a Tuple update wrongly when an element's reference sits
    // inside a call (SplitTuples). Built with strict_float (the runtime adds it to every pooling kernel's
    // target): under Halide's default fast-math flags LLVM took every converted value for not NaN and not
    // infinite and dropped the NaN scan (x86).
    auto offset = [&](const Expr &tx, const Expr &ty, const Expr &tz) {
        return (tz * az.dilation * ay.in + ty * ay.dilation) * ax.in + tx * ax.dilation;
    };
    // The maximum, NaN-propagating: CUDA's max.NaN.f32 (llvm.maximum), else a compare and a select.
    f.reduce(x, y, z, c, n) = Float(32).min();
    Expr m0 = f.reduce(x, y, z, c, n);
    f.reduce(x, y, z, c, n) = g.nan_max_intrinsic ? Internal::Call::make(Float(32), "llvm.maximum.f32", {m0, value},
                                                                         Internal::Call::PureExtern)
                                                  : select(value > m0 || is_nan(value), value, m0);
    f.output(x, y, z, c, n) = from_f32(storage, f.reduce(x, y, z, c, n));
    if (!indices) return f;
    // The last NaN tap (-1: none); the index takes it where the maximum is NaN.
    Expr any_nan = is_nan(f.reduce(x, y, z, c, n));
    f.nan_tap = Func("pool_nan_tap");
    f.nan_tap(x, y, z, c, n) = -1;
    f.nan_tap(x, y, z, c, n) = select(is_nan(value), offset(r.x, r.y, r.z), f.nan_tap(x, y, z, c, n));
    Expr m = f.reduce(x, y, z, c, n);
    Expr target = select(m == Float(32).min(), Expr(std::numeric_limits<float>::quiet_NaN()), m);
    RVar rx = r.x, ry = r.y, rz = r.z;
    Expr tx = ax.kernel - 1 - rx, ty = ay.kernel - 1 - ry, tz = az.kernel - 1 - rz;  // reverse scan order
    Expr px_r = sx + tx * ax.dilation, py_r = sy + ty * ay.dilation, pz_r = sz + tz * az.dilation;
    Expr raw_r = f.blocks(px_r % V, px_r / V, py_r, pz_r, c, n);
    if (g.adaptive) {
        Expr valid = tx < adaptive_length(ax, x) && ty < adaptive_length(ay, y) && tz < adaptive_length(az, z);
        raw_r = select(valid, raw_r, pad_value);
    }
    f.argmax = Func("pool_argmax");
    f.argmax(x, y, z, c, n) =
        offset(first_tap(ax, g.adaptive, x), first_tap(ay, g.adaptive, y), first_tap(az, g.adaptive, z));
    f.argmax(x, y, z, c, n) = select(to_f32(raw_r) == target, offset(tx, ty, tz), f.argmax(x, y, z, c, n));
    f.indices = Func("pool_indices");
    f.indices(x, y, z, c, n) = cast<int64_t>((sz * ay.in + sy) * ax.in + sx +
                                             select(any_nan, f.nan_tap(x, y, z, c, n), f.argmax(x, y, z, c, n)));
    return f;
}

// FLA's mean pooling: x (d, h, s, b), the mean of each chunk of `chunk` tokens of a sequence (a
// sequence's last chunk may be shorter) -> (d, h, g, b). Uniform: each batch row one sequence of
// `seq` tokens. Ragged: offsets (NS + 1) and chunk indices (NC, 2: sequence, chunk within it) as FLA's
// cu_seqlens and prepare_chunk_indices, the same for every batch row.
struct MeanPoolingFuncs {
    Halide::Func sum;     // f32 (d, h, g, b)
    Halide::Func output;  // out type (d, h, g, b)
    Halide::RDom r;       // tokens of a chunk
};

inline MeanPoolingFuncs mean_pooling_algorithm(const Halide::Func &x, int seq, int chunk, const Halide::Type &out_type,
                                               const Halide::Func &offsets = Halide::Func(),
                                               const Halide::Func &chunk_index = Halide::Func(), int sequences = 1) {
    using namespace Halide;
    Var d("d"), h("h"), g("g"), b("b");
    MeanPoolingFuncs f;
    const bool ragged = offsets.defined();
    Expr start, end;
    if (ragged) {
        Expr s = clamp(chunk_index(0, g), 0, sequences - 1), j = chunk_index(1, g);
        start = offsets(s) + j * chunk;
        end = min(start + chunk, offsets(s + 1));
    } else {
        start = g * chunk;
        end = min(start + chunk, seq);
    }
    f.r = RDom(0, chunk, "mean_r");
    // A short chunk (ragged, or the last of a sequence not a multiple of chunk) adds zeros past its end,
    // the token read there being its last one again: no branch in the token loop, so an unrolled step's
    // loads are all in flight together (a where-clause guarded each load).
    const bool short_chunks = ragged || seq % chunk;
    Expr token = short_chunks ? start + min(f.r, end - start - 1) : start + f.r;
    Expr value = to_f32(x(d, h, clamp(token, 0, seq - 1), b));
    f.sum = Func("mean_sum");
    f.sum(d, h, g, b) = 0.0f;
    f.sum(d, h, g, b) += short_chunks ? select(f.r < end - start, value, 0.0f) : value;
    f.output = Func("mean_pooling");
    f.output(d, h, g, b) = from_f32(out_type, f.sum(d, h, g, b) / cast<float>(end - start));
    return f;
}

}  // namespace blockfuse
