#include "schedules/fused_tc_schedule.h"
#include "schedules/gpu_mapping.h"
#include "schedules/mma_lowering.h"
#include "schedules/panel_prefetch.h"

namespace blockfuse {
using namespace Halide;

namespace {
// A panel's (ke, kg, row...) spread over every thread of the block, one 8-element group per thread and step.
void spread_over_block(Func panel, int warps, bool gpu, bool unrolled = true) {
    const std::vector<Var> a = panel.args();
    Var ke = a[0], tt = a[1], tx("tx"), ty("ty");
    panel.bound(ke, 0, 8).vectorize(ke);
    if (!gpu) return;
    for (size_t i = 2; i < a.size(); ++i) {
        Var fused("tt" + std::to_string(i));
        panel.fuse(tt, a[i], fused);
        tt = fused;
    }
    Var tto("tt");
    panel.split(tt, tto, tx, 32).split(tto, tto, ty, warps).reorder(ke, tto, tx, ty).gpu_threads(tx, ty);
    if (unrolled) panel.unroll(tto);
}

// A per-pixel Func's stages (pixel m its last argument, channel lanes before it vectorized) a pixel a thread.
void pixel_per_thread(Func f, bool gpu) {
    const std::vector<Var> a = f.args();
    Var px = a.back(), pw("pw"), pl("pl");
    std::vector<Stage> stages{Stage(f)};
    if (f.has_update_definition()) stages.push_back(f.update());
    for (Stage st : stages) {
        if (a.size() > 1) st.vectorize(a[0]);
        if (gpu) st.split(px, pw, pl, 32, TailStrategy::GuardWithIf).gpu_threads(pl, pw);
    }
}

// A stage over one chunk's channels (ke, kg: 8 channels a group) a channel a thread, on the thread block's 32 x warps
// threads as every other stage of the kernel (the mma lowering takes the block's thread rows for its warps).
void channel_per_thread(Stage st, const Var &ke, const Var &kg, int warps) {
    Var c("c"), co("co"), tx("tx"), ty("ty");
    st.fuse(ke, kg, c)
        .split(c, co, tx, 32, TailStrategy::GuardWithIf)
        .split(co, co, ty, warps, TailStrategy::GuardWithIf)
        .gpu_threads(tx, ty);
}

// An accumulator's fragment space (q, lane, tile, mt, w) bound: the registers each lane holds.
template <class Funcs>
void bound_fragment_space(Func func, const Funcs &f, const Var &tile, int tiles, int mts, int warps) {
    func.bound(f.q, 0, 4).bound(f.lane, 0, 32).bound(tile, 0, tiles).bound(f.mt, 0, mts).bound(f.w, 0, warps);
}

void require_cuda_or_cpu(const Target &target) {
    if (!target.has_feature(Target::CUDA) && target.has_gpu_feature())
        throw CompileError("strategy fused_tc runs on CUDA, and emulated on the CPU; not on this GPU target");
}

// The store from the output accumulators' registers (each lane its own, warps on threads, one thread block per
// block of rows) and where the two accumulators live: the output's per block, the hidden chunk's per chunk, in
// registers on CUDA. acc_mts / hidden_mts: m-tiles a warp of the project and the expand. Returns the block level.
template <class Funcs>
LoopLevel schedule_accumulators(Funcs &f, int output_tiles, int hidden_tiles, int acc_mts, int hidden_mts, int warps,
                                bool cuda) {
    const RDom rc = f.rc;
    Stage out = f.output.update();
    out.allow_race_conditions().unroll(rc[0]).unroll(rc[1]).unroll(rc[2]).unroll(rc[3]);
    if (cuda) out.gpu_lanes(rc[4]).gpu_threads(rc[5]).gpu_blocks(rc[6]);
    else out.parallel(rc[6]);
    const LoopLevel block(f.output, rc[6]);
    const MemoryType warp_memory = cuda ? MemoryType::Register : MemoryType::Auto;
    f.acc.compute_at(block).store_in(warp_memory);
    bound_fragment_space(f.acc, f, f.nt, output_tiles, acc_mts, warps);
    f.hidden_acc.compute_at(f.acc, f.rk_project.y).store_in(warp_memory);
    bound_fragment_space(f.hidden_acc, f, f.ht, hidden_tiles, hidden_mts, warps);
    return block;
}

// The expand's GEMM in fragment space (hidden_acc over K steps kt of the input, per hidden chunk), after its
// compute_at.
template <class Funcs>
void schedule_expand_gemm(Funcs &f, bool cuda) {
    const RVar kt = f.rk_expand.x;
    Func hidden = f.hidden_acc;
    if (!cuda) {
        // The emulated instructions read other lanes' registers: fragments and accumulators are the block's
        // arrays, each fragment computed for every lane before it is read (per K step, outside the lane loops).
        hidden.update().reorder(f.q, f.ht, f.mt, f.lane, f.w, kt, f.bm, f.hc);
        f.x_frag.compute_at(hidden, kt);
        f.u_frag.compute_at(hidden, kt);
        return;
    }
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
}

// The two GEMMs of a fused_tc block in fragment space, after their accumulators' compute_at: the expand (above) and
// the project (acc over K steps hk of each chunk hc); project_a is the project's A fragments (the FFN's hidden_frag,
// MBConv's p_frag).
template <class Funcs>
void schedule_two_gemms(Funcs &f, Func project_a, bool cuda) {
    const RVar hk = f.rk_project.x, hc = f.rk_project.y;
    Func acc = f.acc;
    schedule_expand_gemm(f, cuda);
    if (!cuda) {
        acc.update().reorder(f.q, f.nt, f.mt, f.lane, f.w, hk, hc, f.bm);
        project_a.compute_at(acc, hk);
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
    project_a.compute_at(acc, hk).unroll(f.r).unroll(f.mt);
    f.v_frag.compute_at(acc, npo).unroll(f.j);
}

// MBConv's per-chunk shared rows, computed at `chunk` (the input halo's rows where the caller put them): the chunk's
// rows of U, the halo's hidden rows (each lane's expand registers scattered, a pair of channels of one pixel per
// register pair), the depthwise rows (a thread's 8 channels of one pixel summed in registers over the window,
// unrolled).
void schedule_mbconv_tc_chunk(MbconvTcFuncs &f, const MbconvTcGeometry &g, const LoopLevel &chunk, bool cuda) {
    const MemoryType shared = cuda ? MemoryType::GPUShared : MemoryType::Auto;
    const int kp = (g.k_padded() + MbconvTcGeometry::kPad) / 8, cp = (g.chunk + MbconvTcGeometry::kPad) / 8;
    const RDom &rh = f.rh;
    f.x_panel.store_in(shared).align_storage(f.x_panel.args()[1], kp);
    spread_over_block(f.x_panel, g.warps, cuda);
    f.u_panel.compute_at(chunk).store_in(shared).align_storage(f.u_panel.args()[1], kp);
    spread_over_block(f.u_panel, g.warps, cuda);
    f.hidden.compute_at(chunk).store_in(shared).align_storage(f.hidden.args()[1], cp);
    Stage scatter = f.hidden.update();
    scatter.allow_race_conditions().unroll(rh[0]).unroll(rh[1]).unroll(rh[2]).unroll(rh[3]);
    if (cuda) scatter.gpu_lanes(rh[4]).gpu_threads(rh[5]);
    f.dw_panel.compute_at(chunk).store_in(shared).align_storage(f.dw_panel.args()[1], cp);
    spread_over_block(f.dw_panel, g.warps, cuda);
    Var ke = f.dw_sum.args()[0];
    f.dw_sum.compute_at(f.dw_panel, cuda ? Var("tt") : f.dw_panel.args()[1])
        .store_in(cuda ? MemoryType::Register : MemoryType::Auto)
        .bound_extent(ke, 8)
        .vectorize(ke);
    f.dw_sum.update().reorder(ke, f.rdw.x, f.rdw.y).vectorize(ke).unroll(f.rdw.x).unroll(f.rdw.y);
}

// ConvFirst's grouped layer on mma (knob tc_grouped), before the FFN's chunk loop: each lane, group after group (a
// loop), holds its m-tiles' accumulators of the group's 8 channels in registers over the window's K steps (A and B
// registers read from the input and the weights, every index constant), then stores them rounded into X's shared
// rows. Emulated: a warp's fragments and accumulators of every lane and group at once, per K step.
// On the H200 a tuner round's best tilings with it beat those with the CUDA-core layer by 1.03-1.09x on the four
// ConvFirst rows of the blocks suite (the A gathers, 2-byte loads, cost most of what the mma saves).
void schedule_grouped_mma(FfnTcFuncs &f, bool cuda) {
    const RDom &rx = f.rx;
    const RVar ks = f.rk_gx.x;
    Stage scatter = f.x_panel.update();
    scatter.allow_race_conditions().unroll(rx[0]).unroll(rx[1]).unroll(rx[2]);
    if (!cuda) {  // per warp: every group's accumulators, K step after K step
        f.gx_acc.compute_at(f.x_panel, rx[5]);
        f.gx_acc.update().reorder(f.q, f.mt, f.lane, f.gx_acc.args()[5], ks);
        f.gx_a.compute_at(f.gx_acc, ks);
        f.gx_b.compute_at(f.gx_acc, ks);
        return;
    }
    scatter.gpu_lanes(rx[4]).gpu_threads(rx[5]);
    f.gx_acc.compute_at(f.x_panel, rx[3]).store_in(MemoryType::Register).unroll(f.q).unroll(f.mt);
    f.gx_acc.update().reorder(f.q, f.mt, ks).unroll(f.q).unroll(f.mt).unroll(ks);
    f.gx_a.compute_at(f.gx_acc, ks).store_in(MemoryType::Register).unroll(f.r).unroll(f.mt);
    f.gx_b.compute_at(f.gx_acc, ks).store_in(MemoryType::Register).unroll(f.r);
}
}  // namespace

// Per thread block (warps x warp_m pixels, every output channel): X's rows in shared memory once; then per
// hidden chunk the chunk's rows of U and columns of V in shared memory (one barrier for both), each warp's
// expand from ldmatrix fragments into hidden accumulators in registers, phi(. + a) packed into A fragments in
// the same registers' lanes, the project's mma into the output accumulators (registers, the whole reduction);
// then the store from the registers. The hidden activations are never stored anywhere.
void schedule_ffn_tc(FfnTcFuncs &f, const FfnTcShape &s, const FfnTcTiling &t, int pad, const Target &target) {
    require_cuda_or_cpu(target);
    const bool cuda = target.has_feature(Target::CUDA);
    const RVar hc = f.rk_project.y;
    Func acc = f.acc, hidden = f.hidden_acc;
    const LoopLevel block =
        schedule_accumulators(f, s.k / mma::kTileN, t.chunk / mma::kTileN, t.mt_count(), t.mt_count(), t.warps, cuda);
    // Whole thread blocks: the register pairs stored unguarded.
    store_register_pairs(f.output.update().specialize(f.exact), f.rc[0], f.scalar_pairs);
    for (Func panel : {f.x_panel, f.u_panel, f.v_panel})
        panel.store_in(cuda ? MemoryType::GPUShared : MemoryType::Auto);
    f.x_panel.compute_at(block).align_storage(f.x_panel.args()[1], (s.expand_k() + pad) / 8);
    // ConvFirst: each thread's 8 channels of one pixel's grouped conv in registers, over the window's taps (loops;
    // unrolled they spill at c = 256): per tap the group's 8 input channels as one 16-byte load, the 8 channels'
    // weights of each input channel as another. On the H200 ConvFirst c=256 N=128 takes 0.260 ms, its FFN alone
    // 0.155: the grouped layer, on CUDA cores and before the block's mma, is the difference.
    // ConvNeXt: the same for the depthwise window (per tap one 16-byte load of 8 channels, their f32 weights from
    // shared memory, converted once per block), its sums into f32 shared rows padded by a channel group (a pixel's
    // row then starts 32 bytes on from the last one's: a thread a pixel reads them without bank conflicts); each
    // pixel's mean and variance by one thread over those rows, 8 lanes at a time; X's rows then normalized from them.
    const bool grouped = f.x_conv.defined(), normed = f.x_rows.defined();
    if (f.gx_acc.defined()) {
        schedule_grouped_mma(f, cuda);
    } else {
        spread_over_block(f.x_panel, t.warps, cuda, !grouped || normed);
    }
    if (grouped) {
        const RDom &rg = f.rk_group;
        Func rows = normed ? f.x_rows : f.x_panel;  // where each thread's sums go
        if (normed) {
            const MemoryType shared = cuda ? MemoryType::GPUShared : MemoryType::Auto;
            f.x_rows.compute_at(block).store_in(shared).bound_storage(f.x_rows.args()[1], s.c / 8 + 1);
            spread_over_block(f.x_rows, t.warps, cuda, false);
            f.w_f32.compute_at(block).store_in(shared);
            spread_over_block(f.w_f32, t.warps, cuda, false);
            for (Func stat : {f.ln_sum, f.ln_mean, f.ln_sq, f.ln_rstd}) {
                stat.compute_at(block).store_in(shared);
                pixel_per_thread(stat, cuda);
            }
        }
        Var ke = f.x_conv.args()[0], r = f.x_tap.args()[0];
        f.x_conv.compute_at(rows, cuda ? Var("tt") : rows.args()[1])
            .store_in(cuda ? MemoryType::Register : MemoryType::Auto)
            .bound_extent(ke, 8)
            .vectorize(ke);
        std::vector<VarOrRVar> order{ke};  // the window's taps inside the 8 channels
        for (int i = 0; i < rg.dimensions(); ++i) order.push_back(rg[i]);
        f.x_conv.update().reorder(order).vectorize(ke);
        if (cuda) f.x_conv.update().unroll(rg.x);
        if (!normed) {  // ConvFirst's taps per kx in registers (ConvNeXt's inlined: one vector of 8 channels)
            f.x_tap.compute_at(f.x_conv, rg.y)
                .store_in(cuda ? MemoryType::Register : MemoryType::Auto)
                .bound_extent(r, 8);
            f.x_tap.vectorize(r);
        }
    }
    for (Func panel : {f.u_panel, f.v_panel}) {
        panel.compute_at(acc, hc);
        spread_over_block(panel, t.warps, cuda);
    }
    f.u_panel.align_storage(f.u_panel.args()[1], (s.expand_k() + pad) / 8);
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

    schedule_two_gemms(f, f.hidden_frag, cuda);
}

// MBConv, per thread block (a tile of output pixels, every output channel): the halo's input rows in shared memory
// (once, or per chunk without the residual: below); then per hidden chunk the chunk's rows of U and columns of P (one barrier for both), each warp's expand
// over its m-tiles of the halo into registers, scattered as phi(. + a) into the halo's hidden rows (shared, a
// barrier), the depthwise window over them on CUDA cores, 8 channels of one pixel a thread, into the project's A
// rows (shared, a barrier), the project's mma into the output accumulators (registers, the whole reduction); then
// the store from the registers.
void schedule_mbconv_tc(MbconvTcFuncs &f, const MbconvTcGeometry &g, bool residual, const Target &target) {
    require_cuda_or_cpu(target);
    const bool cuda = target.has_feature(Target::CUDA);
    const RVar hc = f.rk_project.y;
    Func acc = f.acc;
    const LoopLevel block = schedule_accumulators(f, g.n_padded() / mma::kTileN, g.chunk / mma::kTileN, g.project_mt(),
                                                  g.expand_mt(), g.warps, cuda);
    // Register pairs stored unguarded (a pair is all in or all out of the image and of C').
    store_register_pairs(f.output.update(), f.rc[0], f.scalar_pairs);
    const MemoryType shared = cuda ? MemoryType::GPUShared : MemoryType::Auto;
    const int cp = (g.chunk + MbconvTcGeometry::kPad) / 8;
    // The halo's input rows: once per block where the residual reads them after the chunk loop. Without a read
    // after the loop they are reloaded per chunk: Halide 21 (FuseGPUThreadLoops) shares shared memory between
    // allocations by their barrier stages in program order, blind to the chunk loop's back edge, and would lay a
    // chunk's hidden rows over input rows the next chunk still reads.
    f.x_panel.compute_at(residual ? block : LoopLevel(acc, hc));
    f.v_panel.compute_at(acc, hc).store_in(shared);
    spread_over_block(f.v_panel, g.warps, cuda);
    f.v_panel.align_storage(f.v_panel.args()[1], cp);
    schedule_mbconv_tc_chunk(f, g, LoopLevel(acc, hc), cuda);
    f.v_panel.compute_with(f.u_panel, cuda ? Var("tx") : Var::outermost());
    schedule_two_gemms(f, f.p_frag, cuda);
}

void schedule_mbconv_tc_se(MbconvTcFuncs &f, const MbconvTcGeometry &g, Func sum, const SEFuncs &se,
                           const Target &target) {
    require_cuda_or_cpu(target);
    const bool cuda = target.has_feature(Target::CUDA);
    // The pooling kernel: a thread block a tile, per hidden chunk the expand's mma over the halo, the depthwise rows
    // (as the block's kernel computes them), then each of the chunk's channels summed over the tile's pixels by a
    // thread; the sums stored, a block's chunk after chunk. On the H200 the SE block on fused_tc runs 2x our layer by
    // layer (c=24 56x56 N=128: 0.86 ms tuned), 4.7x the block without SE where about 2x was expected; not profiled.
    Func part = f.tile_sum.in();             // the sums as stored, read by the mean
    const std::vector<Var> a = part.args();  // (ke, kg, bm, hc)
    part.compute_root().reorder(a[0], a[1], a[3], a[2]);
    if (cuda) {
        part.gpu_blocks(a[2]);
        channel_per_thread(part, a[0], a[1], g.warps);
    } else {
        part.parallel(a[2]);
    }
    const LoopLevel chunk(part, a[3]);
    // The depthwise rows of the tile's pixels in whole m-tiles (past the tile they repeat its last pixel, as the
    // block's kernel computes them): at least 32 values of a thread block's 32 x warps split, which shifted inwards
    // past a smaller panel's start would read channels below 0.
    f.dw_panel.bound(f.dw_panel.args()[2], 0, 16 * MbconvTcGeometry::ceil_div(g.tile_pixels(), 16));
    f.x_panel.compute_at(chunk);
    schedule_mbconv_tc_chunk(f, g, chunk, cuda);
    f.tile_sum.compute_at(chunk).store_in(cuda ? MemoryType::GPUShared : MemoryType::Auto);
    if (cuda) {
        channel_per_thread(f.tile_sum, f.ke, f.kg, g.warps);
        channel_per_thread(f.tile_sum.update(), f.ke, f.kg, g.warps);
    }
    f.hidden_acc.compute_at(chunk).store_in(cuda ? MemoryType::Register : MemoryType::Auto);
    bound_fragment_space(f.hidden_acc, f, f.ht, g.chunk / mma::kTileN, g.expand_mt(), g.warps);
    schedule_expand_gemm(f, cuda);
    // The mean over the tiles of each image, the reduce and the gate: small kernels, a thread a channel and image.
    Var eo("eo"), ei("ei"), no("no"), ni("ni");
    for (Func fn : {sum, se.reduced, se.gate}) {
        fn.compute_root();
        const Var c = fn.args()[0], im = fn.args()[1];
        auto map = [&](Stage st) {
            if (cuda) st.gpu_tile(c, im, eo, no, ei, ni, 64, 1, TailStrategy::GuardWithIf);
            else st.parallel(im);
        };
        map(fn);
        if (fn.has_update_definition()) map(fn.update());
    }
}

void add_mbconv_tc_lowering(Pipeline p, const Target &target, const std::string &kernel,
                            const std::vector<MbconvTcFuncs> &blocks) {
    std::vector<std::string> striped;
    for (const MbconvTcFuncs &f : blocks) striped.insert(striped.end(), {f.acc.name(), f.hidden_acc.name()});
    if (target.has_feature(Target::CUDA)) p.add_custom_lowering_pass(make_mma_lowering_pass(kernel, striped));
}

void add_ffn_tc_lowering(Pipeline p, const Target &target, const std::string &kernel,
                         const std::vector<FfnTcFuncs> &blocks, const FfnTcTiling &t) {
    std::vector<PanelLoop> chunk_loops;
    std::vector<std::string> striped;
    for (const FfnTcFuncs &f : blocks) {
        chunk_loops.push_back({f.acc.name() + ".s1." + f.rk_project.y.name(), {f.u_panel.name(), f.v_panel.name()}});
        striped.insert(striped.end(), {f.acc.name(), f.hidden_acc.name()});
    }
    // Before the mma pass: it then sees the chunk loop as it will run.
    if (t.prefetch) p.add_custom_lowering_pass(make_panel_prefetch_pass(kernel, chunk_loops));
    if (target.has_feature(Target::CUDA)) p.add_custom_lowering_pass(make_mma_lowering_pass(kernel, striped));
}

}  // namespace blockfuse
