#include "schedules/gemm_schedule.h"
#include "schedules/mma_lowering.h"
#include "schedules/panel_prefetch.h"

namespace blockfuse {
using namespace Halide;

void check_gemm_knobs(const GemmKnobs &kn) {
    if (const std::string why = gemm_knobs_error(kn); !why.empty()) throw CompileError(why);
}

namespace {
// The C registers stored by the lanes that hold them: a 2-element vector per register pair (two adjacent
// columns), unrolled over the warp's tiles. Blocks own disjoint tiles, so the scatter has no races.
// CUDA maps the lane index onto gpu_lanes (warp-level registers); OpenCL has no gpu_lanes and takes it as
// one more thread dimension.
enum class Mapping { cuda, opencl, cpu };

// A panel's (ke, kg, row[, win]) spread over every thread of the block: one 8-element group (16 bytes) per thread
// and step of the returned loop, which runs inside the thread loops. wgmma's core-matrix panels (ke, ri, kg, ro): the
// 8 rows of a core matrix on 8 consecutive threads (128 contiguous bytes of shared memory, no bank conflict), then
// the K groups; swizzled, a row's 8 chunks on 8 consecutive threads (its 128 bytes, contiguous in shared memory and
// in A and B: a warp reads 4 whole 128-byte lines).
enum class Panel { rows, core_matrices, swizzled };
Var spread_over_block(Func panel, const GemmKnobs &kn, Panel layout) {
    Var ke = panel.args()[0], tt("tt"), tx("tx"), ty("ty"), tz("tz");
    if (layout != Panel::rows) {
        const Var ri = panel.args()[1], kg = panel.args()[2], ro = panel.args()[3], rk("ri_kg");
        if (layout == Panel::swizzled) panel.fuse(kg, ri, rk).fuse(rk, ro, tt);
        else panel.fuse(ri, kg, rk).fuse(rk, ro, tt);
    } else {
        Var kg = panel.args()[1], row = panel.args()[2];
        // The windows' panels in turn (fused into the row first: the loops keep the names compute_with matches).
        if (panel.dimensions() == 4) {
            const Var rows("row_win");
            panel.fuse(row, panel.args()[3], rows);
            row = rows;
        }
        panel.fuse(kg, row, tt);
    }
    // Guarded, not shifted inwards: where the groups do not divide over the threads (64 x 80's B panel, 320 groups
    // over 128 threads) a shifted last step has two threads store one group, a write-write race to racecheck.
    const TailStrategy guard = TailStrategy::GuardWithIf;
    panel.split(tt, tt, tx, 32, guard)
        .split(tt, tt, ty, kn.warps_n, guard)
        .split(tt, tt, tz, kn.warps_m, guard)
        .reorder(ke, tt, tx, ty, tz)
        .gpu_threads(tx, ty, tz);
    return tt;
}
Panel panel_layout(const GemmFuncs &f) {
    return f.swizzled ? Panel::swizzled : f.wgmma ? Panel::core_matrices : Panel::rows;
}
// wgmma's panels: 8 rows a core matrix; swizzled, each row's 8 chunks stored together (one 128-byte line) and the
// step's 8 chunks exactly (the atom the swizzle permutes within).
void bound_core_matrices(Func panel, const GemmFuncs &f) {
    panel.bound(panel.args()[1], 0, 8);
    if (!f.swizzled) return;
    panel.align_bounds(panel.args()[2], 8);
    panel.reorder_storage(panel.args()[0], panel.args()[2], panel.args()[1], panel.args()[3]);
}
// The C tile staged in shared memory (GemmFuncs::c_tile), one block's: written by the lanes that hold its registers as
// the unstaged store does (rows padded by 8 elements: a warp's 8 rows x 16 bytes of a store land in distinct banks),
// read back by every thread of the block in 8-byte vectors along N, consecutive lanes along a row, and stored so: a
// warp's store is 256 contiguous bytes, whole 32-byte sectors. (8 bytes, not 16: Halide 21's PTX codegen splits wider
// 16-bit vectors into 8-byte stores, docs/halide-21.md, which at 16 bytes a lane would each fill half a sector.)
// The rounds of that store (a step: one vector a thread) a serial loop, not unrolled: Halide puts a block barrier
// between sibling thread loops, so unrolled rounds outside the thread loops had one barrier each (16 on 128 x 128),
// and RVars of a store whose coordinates are clamped cannot be reordered to put the rounds inside them.
// H100, gemm 25088 x 1024 x 256 f16 on wgmma 128 x 128: 0.0499 ms staged (0.0529 with the barriers) against 0.0714
// unstaged, whose epilogue was 44% of the time, stalled on the store queue, each stored sector half used
// (bench/results/h100/gemm-store-loop/, stage-c/, tc-tune/).
void map_staged_output(GemmFuncs &f, const GemmKnobs &kn, Mapping mapping) {
    const GemmTiling t = gemm_tiling(kn);
    RDom rc = f.rc, rs = f.rs;
    Stage tile = f.c_tile.update();
    tile.allow_race_conditions().unroll(rc[0]).unroll(rc[1]).unroll(rc[2]).unroll(rc[3]);
    const Var n = f.c_tile.args()[0], m = f.c_tile.args()[1];
    f.c_tile.bound(n, 0, t.block_n()).bound(m, 0, t.block_m());
    Stage st = f.output.update();
    st.allow_race_conditions();
    const LoopLevel block(f.output, rs[2]);
    if (mapping == Mapping::cpu) {
        f.c_tile.compute_at(block);
        st.parallel(rs[3]);
        return;
    }
    if (mapping == Mapping::opencl)
        throw CompileError("gemm: stage_c = 1 is for CUDA and the CPU (OpenCL's emulation keeps the accumulators in "
                           "shared memory already)");
    f.c_tile.compute_at(block).store_in(MemoryType::GPUShared).align_storage(n, t.block_n() + 8);
    tile.vectorize(rc[0]).gpu_lanes(rc[4]).gpu_threads(rc[5], rc[6]);
    // (4 elements, the row's 8-byte groups x the rows) over the block's threads as the panels' loads are spread.
    RVar group("rs_group"), vec("rs_vec"), cell("rs_cell"), step("rs_step"), tx("rs_tx"), ty("rs_ty"), tz("rs_tz");
    st.split(rs[0], group, vec, 4)
        .fuse(group, rs[1], cell)
        .split(cell, step, tx, 32)
        .split(step, step, ty, kn.warps_n)
        .split(step, step, tz, kn.warps_m)
        .reorder(vec, tx, ty, tz, step, rs[2], rs[3])
        .unroll(vec)
        .gpu_threads(tx, ty, tz)
        .gpu_blocks(rs[2], rs[3]);
    st.specialize(f.exact).vectorize(vec);  // whole tiles: no guard, 8-byte stores
}
void map_output(GemmFuncs &f, const GemmKnobs &kn, Mapping mapping) {
    if (f.stage_c) return map_staged_output(f, kn, mapping);
    RDom rc = f.rc;
    Stage st = f.output.update();
    st.allow_race_conditions().unroll(rc[0]).unroll(rc[1]).unroll(rc[2]).unroll(rc[3]);
    if (mapping == Mapping::cuda) st.gpu_lanes(rc[4]).gpu_threads(rc[5], rc[6]).gpu_blocks(rc[7], rc[8]);
    else if (mapping == Mapping::opencl) st.gpu_threads(rc[4], rc[5], rc[6]).gpu_blocks(rc[7], rc[8]);
    else st.parallel(rc[8]);
    // Whole tiles: panels without clamps or zero fill, and the register pairs stored unguarded as 2-element
    // vectors. With tails each element keeps its own guard (unrolled: a guarded vector store is scalarized
    // into a loop of run-time extent, and the epilogue's registers with it into local memory).
    Stage whole = st.specialize(f.exact);
    if (mapping != Mapping::opencl) whole.vectorize(rc[0]);
}

// Split K: the accumulators of each (output tile, split) are a kernel of their own, each block storing its
// registers into the f32 workspace `partial` (4 consecutive floats per lane and instruction tile, unguarded: the
// workspace holds whole tiles); the output's kernel sums the splits in its epilogue. Returns where acc is computed.
LoopLevel tile_loop(GemmFuncs &f, const GemmKnobs &kn, Mapping mapping) {
    if (kn.split_k <= 1) return LoopLevel(f.output, f.stage_c ? f.rs[2] : f.rc[7]);
    Func p = f.partial;
    p.compute_root()
        .bound(f.q, 0, 4)
        .bound(f.lane, 0, 32)
        .bound(f.nt, 0, gemm_tiling(kn).nt_count())
        .bound(f.mt, 0, gemm_tiling(kn).mt_count())
        .bound(f.wn, 0, kn.warps_n)
        .bound(f.wm, 0, kn.warps_m)
        .bound(f.ks, 0, kn.split_k)
        .reorder(f.q, f.nt, f.mt, f.lane, f.wn, f.wm, f.bn, f.bm, f.ks)
        .unroll(f.q)
        .unroll(f.nt)
        .unroll(f.mt);
    if (mapping == Mapping::cuda) p.gpu_lanes(f.lane).gpu_threads(f.wn, f.wm).gpu_blocks(f.bn, f.bm, f.ks);
    else if (mapping == Mapping::opencl) p.gpu_threads(f.lane, f.wn, f.wm).gpu_blocks(f.bn, f.bm, f.ks);
    else p.fuse(f.bm, f.ks, Var("bm_ks")).parallel(Var("bm_ks"));
    p.specialize(f.exact);  // whole tiles: panels without clamps or zero fill, as the output's
    return LoopLevel(p, f.bn);
}

// Per block: for each K step, the A and B panels loaded into shared memory by every thread (16-byte
// vectors), a barrier, then each warp's instruction tiles from ldmatrix fragments into mma.sync on
// accumulators that stay in registers (schedules/mma_lowering.h), a barrier; then the epilogue from the
// registers. ptxas -arch=sm_90 (CUDA 13.0), variant a (128 x 128 block tile, 4 warps of 64 x 64, K steps of
// 32; tests/tensor_core_sass.py): 214 registers, no spill, a K loop of 128 instructions per K step: 64
// HMMA.16816.F32, 16 LDSM.16.M88.4, 16 LDG.E.64, 8 STS.128, 2 BAR. On the H200 the K steps of 64 are faster (269 of
// 600 TFLOP/s at 4096^3, f16; bench/results/h200/tensor-cores/): one panel stage per K step leaves the loads exposed.
void schedule_gemm_cuda(GemmFuncs &f, const GemmKnobs &kn) {
    const GemmTiling t = gemm_tiling(kn);
    map_output(f, kn, Mapping::cuda);
    Func acc = f.acc;
    acc.compute_at(tile_loop(f, kn, Mapping::cuda)).store_in(MemoryType::Register);
    acc.bound(f.q, 0, 4)
        .bound(f.lane, 0, 32)
        .bound(f.nt, 0, t.nt_count())
        .bound(f.mt, 0, t.mt_count())
        .bound(f.wn, 0, kn.warps_n)
        .bound(f.wm, 0, kn.warps_m);
    acc.reorder(f.q, f.nt, f.mt, f.lane, f.wn, f.wm, f.bn, f.bm)
        .unroll(f.q)
        .unroll(f.nt)
        .unroll(f.mt)
        .gpu_lanes(f.lane)
        .gpu_threads(f.wn, f.wm);
    RVar rki = f.rk.x, rko = f.rk.y;
    acc.update()
        .reorder(f.q, f.nt, f.mt, rki, f.lane, f.wn, f.wm, rko, f.bn, f.bm)
        .unroll(f.q)
        .unroll(f.nt)
        .unroll(f.mt)
        .unroll(rki)
        .gpu_lanes(f.lane)
        .gpu_threads(f.wn, f.wm);

    // Panels: each K step's A and B rows in shared memory, 16-byte vectors spread over all threads, rows
    // padded by `pad` elements (8: the 8 row addresses of an ldmatrix phase fall in distinct banks).
    // wgmma's core-matrix panels are dense (8 x 8-element core matrices; no padding: the tensor cores read each
    // core matrix's 128 contiguous bytes at once).
    for (Func panel : {f.a_panel, f.b_panel}) {
        panel.compute_at(acc, rko).store_in(MemoryType::GPUShared).bound(panel.args()[0], 0, 8);
        if (f.wgmma) bound_core_matrices(panel, f);
        else panel.align_storage(panel.args()[1], (kn.k_step + kn.pad) / 8);
        panel.vectorize(panel.args()[0]);
        panel.unroll(spread_over_block(panel, kn, panel_layout(f)));
    }
    // One loop nest for both panels: a barrier only after both (Halide puts one between any two stages at
    // block level, which made B's loads wait for A's stores: two load latencies per K step instead of one).
    f.b_panel.compute_with(f.a_panel, Var("tx"));
    // The epilogue in registers, one 16-row slice of the warp tile at a time (all 128 values at once held
    // 128 more registers and spilled), branching once on no activation, piecewise-linear or smooth (so none
    // computes nothing past the bias, relu no exponential). Bounded to the slice's whole registers: a region trimmed
    // by a partial tile's store predicate has no constant size, and Halide then allocates it on the device heap (a
    // malloc a call, the values through global memory). H100, gemm 25088 x 1024 x 256 f16 (128 x 128 tiles of 2 x 2
    // warps, no activation): the epilogue 36% of the kernel's time, the panels' loads 36%, the mma 26%
    // (bench/results/h100/gemm-epilogue/, run 2).
    Func epi = f.epilogue;
    epi.compute_at(f.stage_c ? f.c_tile : f.output, f.rc[3]).bound(f.q, 0, 4).bound(f.nt, 0, t.nt_count());
    for (Var v : epi.args()) epi.unroll(v);
    if (!Internal::as_const_int(f.activation)) {
        epi.specialize(f.activation == int(Activation::none));
        epi.specialize(smooth_activation(f.activation));
    }
    // wgmma: no fragments, the tensor cores read the panels. ptxas -arch=sm_90a (CUDA 13.0), gemm_wg_f16_cuda (a
    // 128 x 128 block of two warpgroups, K steps of 64, swizzled): 138 registers, no spill, a K loop of 90
    // instructions a step (whole tiles): one WARPGROUP.ARRIVE, 4 HGMMA.64x128x16 back to back, one DEPBAR, 16 LDG,
    // 8 STS. On the H100 at 4096^3 f16 it runs 0.696 ms, and on a 3-stage ring (gemm_wgt_f16) 0.318 ms, 1.38x
    // mma.sync's best tiling (bench/results/h100/wgmma).
    if (f.wgmma) return;
    // Fragments: per lane, in registers, loaded at each K step of 16.
    f.a_frag.compute_at(acc, rki).unroll(f.r).unroll(f.mt);
    if (f.window_n > 0) f.a_frag.unroll(f.win);
    f.b_frag.compute_at(acc, rki).unroll(f.r).unroll(f.np);
}

// The emulated instructions read other lanes' registers, so fragments and accumulators live where every
// lane of a block can read them: shared memory on OpenCL, the block's own arrays on the CPU. The loop
// structure is the CUDA one: panels per K step, fragments per K step of 16, one block per output tile.
void schedule_emulated(GemmFuncs &f, const GemmKnobs &kn, bool gpu) {
    map_output(f, kn, gpu ? Mapping::opencl : Mapping::cpu);
    Func acc = f.acc;
    const MemoryType block_memory = gpu ? MemoryType::GPUShared : MemoryType::Auto;
    const LoopLevel tile = tile_loop(f, kn, gpu ? Mapping::opencl : Mapping::cpu);
    acc.compute_at(tile).store_in(block_memory);
    acc.bound(f.q, 0, 4)
        .bound(f.lane, 0, 32)
        .bound(f.nt, 0, gemm_tiling(kn).nt_count())
        .bound(f.mt, 0, gemm_tiling(kn).mt_count())
        .bound(f.wn, 0, kn.warps_n)
        .bound(f.wm, 0, kn.warps_m);
    RVar rki = f.rk.x, rko = f.rk.y;
    acc.update().reorder(f.q, f.nt, f.mt, f.lane, f.wn, f.wm, rki, rko, f.bn, f.bm);
    if (gpu) {
        acc.gpu_threads(f.lane, f.wn, f.wm);
        acc.update().gpu_threads(f.lane, f.wn, f.wm);
    }
    const bool pipelined = f.prefetch || f.stages > 1;
    if (pipelined && gpu)
        throw CompileError("gemm: prefetch = 1 and stages > 1 are for CUDA and the CPU (OpenCL's emulation keeps "
                           "fragments per panel)");
    for (Func panel : {f.a_panel, f.b_panel}) {
        panel.compute_at(acc, rko).store_in(block_memory).bound(panel.args()[0], 0, 8);
        if (f.wgmma) bound_core_matrices(panel, f);
        // Prefetching (schedules/panel_prefetch.h) stores the next K step's panels after this step has read its
        // own: storage that outlives the step (here the whole K of the block's rows: Halide does not fold it).
        if (f.prefetch) panel.store_at(tile);
        // A ring of stages keeps one K step's panels per copy, as on CUDA: the panel allocated inside the K loop,
        // the pass lifts it out and makes the copies.
        if (gpu) spread_over_block(panel, kn, panel_layout(f));
    }
    // Fragments of the whole panel at once: with one K step of 16 at a time, Halide 21 (FuseGPUThreadLoops,
    // shared-allocation liveness by barrier stage, blind to the K-step loop's second iteration) gave the
    // B fragments the A panel's shared memory while the A panel was still to be read. Pipelining (CPU only)
    // needs both panels' loads ahead of every fragment, so there they are per K step of 16, as on CUDA.
    for (Func frag : {f.a_frag, f.b_frag}) {
        if (f.wgmma) break;  // none: the emulated wgmma reads the panels
        frag.compute_at(acc, pipelined ? rki : rko).store_in(block_memory);
        if (gpu) {
            Var r = frag.args()[0], l = frag.args()[1], t3 = frag.args()[2], w = frag.args()[3], kt = frag.args()[5];
            frag.reorder(r, t3, kt, l, w).gpu_threads(l, w);
        }
    }
}
}  // namespace

void set_gemm_pipelining(GemmFuncs &f, const GemmKnobs &kn) {
    // A K loop of one step (a static K within one panel) has no next step: Halide drops the loop, and the
    // knobs make the same kernel as prefetch = 0, stages = 1.
    const bool one_step = is_const_one(simplify(f.rk.y.extent()));
    f.prefetch = kn.prefetch != 0 && !one_step;
    f.stages = one_step ? 1 : kn.stages;
}

void schedule_gemm(GemmFuncs &f, const GemmKnobs &kn, const Target &target) {
    set_gemm_pipelining(f, kn);
    if (f.window_n > 0) {
        // A grouped convolution's windows: a warp's and a block's columns cover whole windows or lie in one
        // (gemm_windows_error), so the fragments' and the panels' window counts are constants (shared memory and
        // registers need them).
        if (const std::string why = gemm_windows_error(kn, f.window_n); !why.empty()) throw CompileError(why);
        const GemmTiling t = gemm_tiling(kn);
        const int per_warp = gemm_windows_in(t.warp_n, f.window_n),
                  per_block = gemm_windows_in(t.block_n(), f.window_n);
        f.a_panel.bound_extent(f.win, per_block);
        // CUDA: a warp's fragments; emulated: the block's (every warp's, at once).
        f.a_frag.bound_extent(f.win, target.has_feature(Target::CUDA) ? per_warp : per_block);
    }
    if (target.has_feature(Target::CUDA)) schedule_gemm_cuda(f, kn);
    else schedule_emulated(f, kn, target.has_feature(Target::OpenCL));
}

void add_gemm_lowering(Pipeline p, const Target &target, const std::string &kernel,
                       const std::vector<GemmFuncs> &gemms) {
    std::vector<PanelLoop> prefetched, staged;
    for (const GemmFuncs &g : gemms) {
        const PanelLoop loop{g.acc.name() + ".s1." + g.rk.y.name(), {g.a_panel.name(), g.b_panel.name()}, g.stages};
        if (g.prefetch) prefetched.push_back(loop);
        if (g.stages > 1) staged.push_back(loop);
    }
    // Before the mma pass: it then sees the K loop as it will run.
    if (!prefetched.empty()) p.add_custom_lowering_pass(make_panel_prefetch_pass(kernel, prefetched));
    if (!staged.empty())
        p.add_custom_lowering_pass(make_panel_pipeline_pass(kernel, staged, target.has_feature(Target::CUDA)));
    if (!target.has_feature(Target::CUDA) || gemms.empty()) return;
    std::vector<std::string> accumulators;
    for (const GemmFuncs &g : gemms) accumulators.push_back(g.acc.name());
    p.add_custom_lowering_pass(make_mma_lowering_pass(kernel, accumulators));
}

}  // namespace blockfuse
