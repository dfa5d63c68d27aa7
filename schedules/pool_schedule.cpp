#include "schedules/pool_schedule.h"
#include <string>

namespace blockfuse {
using namespace Halide;

namespace {

// The loops `vars` (innermost first) of f fused into one, named prefix1, prefix2, ... as it grows.
Var fuse_all(Func f, const std::vector<Var> &vars, const std::string &prefix) {
    Var all = vars[0];
    for (size_t i = 1; i < vars.size(); ++i) {
        Var fused(prefix + std::to_string(i));
        f.fuse(all, vars[i], fused);
        all = fused;
    }
    return all;
}

// Every tile of the output becomes one thread of a flat grid: the tiles are numbered x fastest (so a
// warp's threads read neighbouring input columns: coalesced), the numbering is cut into blocks of
// `threads`. One flat numbering keeps every lane busy whatever the output's shape (1x1 planes, 27-wide
// rows, 32000-long sequences) and, the shapes being static, costs a few multiply-shifts per thread to
// turn back into coordinates. Returns the thread Var.
Var flat_threads(Func out, const std::vector<Var> &outer, int threads) {
    const Var f = fuse_all(out, outer, "f");
    Var fb("fb"), ft("ft");
    out.split(f, fb, ft, threads, TailStrategy::GuardWithIf).gpu_blocks(fb).gpu_threads(ft);
    return ft;
}

}  // namespace

// GPU: a thread owns tile_x x tile_y outputs (edge tiles shift inwards, so every tile is whole and its
// window a constant size; the heuristic keeps tiles within the output). With guard_x the last x tile of a
// row is not shifted but computed whole, its outputs past the row not stored: every x tile then starts at
// a multiple of tile_x, so its window starts at the same lane of a vector where the shifted edge tile's
// would not (57-wide ceil-mode rows at stride 2: vectors of 8 instead of scalar loads). With stage_out a
// block computes whole rows (1-D: a chunk of a row) into shared memory and its threads then store them in
// order, each warp 32 consecutive outputs. With `stage`, the thread first loads its input window (the
// union of its outputs' windows, taps shared between neighbouring outputs loaded once) into registers in
// blocks of `vec` elements: one aligned vector per block where the row width allows, the padding decided
// once per block (a block is wholly inside or outside its row).
// The reduction then reads registers only, every tap unrolled. Adaptive windows move with the output
// (floor/ceil starts), so their window has no constant size: their taps are loaded where they are used.
// With store_vec, where tile_x divides the output width (no tile shifts, so every tile starts at a
// multiple of tile_x), the tile's outputs are stored as one vector (f16 8 outputs: STG.64 x2 rather than
// STG.U16 x8 on sm_90).
// CPU: vectors of cpu_vec outputs along x, the rows of every plane in parallel.
void schedule_pool(const PoolFuncs &f, Func out, Func staged, int rank, const PoolGeometry &g, const PoolKnobs &kn,
                   bool gpu) {
    const std::vector<Var> args = out.args();
    Var x = args[0];
    std::vector<Func> reductions{f.reduce};  // each a register tile of the thread's outputs
    for (const Func &h : {f.nan_tap, f.argmax})
        if (h.defined()) reductions.push_back(h);
    const std::vector<Var> ra = f.reduce.args();  // (x, y, z, c, n)
    const RDom &r = f.r;
    const int tile_y = rank >= 2 ? kn.tile_y : 1;
    if (gpu) {
        const TailStrategy shift = TailStrategy::ShiftInwards;
        const bool stage_out = kn.stage_out > 0;
        // The Func whose threads own the output tiles: the output, or with stage_out the block's staged tiles.
        Func tiles = stage_out ? staged : out;
        const std::vector<Var> ta = tiles.args();
        const std::vector<Var> planes(args.begin() + (rank >= 2 ? 2 : 1), args.end());  // z, c, n
        Var xt("xt"), xr("xr"), yt("yt"), yr("yr");
        tiles.split(ta[0], xt, xr, kn.tile_x, kn.guard_x ? TailStrategy::GuardWithIf : shift);
        std::vector<Var> outer{xt};
        if (rank >= 2) {
            tiles.split(ta[1], yt, yr, tile_y, shift).reorder(xr, yr, xt, yt);
            outer.push_back(yt);
        }
        Var ft("ft");
        if (stage_out) {
            // The block: stage_out whole rows of one plane (1-D: threads x tile_x outputs of a row), their tiles
            // one thread each into shared memory, then stored by consecutive threads: a warp writes 32
            // consecutive outputs (f16 64 bytes, indices 256), where a thread storing its own tile writes
            // tile_x consecutive values 32 threads apart.
            Var yb("yb"), yi("yi"), xb("xb"), xi("xi"), e("e"), eo("eo"), et("et");
            std::vector<Var> block_vars;
            if (rank >= 2) {
                out.split(args[1], yb, yi, kn.stage_out, shift).fuse(x, yi, e);
                block_vars.push_back(yb);
            } else {
                out.split(x, xb, xi, kn.threads * kn.tile_x, shift);
                e = xi;
                block_vars.push_back(xb);
            }
            block_vars.insert(block_vars.end(), planes.begin(), planes.end());
            const Var fused = fuse_all(out, block_vars, "blk");
            out.gpu_blocks(fused).split(e, eo, et, kn.threads, TailStrategy::GuardWithIf).gpu_threads(et);
            tiles.compute_at(out, fused).store_in(MemoryType::GPUShared);
            if (rank >= 2) tiles.fuse(xt, yt, ft);
            else ft = xt;
            tiles.gpu_threads(ft);
        } else {
            outer.insert(outer.end(), planes.begin(), planes.end());
            ft = flat_threads(out, outer, kn.threads);
        }
        if (rank >= 2) tiles.unroll(yr);
        if (pool_store_vector(g, kn, out.types()[0])) tiles.vectorize(xr);
        else tiles.unroll(xr);
        for (Func red : reductions) {
            red.compute_at(tiles, ft).store_in(MemoryType::Register);
            red.bound_extent(ra[0], kn.tile_x).bound_extent(ra[1], tile_y);
            red.unroll(ra[0]).unroll(ra[1]);
            red.update()
                .reorder(ra[0], ra[1], r.x, r.y, r.z)
                .unroll(ra[0])
                .unroll(ra[1])
                .unroll(r.x)
                .unroll(r.y)
                .unroll(r.z);
        }
        if (kn.stage && !g.adaptive) {
            Func blocks = f.blocks;
            const std::vector<Var> ba = blocks.args();  // (v, xb, y, z, c, n)
            blocks.compute_at(tiles, ft).store_in(MemoryType::Register).unroll(ba[1]).unroll(ba[2]).unroll(ba[3]);
            if (g.vec > 1) blocks.vectorize(ba[0]);
        }
        return;
    }
    Var xo("xo"), xi("xi");
    const int lanes = kn.cpu_vec;
    out.parallel(fuse_all(out, std::vector<Var>(args.begin() + 1, args.end()), "p"));
    const bool vector = g.axis[0].out >= lanes;
    if (vector) out.split(x, xo, xi, lanes, TailStrategy::ShiftInwards).vectorize(xi);
    for (Func red : reductions) {
        red.compute_at(out, vector ? xo : x);
        if (!vector) continue;
        red.vectorize(ra[0]);
        red.update().reorder(ra[0], r.x, r.y, r.z).vectorize(ra[0]);
    }
}

// GPU: a thread owns tile_x consecutive elements of d of one (head, chunk, batch) (one vector of the
// storage type where d allows) and sums the chunk's tokens, `unroll` at a time so that their loads are
// in flight together; the threads of a block cover d first (coalesced rows of x).
void schedule_mean_pooling(const MeanPoolingFuncs &f, Func out, const PoolKnobs &kn, bool gpu) {
    const std::vector<Var> a = out.args();  // (d, h, g, b)
    Func sum = f.sum;
    const std::vector<Var> sa = sum.args();
    Var dt("dt"), dv("dv");
    RVar ro("ro"), ri("ri");
    const int lanes = gpu ? kn.tile_x : kn.cpu_vec;
    out.split(a[0], dt, dv, lanes, TailStrategy::GuardWithIf);
    if (gpu && !gpu_vector_store_ok(out.types()[0], lanes)) out.unroll(dv);  // generators/storage.h
    else out.vectorize(dv);
    if (gpu) {
        const Var ft = flat_threads(out, {dt, a[1], a[2], a[3]}, kn.threads);
        sum.compute_at(out, ft).store_in(MemoryType::Register);
    } else {
        Var p("p");
        out.fuse(a[2], a[3], p).parallel(p);
        sum.compute_at(out, dt);
    }
    sum.vectorize(sa[0]);
    sum.update().vectorize(sa[0]);
    if (kn.unroll > 1) sum.update().split(f.r.x, ro, ri, kn.unroll, TailStrategy::GuardWithIf).unroll(ri);
}

}  // namespace blockfuse
