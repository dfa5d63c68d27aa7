#include "schedules/block_schedule.h"
#include "schedules/gemm_schedule.h"
#include "schedules/gpu_mapping.h"
#include <algorithm>

namespace blockfuse {
using namespace Halide;

namespace {
const TailStrategy guard = TailStrategy::GuardWithIf;

// LayerNorm between layers, layer by layer: statistics and normalization as their own kernels.
void layer_norm_own_kernels(NormFuncs nf, bool gpu) {
    for (Func st : {nf.mean, nf.rstd}) {
        st.compute_root();
        Var x = st.args()[0], y = st.args()[1], n = st.args()[2], yn("yn"), xo("xo"), xi("xi");
        if (gpu) {
            st.fuse(y, n, yn).gpu_tile(x, xo, xi, 32, guard).gpu_blocks(yn);
        } else {
            st.fuse(y, n, yn).parallel(yn);
        }
    }
    Func nm = nf.normed;
    Var c = nm.args()[0], x = nm.args()[1], y = nm.args()[2], n = nm.args()[3], yn("yn"), co("co"), ci("ci"), xo("xo"),
        xi("xi");
    nm.compute_root().fuse(y, n, yn);
    if (gpu) {  // threads along channels (coalesced) and pixels
        nm.gpu_tile(c, x, co, xo, ci, xi, 32, 4, guard).gpu_blocks(yn);
    } else {
        nm.parallel(yn).vectorize(c, 8, guard);
    }
}

// Squeeze-Excitation's gate inside a fused block's tile (`root` at `xo`): each tile sums its image's
// partial sums into the mean, then the reduce and gate layers (2 E R multiply-adds: a few thousand,
// against the tile's millions), into shared memory on the GPU, spread over the block's
// threads_x x threads_y threads. Recomputed per tile instead of a gate kernel between the partial
// sums and the block: the global mean costs one kernel boundary, not three.
void se_gate_in_tile(SEFuncs se, Func root, Var xo, int threads_x, int threads_y, bool gpu) {
    for (Func g : {se.pooled, se.reduced, se.gate}) {
        g.compute_at(root, xo);
        if (!gpu) continue;
        store_in_shared(g);
        spread_var_over_block(g, g.args()[0], threads_x, threads_y);
        if (g.has_update_definition()) spread_var_over_block(g.update(), g.args()[0], threads_x, threads_y);
    }
}

// Squeeze-Excitation layer by layer: the mean reads the stored layer (its own kernel), the gate its own kernel, the
// product fused into the next layer's read. GPU: a thread block per row of an image and 32 channels, each thread
// summing its channel along the row in registers (rowsum, the rfactor of the sum over rows) and adding that to the
// image's sums with one atomic add. (A thread per channel and image summing all of its pixels in turn left 640
// 32-thread blocks for MBConv c=24 56x56 N=128 and took 338 us on the H200 against a 28 us DRAM floor, report/dram/.)
void se_layer_by_layer(SEFuncs se, bool gpu) {
    Func pooled = se.pooled;
    Var e = pooled.args()[0], n = pooled.args()[1], eo("pe_o"), ei("pe_i");
    pooled.compute_root();
    if (gpu) {
        pooled.split(e, eo, ei, 32, guard).gpu_blocks(eo, n).gpu_threads(ei);
        Var row("se_row");
        Func rowsum = pooled.update().rfactor(se.r.y, row);  // rowsum(e, n, row); the update then sums the rows
        RVar ry(se.r.y.name());
        pooled.update()
            .atomic()
            .split(e, eo, ei, 32, guard)
            .reorder(ei, eo, ry, n)
            .gpu_blocks(eo, ry, n)
            .gpu_threads(ei);
        rowsum.compute_at(pooled, ei).store_in(MemoryType::Register);
        for (const Var &a : rowsum.args()) rowsum.bound_extent(a, 1);
    } else {
        pooled.update().reorder(e, se.r.x, se.r.y, n).vectorize(e, 8, guard).parallel(n);
    }
    Func gate = se.gate, reduced = se.reduced;
    for (Func g : {reduced, gate}) {
        g.compute_root();
        Var a = g.args()[0], b = g.args()[1], ao("sg_o"), ai("sg_i");
        if (gpu) g.split(a, ao, ai, 32, guard).gpu_blocks(ao, b).gpu_threads(ai);
    }
}

// Layer by layer: every layer its own kernel (GPU) / loop nest (CPU), through memory; only the
// trivial fusions (bias, folded BN, activation, residual) stay inside a layer, as Inductor does.
// The 1x1 layers take their own mapping (pointwise_gpu), so do the dense k x k ones (full_gpu); the
// depthwise and grouped ones layer_gpu.
// H200, f16, N=128 (bench/results/h200/report/): MBConv c=24 e=6 56x56 1.23 ms (default mapping);
// FFN c=256 e=4 0.97 ms and ConvFirst c=128/c=256 1.04-1.07 ms with the 1x1 layers at 8 channels x
// 4x2 pixels per thread and stage_channels ("sx"): 40-41% of FFMA, issue-bound (61% of the issued
// instructions are FFMA; the default mapping took 1.93 and 1.87-2.00 ms). Dense 3x3 layers on the conv2d
// general "c" mapping (full_*): FusedMBConv c=48 e=4 3.43 ms against 4.50; ConvNeXt's 7x7 depthwise on the
// flat mapping (layer_*, no spills): 2.68 ms against 3.34 (bench/results/h200/convnext-sd/). MBConv with the flat 1x1
// mappings in 32-thread blocks and the flat depthwise one ("sfyd", "sfqd"; bench/results/h200/mbconv-lbl-flat/): c=24
// 56x56 0.322 ms (1.212 on the default), c=16 0.601 (2.58 on "u"), c=40 0.255, c=80 0.205; 28-32% of FFMA.
// Layer by layer on the tensor cores (layer_by_layer_tc): the dense layers are implicit GEMMs
// (BlockFuncs::tensor_core) on the GEMM's schedule with their own tiling (tc<i>_), the others as above.
// H200, f16, N=128 (bench/results/h200/blocks-tc/): FFN c=256 e=4 0.170 ms (0.879 on the CUDA-core mappings),
// ConvFirst c=64 0.423 ms with its tuned record (1.208); MBConv c=24 0.368 against the CUDA cores' 0.320.
void layer_by_layer(BlockFuncs f, const BlockSpec &spec, const BlockKnobs &kn, const Target &target) {
    const bool gpu = target.has_gpu_feature();
    for (size_t i = 0; i < f.layers.size(); ++i) {
        Conv2dFuncs &L = f.layers[i];
        const LayerSpec &s = spec.layers[i];
        if (i + 1 < f.layers.size()) L.output.compute_root();
        if (f.tensor_core[i]) {
            schedule_gemm(*f.tensor_core[i], kn.tensor_core[i], target);
            if (f.norms[i].defined()) layer_norm_own_kernels(f.norms[i], gpu);
            continue;
        }
        const LayerMapping m = layer_mapping(s.ks, s.groups);
        if (gpu) {
            const Conv2dGpuKnobs &lk = m == LayerMapping::pointwise ? kn.pointwise_gpu
                                       : m == LayerMapping::full    ? kn.full_gpu
                                                                    : kn.layer_gpu;
            schedule_conv2d_gpu(L, layer_conv_kind(s), lk, true, s.out_ch);
        } else {
            const Conv2dCpuKnobs &lk = m == LayerMapping::pointwise ? kn.pointwise_cpu
                                       : m == LayerMapping::full    ? kn.full_cpu
                                                                    : kn.layer_cpu;
            schedule_conv2d_cpu(L, layer_conv_kind(s), lk, true, s.out_ch);
        }
        if (f.norms[i].defined()) layer_norm_own_kernels(f.norms[i], gpu);
    }
    if (f.se.defined()) se_layer_by_layer(f.se, gpu);
}

// Block fusion on the CPU: per output tile, the output accumulates over hidden channels in
// chunks (Eq. 32); each chunk of every hidden layer (MBConv: expand and depthwise on the tile
// plus halo) is produced inside that loop, used, and discarded.
// The hidden layers (and full-width layers, LayerNorm) of a block, scheduled inside the block's
// output tile at `xo` of `root` (the CPU part of both fused_cpu and depth-first).
void fused_cpu_inside(BlockFuncs f, const BlockSpec &spec, const BlockKnobs &kn, Func root, Var xo) {
    Conv2dFuncs &last = f.layers.back();
    Func out = last.output, acc = last.accum;
    Var ak = acc.args()[0], ax = acc.args()[1], ay = acc.args()[2];
    RVar eo("eo"), ei("ei");
    acc.compute_at(root, xo).vectorize(ak, 8, guard);
    acc.update().split(last.r.x, eo, ei, kn.chunk, guard).reorder(ak, ax, ay, ei, eo).vectorize(ak, 8, guard);
    for (size_t i = 0; i + 1 < f.layers.size(); ++i) {
        Conv2dFuncs &L = f.layers[i];
        Var lk = L.output.args()[0], lx = L.output.args()[1];
        if (spec.layers[i].hidden) {
            L.output.compute_at(acc, eo).vectorize(lk, 8, guard);
        } else {
            L.output.compute_at(root, xo).vectorize(lk, 8, guard);
        }
        L.accum.compute_at(L.output, lx).vectorize(L.accum.args()[0], 8, guard);
        L.accum.update().vectorize(L.accum.args()[0], 8, guard);
        if (f.norms[i].defined()) {  // per tile: all channels of a pixel are there
            NormFuncs nf = f.norms[i];
            nf.normed.compute_at(root, xo).vectorize(nf.normed.args()[0], 8, guard);
            nf.mean.compute_at(nf.normed, nf.normed.args()[1]);
            nf.rstd.compute_at(nf.normed, nf.normed.args()[1]);
        }
    }
}

// Block fusion on the CPU: the output tiled over parallel tasks. Returns the tile Var (for
// depth-first, the earlier blocks of a stage are computed there).
Var fused_cpu(BlockFuncs f, const BlockSpec &spec, const BlockKnobs &kn) {
    Func out = f.layers.back().output;
    Var k = out.args()[0], x = out.args()[1], y = out.args()[2], n = out.args()[3];
    Var xo("xo"), yo("yo"), xi("xi"), yi("yi"), t("t");
    out.tile(x, y, xo, yo, xi, yi, kn.tile_x, kn.tile_y, guard).fuse(yo, n, t).parallel(t).vectorize(k, 8, guard);
    fused_cpu_inside(f, spec, kn, out, xo);
    return xo;
}

// input_vec: a 1x1 hidden layer's input pixel (all in_ch channels) copied into registers once per
// point of the stored chunk `h` (at its thread Var), loaded `vec` channels at a time, then reused by
// the point's hidden_vec channels. Read per use, every input channel was its own 16-bit load with
// its own 64-bit address: in MBConv c=24's expand loop (sm_90 SASS, spw) 24 LDG.U16 with an IADD3
// and an IMAD.WIDE each, 290 instructions per 96 FFMA; with vec = 8, 6 LDG.64 and 220.
void input_pixel_in_registers(Conv2dFuncs &L, Func h, Var thread, int in_ch, int vec) {
    Func pix = L.padded.in(L.accum);
    const std::vector<Var> a = pix.args();
    Var pco("pix_co"), pci("pix_ci");
    pix.compute_at(h, thread).store_in(MemoryType::Register).bound_extent(a[0], in_ch);
    for (size_t d = 1; d < a.size(); ++d) pix.bound_extent(a[d], 1);
    // Unrolled both sides, so the register array is indexed by constants (not local memory).
    pix.split(a[0], pco, pci, vec).vectorize(pci).unroll(pco);
    L.accum.update().unroll(RVar(L.r.x));
}

// stage_weights: the chunk's weights of every chunked layer among `layers` (the hidden ones and the
// block's last), widened to f32 once per thread block into shared memory at the chunk loop
// (`chunk_loop`): otherwise every thread loads and converts each weight it uses (in MBConv c=24 k's expand
// loop, 72 converts per 64 FFMA; sm_90 SASS). stage_weights = 2: the full-width layers' weights too,
// once per tile (`root` at `xo`; ConvFirst's grouped 3x3 layer converted each of its 64 weights per
// tap and pixel: 212 instructions per 64 FFMA, sm_90 SASS).
void stage_layer_weights(const std::vector<Conv2dFuncs> &layers, const BlockSpec &spec, const BlockKnobs &kn,
                         const LoopLevel &chunk_loop, Func root, Var xo, int threads_x, int threads_y) {
    if (!kn.stage_weights) return;
    for (size_t i = 0; i < layers.size(); ++i) {
        const bool chunked = chunked_layer(spec, i);
        if (!chunked && kn.stage_weights < 2) continue;
        Func w = layers[i].weights;
        if (chunked) {
            w.compute_at(chunk_loop);
        } else {
            w.compute_at(root, xo);
        }
        spread_over_block(w, threads_x, threads_y, 1, kn.unroll_staging != 0);
    }
}

// The hidden layers of a fused block inside the thread block of `root` at `xo` (threads_x x
// threads_y threads): each chunk of every hidden layer produced into shared memory at the chunk
// loop `chunk_loop` (the accumulator's, or SE's partial sums'), full-width layers and LayerNorm on
// the tile. The block's output region is rx x ry pixels; each layer's stored region gets its constant extent (the region grown
// by the halos of the layers after it, bound_extent). With the extents Halide infers, clipped at
// image borders, the stored region's width was a run-time value, and spreading its points over the
// threads divided by it: in MBConv c=24's expand loop (sm_90 SASS), 350 instructions per 96 FFMA.
// Points past the image read clamped inputs (the padded views are zero there) and are never used.
void hidden_layers_gpu(BlockFuncs f, size_t count, const BlockSpec &spec, const BlockKnobs &kn, Func root, Var xo,
                       const LoopLevel &chunk_loop, int threads_x, int threads_y, int rx, int ry) {
    for (size_t i = 0; i < count; ++i) {
        Conv2dFuncs &L = f.layers[i];
        Func h = L.output;
        // stage_padded: store the next layer's padded view of the chunk instead (the layer's output
        // inlined into it): the zero padding, clamp and widening to f32 happen once per stored
        // element, not once per read (a 3x3 depthwise reads each element up to 9 times).
        // (Only where the next layer is among `f`'s: SE's clones feed its sums, not a layer.)
        if (kn.stage_padded && padded_view_stageable(spec, i) && i + 1 < f.layers.size()) h = f.layers[i + 1].padded;
        long long lx = rx, ly = ry;
        grow_through_layers(spec, lx, ly, i + 1);
        h.bound_extent(h.args()[1], int(lx)).bound_extent(h.args()[2], int(ly));
        if (spec.layers[i].hidden) {
            h.compute_at(chunk_loop);
        } else {
            h.compute_at(root, xo);
        }
        const int hv = spec.layers[i].hidden ? kn.hidden_vec : kn.full_vec;
        Var thread = spread_over_block(h, threads_x, threads_y, hv);
        accumulate_in_register(L.accum, h, thread, hv);
        if (kn.input_vec > 0 && pointwise_hidden_layer(spec.layers[i]))
            input_pixel_in_registers(L, h, thread, spec.layers[i].in_ch, kn.input_vec);
        if (f.norms[i].defined()) {  // LayerNorm of the tile, in shared memory, one point per thread
            NormFuncs nf = f.norms[i];
            for (Func g : {nf.mean, nf.rstd, nf.normed}) {
                g.compute_at(root, xo);
                spread_over_block(g, threads_x, threads_y);
            }
        }
    }
}

// Depth-first, GPU: an earlier block of a stage computed inside the last block's thread block
// (its output region = the tile grown by the halos of the blocks after it, rx x ry), everything
// in shared memory: its output, its accumulator (one (channel, pixel) per thread, spread over
// the same threads_x x threads_y threads) and its hidden chunks. The output and accumulator get
// constant extents (bound_extent): with the extents Halide infers at image borders, the bounds
// through the fused thread mappings are so loose that the kernel asks for more shared memory
// than the H200 allows (cuLaunchKernel: CUDA_ERROR_INVALID_VALUE).
void depth_first_block_gpu(BlockFuncs f, const BlockSpec &spec, const BlockKnobs &kn, Func root, Var xo, int threads_x,
                           int threads_y, int rx, int ry) {
    Conv2dFuncs &last = f.layers.back();
    Func bout = last.output, acc = last.accum;
    for (Func g : {bout, acc})
        g.bound_extent(g.args()[0], spec.cout).bound_extent(g.args()[1], rx).bound_extent(g.args()[2], ry);
    for (size_t i = 0; i + 1 < f.layers.size(); ++i) {  // each layer's channels (its region: hidden_layers_gpu)
        Func h = f.layers[i].output;
        h.bound_extent(h.args()[0], spec.layers[i].hidden ? kn.chunk : spec.layers[i].out_ch);
    }
    bout.compute_at(root, xo);
    spread_over_block(bout, threads_x, threads_y);
    acc.compute_at(root, xo);
    store_in_shared(acc);
    Var k = acc.args()[0], x = acc.args()[1], y = acc.args()[2];
    Var xy("dxy"), t("dt"), to("dto"), ti("dti"), tb("dtb"), ta("dta");
    const int nt = threads_x * threads_y;
    acc.fuse(x, y, xy).fuse(k, xy, t).split(t, to, ti, nt, guard).split(ti, tb, ta, threads_x).gpu_threads(ta, tb);
    RVar eo("eo"), ei("ei");
    acc.update()
        .split(last.r.x, eo, ei, kn.chunk, guard)
        .fuse(x, y, xy)
        .fuse(k, xy, t)
        .split(t, to, ti, nt, guard)
        .split(ti, tb, ta, threads_x)
        .reorder({ei, RVar(last.r.y), RVar(last.r.z), ta, tb, to, eo})
        .gpu_threads(ta, tb);
    hidden_layers_gpu(f, f.layers.size() - 1, spec, kn, root, xo, LoopLevel(acc, eo), threads_x, threads_y, rx, ry);
}

// Block fusion on the GPU: one kernel. A thread block owns a tile of output pixels and all
// output channels; each thread owns vec_k channels x tile_y pixels of the output accumulator
// (in shared memory). For each chunk of hidden channels the block produces the hidden layers'
// chunk on its tile (+ halo) into shared memory, synchronizes, and every thread accumulates it.
// hidden_vec > 1: each thread produces that many hidden channels of a pixel (input loads reused
// across them) instead of one.
// On the H200 (f16, N=128; docs/fused-blocks.md, bench/results/h200/mbconv-lbl-flat/): MBConv c=24 e=6
// 56x56 fused (spwi: 56x8 pixels, chunk 8, hidden_vec 4, input_vec) runs at 18-19% of the FFMA ceiling and
// layer by layer (flat mappings) 1.4-1.9x faster: these kernels are issue-bound on CUDA cores, and the
// per-chunk register sum (hidden_vec > 1) is what keeps them within 2x of layer by layer at all.
Var fused_gpu(BlockFuncs f, const BlockSpec &spec, const BlockKnobs &kn) {
    Conv2dFuncs &last = f.layers.back();
    Func out = last.output, acc = last.accum;
    const int vk = kn.vec_k;
    Var xo = tile_output_over_threads(out, kn.tile_x, kn.tile_y, vk);
    Var ak = acc.args()[0], ax = acc.args()[1], ay = acc.args()[2];
    Var akt("akt"), akv("akv");
    RVar eo("eo"), ei("ei");
    // The accumulator lives in shared memory, each thread updating its own vec_k x tile_y part
    // between barriers. (As a block-level MemoryType::Register Func, Halide gave every thread a
    // copy of the whole tile: local memory, 200-650x the modelled DRAM bytes under Nsight
    // Compute on the H200.) Full tile even at image edges: extra pixels read clamped inputs
    // and are never stored.
    store_in_shared(acc);
    acc.compute_at(out, xo).bound_extent(ak, spec.cout).bound_extent(ax, kn.tile_x).bound_extent(ay, kn.tile_y);
    acc.split(ak, akt, akv, vk, guard).reorder(akv, ay, akt, ax).gpu_threads(akt, ax).unroll(akv).unroll(ay);
    // Per chunk, each thread sums its part of the chunk's contribution in registers (the rfactor
    // intermediate `chunk_sum`, vec_k x tile_y values) and adds it to the shared accumulator once:
    // one shared read-modify-write per output value and chunk, not per hidden channel. (Summing
    // into the shared accumulator directly, every FMA of the projection came with a shared load
    // and store: 48 LDS + 48 STS + 48 FFMA in the SASS of the c=24 loop, sm_90; now 64 FFMA in 199
    // instructions, no STS.) The register tile has a constant vec_k channels, so it needs vec_k to
    // divide the output channels (the weights have no channels past them); otherwise the direct
    // form below.
    Stage upd = acc.update();
    upd.split(last.r.x, eo, ei, kn.chunk, guard);
    if (spec.cout % vk == 0) {
        Var u("chunk_u");
        Func chunk_sum = upd.rfactor(eo, u);
        upd.split(ak, akt, akv, vk, guard).reorder(akv, ay, akt, ax, eo);
        Var ck = chunk_sum.args()[0], cy = chunk_sum.args()[2];
        chunk_sum.compute_at(acc, akt)
            .store_in(MemoryType::Register)
            .bound_extent(ck, vk)
            .bound_extent(cy, kn.tile_y)
            .reorder(ck, cy)
            .unroll(ck)
            .unroll(cy);
        chunk_sum.update().reorder(ck, cy, ei).unroll(ck).unroll(cy);
    } else {
        upd.split(ak, akt, akv, vk, guard).reorder(akv, ay, ei, akt, ax, eo);
    }
    upd.gpu_threads(akt, ax).unroll(akv).unroll(ay);
    const int tk = fused_threads_k(spec.cout, vk);
    hidden_layers_gpu(f, f.layers.size() - 1, spec, kn, out, xo, LoopLevel(acc, eo), tk, kn.tile_x, kn.tile_x,
                      kn.tile_y);
    stage_layer_weights(f.layers, spec, kn, LoopLevel(acc, eo), out, xo, tk, kn.tile_x);
    return xo;
}

// Squeeze-Excitation in a fused block: the mean needs every pixel of the layer before any output
// can be finished, so the block is split around it into the fewest kernels a grid-wide reduction
// allows, two: (1) per output tile, the layers up to SE recomputed as clones (hidden chunks in shared
// memory, never in DRAM) and summed into the tile's partial sums (rfactor of the mean), zeroed and
// summed in shared memory and stored once; (2) the fused block, each tile computing its image's gate
// from the partial sums first (se_gate_in_tile, called once the block's tile Var exists).
void se_partial_sums(BlockFuncs f, const BlockSpec &spec, const BlockKnobs &kn, bool gpu) {
    SEFuncs se = f.se;
    RVar rxo("se_rxo"), rxi("se_rxi"), ryo("se_ryo"), ryi("se_ryi");
    Var u("se_u"), v("se_v");
    Func partial = se.pooled.update()
                       .split(se.r.x, rxo, rxi, kn.tile_x)
                       .split(se.r.y, ryo, ryi, kn.tile_y)
                       .rfactor({{rxo, u}, {ryo, v}});
    // GPU: the tile's column sums first (colsum, the rfactor of the sum over rows; below).
    Var cx("se_cx");
    Func colsum = gpu ? partial.update().rfactor(rxi, cx) : Func();  // colsum(e, n, u, v, cx)
    // The layers up to SE, cloned for the partial sums (Halide computes one Func at one place).
    std::vector<Conv2dFuncs> c(spec.se_after + 1);
    Func consumer = gpu ? colsum : partial;
    for (int i = spec.se_after; i >= 0; --i) {
        c[i].output = f.layers[i].output.clone_in(consumer);
        c[i].accum = f.layers[i].accum.clone_in(c[i].output);
        c[i].padded = f.layers[i].padded.clone_in(c[i].accum);
        // The weights too: the block's own may be staged per chunk in its kernel (stage_weights).
        c[i].weights = f.layers[i].weights.clone_in(c[i].accum);
        c[i].r = f.layers[i].r;  // a clone reduces over the same RDom
        consumer = c[i].padded;
    }
    // rfactor puts the new pure Vars last: partial(e, n, u, v).
    Var e = partial.args()[0], n = partial.args()[1], eo("sp_eo"), ei("sp_ei"), vn("sp_vn");
    Stage upd = partial.update();
    if (!gpu) {
        partial.compute_root();
        upd.split(e, eo, ei, kn.chunk, guard).reorder(rxi, ryi, ei, eo, u, v, n).fuse(v, n, vn).parallel(vn);
        for (int i = 0; i <= spec.se_after; ++i) {
            c[i].output.compute_at(partial, eo);
            c[i].accum.compute_at(c[i].output, c[i].output.args()[1]);
        }
        return;
    }
    // GPU, one kernel: a thread block per tile (u, v) and image. Per chunk of channels the clones
    // produce the chunk on the tile with the block kernel's mapping (hidden_layers_gpu: the same
    // threads, hidden_vec, staged f32 weights and padded chunks, the expand's input pixel in registers);
    // chunk x tile_x threads then sum a column of the tile each (colsum, the rfactor of the sum over
    // rows), chunk threads add the tile_x column sums into the tile's sums in shared memory, and the
    // copy-out stores them once. (The sums as a root Func made their zero-fill a kernel of its own; with
    // one hidden channel per thread on chunk x tile_x threads and nothing staged, this kernel took 2.2x the
    // block kernel's time. H200, c=24 N=128, Nsight Compute (bench/results/h200/se-two-kernels/): spwi's
    // 1565 -> 540 us with the block's mapping, tpwi 466 + 635 us for both kernels, 1.104 ms in all against
    // 1.947 layer by layer.)
    Var ceo("sc_o"), cei("sc_i");
    const int tx = fused_threads_k(spec.cout, kn.vec_k), ty = kn.tile_x;
    upd.split(e, eo, ei, kn.chunk, guard).reorder(rxi, ei, eo, u, v, n).gpu_threads(ei);
    Var ce = colsum.args()[0], cxv = colsum.args().back();
    colsum.compute_at(partial, eo);
    store_in_shared(colsum);
    colsum.split(ce, ceo, cei, kn.chunk, guard).reorder(cei, cxv, ceo).gpu_threads(cei, cxv);
    colsum.update().split(ce, ceo, cei, kn.chunk, guard).reorder(ryi, cei, cxv, ceo).gpu_threads(cei, cxv);
    Func stored = partial.in();
    Var se_ = stored.args()[0], sn = stored.args()[1], su = stored.args()[2], sv = stored.args()[3];
    Var so("so_o"), si("so_i");
    stored.compute_root()
        .reorder(se_, su, sv, sn)
        .fuse(sv, sn, vn)
        .split(se_, so, si, kn.chunk, guard)
        .reorder(si, so, su, vn)
        .gpu_blocks(su, vn)
        .gpu_threads(si);
    Var po("sz_o"), pi("sz_i");
    store_in_shared(partial);
    partial.compute_at(stored, su).split(e, po, pi, kn.chunk, guard).gpu_threads(pi);
    // The clones, all of them, as the hidden layers of a block whose chunk loop is the sums' (partial at eo).
    BlockFuncs clones;
    clones.layers = c;
    clones.norms.resize(c.size());
    hidden_layers_gpu(clones, c.size(), spec, kn, stored, su, LoopLevel(partial, eo), tx, ty, kn.tile_x, kn.tile_y);
    stage_layer_weights(c, spec, kn, LoopLevel(partial, eo), stored, su, tx, ty);
}

}  // namespace

const char *block_strategy_name(BlockStrategy s) {
    switch (s) {
    case BlockStrategy::layer_by_layer: return "layer_by_layer";
    case BlockStrategy::fused: return "fused";
    case BlockStrategy::depth_first: return "depth_first";
    case BlockStrategy::layer_by_layer_tc: return kLayerByLayerTc;
    case BlockStrategy::fused_tc: return kFusedTc;
    }
    return "?";
}

void schedule_stage(const std::vector<BlockFuncs> &stage, const BlockSpec &spec, BlockStrategy s, const BlockKnobs &kn,
                    const Target &target) {
    const bool gpu = target.has_gpu_feature();
    const size_t B = stage.size();
    if (s == BlockStrategy::depth_first) {
        // The last block fused as usual; the earlier ones inside its tiles, last to first.
        Func root = stage.back().layers.back().output;
        Var xo = gpu ? fused_gpu(stage.back(), spec, kn) : fused_cpu(stage.back(), spec, kn);
        const int tk = fused_threads_k(spec.cout, kn.vec_k);
        long long rx = kn.tile_x, ry = kn.tile_y;  // output region of block b: grown by the blocks after it
        for (size_t b = B - 1; b-- > 0;) {
            grow_through_layers(spec, rx, ry);
            if (gpu) {
                depth_first_block_gpu(stage[b], spec, kn, root, xo, tk, kn.tile_x, int(rx), int(ry));
            } else {
                Func bout = stage[b].layers.back().output;
                bout.compute_at(root, xo).vectorize(bout.args()[0], 8, guard);
                fused_cpu_inside(stage[b], spec, kn, root, xo);
            }
        }
        return;
    }
    // Layer by layer, or one fused kernel per block: every block's output goes through memory.
    for (size_t b = 0; b < B; ++b) {
        if (b + 1 < B) Func(stage[b].layers.back().output).compute_root();
        if (s == BlockStrategy::layer_by_layer || s == BlockStrategy::layer_by_layer_tc) {
            layer_by_layer(stage[b], spec, kn, target);
        } else {
            // SE's partial sums first: their clones must be made before the originals get their schedules.
            const bool se = stage[b].se.defined();
            if (se) se_partial_sums(stage[b], spec, kn, gpu);
            const Var xo = gpu ? fused_gpu(stage[b], spec, kn) : fused_cpu(stage[b], spec, kn);
            if (se)
                se_gate_in_tile(stage[b].se, stage[b].layers.back().output, xo, fused_threads_k(spec.cout, kn.vec_k),
                                kn.tile_x, gpu);
        }
    }
}

}  // namespace blockfuse
