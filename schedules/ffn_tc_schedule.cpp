#include "schedules/ffn_tc_schedule.h"
#include "schedules/mma_lowering.h"
#include "schedules/panel_prefetch.h"

namespace blockfuse {
using namespace Halide;

namespace {
// A panel's (ke, kg, row) spread over every thread of the block, one 16-byte group per thread and step.
void spread_over_block(Func panel, const FfnTcTiling &t, bool gpu, bool unrolled = true) {
    Var ke = panel.args()[0], kg = panel.args()[1], row = panel.args()[2], tt("tt"), tx("tx"), ty("ty");
    panel.bound(ke, 0, 8).vectorize(ke);
    if (!gpu) return;
    panel.fuse(kg, row, tt)
        .split(tt, tt, tx, 32)
        .split(tt, tt, ty, t.warps)
        .reorder(ke, tt, tx, ty)
        .gpu_threads(tx, ty);
    if (unrolled) panel.unroll(tt);
}

template <class F>
void bound_fragment_space(F &&func, const FfnTcFuncs &f, const Var &tile, int tiles, const FfnTcTiling &t) {
    func.bound(f.q, 0, 4)
        .bound(f.lane, 0, 32)
        .bound(tile, 0, tiles)
        .bound(f.mt, 0, t.mt_count())
        .bound(f.w, 0, t.warps);
}
}  // namespace

// Per thread block (warps x warp_m pixels, every output channel): X's rows in shared memory once; then per
// hidden chunk the chunk's rows of U and columns of V in shared memory (one barrier for both), each warp's
// expand from ldmatrix fragments into hidden accumulators in registers, phi(. + a) packed into A fragments in
// the same registers' lanes, the project's mma into the output accumulators (registers, the whole reduction);
// then the store from the registers. The hidden activations are never stored anywhere.
void schedule_ffn_tc(FfnTcFuncs &f, const FfnTcShape &s, const FfnTcTiling &t, int pad, const Target &target) {
    const bool cuda = target.has_feature(Target::CUDA);
    if (!cuda && target.has_gpu_feature())
        throw CompileError("strategy fused_tc runs on CUDA, and emulated on the CPU; not on this GPU target");
    const int NT = s.k / mma::kTileN;
    const int HT = t.chunk / mma::kTileN;
    const RDom rc = f.rc;
    const RVar hk = f.rk_project.x, hc = f.rk_project.y, kt = f.rk_expand.x;
    Func acc = f.acc, hidden = f.hidden_acc;
    Stage out = f.output.update();
    out.allow_race_conditions().unroll(rc[0]).unroll(rc[1]).unroll(rc[2]).unroll(rc[3]);
    if (cuda) out.gpu_lanes(rc[4]).gpu_threads(rc[5]).gpu_blocks(rc[6]);
    else out.parallel(rc[6]);
    // Whole thread blocks: the register pairs stored unguarded as 2-element vectors.
    out.specialize(f.exact).vectorize(rc[0]);

    const LoopLevel block(f.output, rc[6]);
    const MemoryType warp_memory = cuda ? MemoryType::Register : MemoryType::Auto;
    acc.compute_at(block).store_in(warp_memory);
    bound_fragment_space(acc, f, f.nt, NT, t);
    hidden.compute_at(acc, hc).store_in(warp_memory);
    bound_fragment_space(hidden, f, f.ht, HT, t);
    for (Func panel : {f.x_panel, f.u_panel, f.v_panel})
        panel.store_in(cuda ? MemoryType::GPUShared : MemoryType::Auto);
    f.x_panel.compute_at(block).align_storage(f.x_panel.args()[1], (s.c + pad) / 8);
    // ConvFirst: each thread's 8 channels of one pixel's grouped conv in registers, over the window's taps (loops;
    // unrolled they spill at c = 256): per tap the group's 8 input channels as one 16-byte load, the 8 channels'
    // weights of each input channel as another. On the H200 ConvFirst c=256 N=128 takes 0.260 ms, its FFN alone
    // 0.155: the grouped layer, on CUDA cores and before the block's mma, is the difference.
    const bool grouped = f.x_conv.defined();
    spread_over_block(f.x_panel, t, cuda, !grouped);
    if (grouped) {
        const RDom &rg = f.rk_group;
        Var ke = f.x_conv.args()[0], r = f.x_tap.args()[0];
        f.x_conv.compute_at(f.x_panel, cuda ? Var("tt") : f.x_panel.args()[1])
            .store_in(cuda ? MemoryType::Register : MemoryType::Auto)
            .bound_extent(ke, 8)
            .vectorize(ke);
        f.x_conv.update().reorder(ke, rg.x, rg.y, rg.z).vectorize(ke);
        if (cuda) f.x_conv.update().unroll(rg.x);
        f.x_tap.compute_at(f.x_conv, rg.y).store_in(cuda ? MemoryType::Register : MemoryType::Auto).bound_extent(r, 8);
        f.x_tap.vectorize(r);
    }
    for (Func panel : {f.u_panel, f.v_panel}) {
        panel.compute_at(acc, hc);
        spread_over_block(panel, t, cuda);
    }
    f.u_panel.align_storage(f.u_panel.args()[1], (s.c + pad) / 8);
    f.v_panel.align_storage(f.v_panel.args()[1], (t.chunk + pad) / 8);
    // One loop nest for both chunk panels (CUDA: one barrier after both); on the CPU side by side, both before the
    // chunk's mma (the prefetch needs the loads to lead the chunk loop).
    f.v_panel.compute_with(f.u_panel, cuda ? Var("tx") : Var::outermost());
    // Prefetching (schedules/panel_prefetch.h) stores the next chunk's panels after this chunk has read its own: the
    // chunk loop then holds no storage of its own. The hidden accumulators live across it; so do the panels on the
    // CPU (there for every chunk: Halide does not fold them), while CUDA's shared panels are the kernel's already
    // (one chunk's: stored at block level they would be every chunk's, past the shared memory).
    if (t.prefetch) {
        hidden.store_at(block);
        if (!cuda)
            for (Func g : {f.u_panel, f.v_panel}) g.store_at(block);
    }

    if (!cuda) {
        // The emulated instructions read other lanes' registers: fragments and accumulators are the block's
        // arrays, each fragment computed for every lane before it is read (per K step, outside the lane loops).
        acc.update().reorder(f.q, f.nt, f.mt, f.lane, f.w, hk, hc, f.bm);
        hidden.update().reorder(f.q, f.ht, f.mt, f.lane, f.w, kt, f.bm, f.hc);
        f.x_frag.compute_at(hidden, kt);
        f.u_frag.compute_at(hidden, kt);
        f.hidden_frag.compute_at(acc, hk);
        f.v_frag.compute_at(acc, hk);
        return;
    }
    // CUDA: lanes onto gpu_lanes, warps onto threads; every register index constant (unrolled), so the
    // accumulators stay in registers (schedules/mma_lowering.h drops the warp from their index).
    acc.reorder(f.q, f.nt, f.mt, f.lane, f.w, f.bm)
        .unroll(f.q)
        .unroll(f.nt)
        .unroll(f.mt)
        .gpu_lanes(f.lane)
        .gpu_threads(f.w);
    // The project: per hidden K step, the output n-tiles a pair at a time (one V ldmatrix.x4 per pair and step).
    Var npo("npo"), nti("nti");
    acc.update()
        .split(f.nt, npo, nti, 2)
        .reorder(f.q, nti, f.mt, npo, hk, f.lane, f.w, hc, f.bm)
        .unroll(f.q)
        .unroll(nti)
        .unroll(f.mt)
        .unroll(npo)
        .unroll(hk)
        .gpu_lanes(f.lane)
        .gpu_threads(f.w);
    hidden.reorder(f.q, f.ht, f.mt, f.lane, f.w, f.bm, f.hc)
        .unroll(f.q)
        .unroll(f.ht)
        .unroll(f.mt)
        .gpu_lanes(f.lane)
        .gpu_threads(f.w);
    hidden.update()
        .reorder(f.q, f.ht, f.mt, kt, f.lane, f.w, f.bm, f.hc)
        .unroll(f.q)
        .unroll(f.ht)
        .unroll(f.mt)
        .unroll(kt)
        .gpu_lanes(f.lane)
        .gpu_threads(f.w);
    f.x_frag.compute_at(hidden, kt).unroll(f.r).unroll(f.mt);
    f.u_frag.compute_at(hidden, kt).unroll(f.j).unroll(f.ep);
    f.hidden_frag.compute_at(acc, hk).unroll(f.r).unroll(f.mt);
    f.v_frag.compute_at(acc, npo).unroll(f.j);
}

void add_ffn_tc_lowering(Pipeline p, const Target &target, const std::string &kernel, const FfnTcFuncs &f,
                         const FfnTcTiling &t) {
    // Before the mma pass: it then sees the chunk loop as it will run.
    if (t.prefetch)
        p.add_custom_lowering_pass(make_panel_prefetch_pass(
            kernel, {{f.acc.name() + ".s1." + f.rk_project.y.name(), {f.u_panel.name(), f.v_panel.name()}}}));
    if (target.has_feature(Target::CUDA))
        p.add_custom_lowering_pass(make_mma_lowering_pass(kernel, {f.acc.name(), f.hidden_acc.name()}));
}

}  // namespace blockfuse
