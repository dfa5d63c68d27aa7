#include "schedules/conv2d_schedule.h"

namespace blockfuse {
using namespace Halide;

namespace {
const TailStrategy guard = TailStrategy::GuardWithIf;

// Vectors along output channels are only used where K is a multiple of the vector width
// (Halide specialization); elsewhere the same mapping runs with scalar lanes. This keeps
// predicated vector code out (the OpenCL backend cannot emit it) and lets odd K (1, 3, 7...)
// run the same thread mapping.
Expr channels_divisible(const Expr &channels, int vec) { return channels % vec == 0; }
}  // namespace

// GPU (CUDA and OpenCL share it; OpenCL runs it on PoCL in CI).
// Output channels are innermost in memory, so threads along k give coalesced loads of
// weights and of the input (depthwise) and coalesced stores; each thread keeps a
// vec_k x tile_x x tile_y accumulator tile in registers and walks the reduction.
// Tails are guarded (GuardWithIf) so no size constraint leaks to the caller: odd widths, K=1
// and 1x1 images run the same kernel. The flat mapping (flat_threads) is the exception: its edge
// tiles shift inwards, so it needs an image of at least one tile.
// Measured on the H200: bench/results/h200/conv2d/ (each variant's time and share of the
// copy bandwidth / FFMA ceiling). Depthwise f16 N=128 with the flat mapping
// (bench/results/h200/depthwise-flat/): 3x3 C=144 56x56 0.078-0.082 ms (67-70% of copy
// bandwidth; the 2-D mapping's best 0.094-0.097), 5x5 C=240 28x28 0.069-0.075 ms (0.087-0.092).
// Dense 3x3 with stage_channels (the step's 4-channel window in registers, from the block's shared
// tile), H200 f16 (bench/results/h200/report/): Conv3x3-BN-ReLU C=K=64 56x56 N=128 1.167 ms, 39% of
// the FFMA ceiling (the per-tap global loads and selects of the plain mapping: 6.96 ms, 6.5%).
void schedule_conv2d_gpu(const Conv2dFuncs &f, ConvKind kind, const Conv2dGpuKnobs &kn, bool static_kernel,
                         const Expr &out_channels, const Expr &activation_id) {
    // static_kernel: the window is static here (the generator checks stride and dilation for stage_input).
    if (const std::string why = conv2d_gpu_knobs_error(kn, kind, static_kernel, 0); !why.empty())
        throw CompileError("conv2d GPU schedule: " + why);
    Func out = f.output, acc = f.accum;
    Var k = out.args()[0], x = out.args()[1], y = out.args()[2], n = out.args()[3];
    Var k1("k1"), ko("ko"), kt("kt"), kv("kv"), xo("xo"), xi("xi"), xt("xt"), xr("xr"), yo("yo"), yi("yi"), yn("yn");
    Var ak = acc.args()[0], ax = acc.args()[1], ay = acc.args()[2];
    const RDom &r = f.r;

    // Vector path: vec_k channels per thread. Fallback (K not a multiple of vec_k): one channel
    // per thread, same tiles, so the accumulator keeps a constant size and stays in registers.
    const bool flat = kn.flat_threads > 0;
    Var tile_f("tile_f"), ft("ft"), fb("fb");
    const Var &thread_var = flat ? ft : kt;  // the loop at which a thread owns its register tile
    auto schedule_with = [&](Stage o, Stage a, Stage u, bool vec) {
        o.split(k, k1, kv, vec ? kn.vec_k : 1, TailStrategy::RoundUp);
        if (flat) {
            // Edge tiles shift inwards (recomputing a few pixels) instead of being guarded:
            // every tile is full, so the accumulator's constant extent is provable. With
            // guards, Halide 21 left a bounds assert inside the kernel that the PTX backend
            // cannot compile (halide_error_explicit_bounds_too_small). The price: images at
            // least one tile large, which the dispatcher enforces (runtime/conv2d.cpp).
            const TailStrategy shift = TailStrategy::ShiftInwards;
            o.split(x, xt, xr, kn.tile_x, shift)
                .split(y, yo, yi, kn.tile_y, shift)
                .reorder(kv, xr, yi, k1, xt, yo, n)
                .fuse(k1, xt, tile_f)                           // one row of tiles; y and n stay grid dimensions, so
                .split(tile_f, fb, ft, kn.flat_threads, guard)  // no runtime division per thread
                .gpu_blocks(fb, yo, n)
                .gpu_threads(ft);
        } else {
            o.split(k1, ko, kt, kn.threads_k, guard)
                .split(x, xo, xi, kn.threads_x * kn.tile_x, guard)
                .split(xi, xt, xr, kn.tile_x, guard)
                .split(y, yo, yi, kn.tile_y, guard)
                .reorder(kv, xr, yi, kt, xt, ko, xo, yo, n)
                .fuse(yo, n, yn)
                .gpu_blocks(ko, xo, yn)
                .gpu_threads(kt, xt);
        }
        o.unroll(xr).unroll(yi);
        a.reorder(ak, ax, ay).unroll(ax).unroll(ay);
        if (kind == ConvKind::general) {
            u.reorder(ak, ax, ay, r.y, r.z, r.x);  // window inner, input channels outer
        } else {
            u.reorder(ak, ax, ay, r.x, r.y, r.z);
        }
        u.unroll(ax).unroll(ay);
        if (static_kernel && kn.unroll_reduction) u.unroll(r.y).unroll(r.z);
        if (vec) {
            o.vectorize(kv);
            a.vectorize(ak);
            u.vectorize(ak);
        }
    };
    // The accumulator tile lives in registers of the thread that owns it. Its pixel extent is
    // pinned to the full tile even at image edges (extra pixels read the clamped input and
    // are never stored), so the tile unrolls without guards; guarding it instead multiplied
    // the PTX by loop partitioning (9 MB for one 5x5 variant).
    acc.compute_at(out, thread_var).bound_extent(ax, kn.tile_x).bound_extent(ay, kn.tile_y);
    if (kn.stage_input) {
        // The thread's input window, loaded once (vectorized along channels) and kept in
        // registers; the unrolled taps then read registers. The window extent is a constant
        // because kernel size, stride and dilation are static in such variants.
        Func padded = f.padded;
        Func window = padded.in();
        Var wc = window.args()[0], wx = window.args()[1], wy = window.args()[2];
        if (kn.stage_input == 1) {
            window.compute_at(out, thread_var).store_in(MemoryType::Register).unroll(wx).unroll(wy);
            if (kn.vec_k > 1) {
                Expr div = channels_divisible(out_channels, kn.vec_k);
                window.specialize(div).vectorize(wc, kn.vec_k, TailStrategy::RoundUp);
            }
        } else {
            // stage_input=2: the block's input tile + halo goes through shared memory once, so
            // neighbouring threads' halos stop re-reading L2 (ncu on the H200: the register-
            // window variant was L2-throughput-bound at 94% with DRAM at 43%). The block's
            // threads load it cooperatively: channels on threads_k, pixels on threads_x.
            // The tile's channel vectors are cut into groups of threads_k, so the load uses the
            // block's threads_k x threads_x threads whatever the channel count. (Mapped whole, a
            // general conv's tile of C input channels makes the block C / vec_k threads wide: 512
            // threads for C=256, which at a 255-register cap fail the launch on the H200 with
            // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, and leave most threads idle outside the load.)
            Var wco("wco"), wci("wci"), wcg("wcg"), wct("wct"), wxy("wxy"), wxyo("wxyo"), wxyi("wxyi");
            window.compute_at(out, ko)
                .store_in(MemoryType::GPUShared)
                .split(wc, wco, wci, kn.vec_k, TailStrategy::RoundUp)
                .split(wco, wcg, wct, kn.threads_k, TailStrategy::GuardWithIf)
                .fuse(wx, wy, wxy)
                .split(wxy, wxyo, wxyi, kn.threads_x, TailStrategy::GuardWithIf)
                .reorder(wci, wct, wxyi, wcg, wxyo)
                .gpu_threads(wct, wxyi)
                .vectorize(wci);
        }
    }
    // After the mappings: the specializations of the output share one update stage, and a split
    // changes the names the reorders above use.
    RVar rco("rco"), rci("rci");
    auto unroll_channels = [&](Stage u) {
        if (kn.unroll_channels < 2) return;
        u.split(r.x, rco, rci, kn.unroll_channels, guard).unroll(rci);
    };
    if (kn.stage_channels) {
        // The step's input channel count must divide the group's: the pointwise layers' count is
        // a constant; the general kernels constrain the weights' extent to a multiple of it
        // (generators/conv2d_generator.cpp), which the dispatcher matches.
        if (!is_const_one(simplify(r.x.extent() % kn.unroll_channels == 0)))
            throw CompileError("conv2d GPU schedule: stage_channels needs unroll_channels dividing the input channels "
                               "per group");
        // Per step of the channel loop, the step's channels x the thread's tile (+ halo for a
        // k x k window) in registers, loaded as channel vectors: from the block's shared tile
        // (stage_input=2) or from global memory. The unrolled taps then read registers only.
        Func padded = f.padded;
        Func src = kn.stage_input == 2 ? padded.in() : padded;
        Func window = src.in();
        Var wc = window.args()[0], wx = window.args()[1], wy = window.args()[2];
        window.compute_at(acc, rco)
            .store_in(MemoryType::Register)
            .bound_extent(wc, kn.unroll_channels)
            .vectorize(wc)
            .unroll(wx)
            .unroll(wy);
    }
    if (kn.vec_k > 1) {
        Expr div = channels_divisible(out_channels, kn.vec_k);
        Stage a = acc.specialize(div), u = acc.update().specialize(div);
        // The epilogue's activation is a runtime id; a select over all activations costs far
        // more than the 9-25 FMAs of a depthwise output (on the H200 it made dw3x3 c=144
        // n=128 instruction-bound at 0.36 ms). Specialize the output on the common ids so
        // their path holds only their own arithmetic.
        if (activation_id.defined())
            for (int id : {int(Activation::none), int(Activation::relu)})
                schedule_with(out.specialize(div && activation_id == id), a, u, true);
        schedule_with(out.specialize(div), a, u, true);
        unroll_channels(u);
    }
    schedule_with(out, acc, acc.update(), false);
    unroll_channels(acc.update());
}

// CPU: a register-blocked direct convolution (the shape of Halide's apps/conv_layer CPU schedule).
// Each task of the parallel loops owns cpu_rows rows of register tiles of one image; a tile holds
// cpu_vec_k vectors of cpu_lanes output channels x cpu_tile_x x cpu_tile_y pixels in accumulator
// registers while the reduction walks the input channels and the kernel window: per step, cpu_vec_k
// weight vectors and one broadcast input value per pixel feed cpu_vec_k x pixels FMAs (depthwise: a
// vector of input channels per pixel and tap). The task's zero-padded input rows are copied once
// into a buffer (sliding down the task's rows) so the reduction reads them without bounds selects.
// Channel tails: the last tile of channels shifts inwards (recomputing a few), so every tile is
// full; K below a tile takes one vector, K below a vector scalar lanes. Pixel tails are guarded
// stores of a full tile (the extra pixels read the padded rows and are never stored).
// On the 2-core build machine (Xeon, AVX-512), f32, heuristic knobs, under load: 3x3 c=k=64 28x28 n=2
// 1.1 ms and 1x1 64->256 0.36 ms, against 1.9 and 0.61 ms with one 16-lane vector x 4 pixels and no
// staging; beside Halide's autoschedulers and ONNX Runtime in bench/results/cpu/baselines/.
void schedule_conv2d_cpu(const Conv2dFuncs &f, ConvKind kind, const Conv2dCpuKnobs &kn, bool static_kernel,
                         const Expr &out_channels, const Expr &activation_id) {
    if (const std::string why = conv2d_cpu_knobs_error(kn); !why.empty())
        throw CompileError("conv2d CPU schedule: " + why);
    Func out = f.output, acc = f.accum;
    Var k = out.args()[0], x = out.args()[1], y = out.args()[2], n = out.args()[3];
    Var ko("ko"), ki("ki"), kvo("kvo"), kv("kv"), xo("xo"), xi("xi"), yo("yo"), yi("yi"), yt("yt"), yr("yr");
    Var ak = acc.args()[0], ax = acc.args()[1], ay = acc.args()[2], ako("ako"), akv("akv");
    const RDom &r = f.r;
    RVar rco("rco"), rci("rci");
    const int lanes = kn.cpu_lanes, tile_k = kn.cpu_lanes * kn.cpu_vec_k;
    // One loop nest per channel tiling: `vecs` vectors of `lanes` channels per tile, or (vecs = 0) the
    // channels one at a time.
    auto schedule_out = [&](Stage o, int vecs) {
        o.split(x, xo, xi, kn.cpu_tile_x, guard)
            .split(y, yo, yi, kn.cpu_tile_y, guard)
            .split(yo, yt, yr, kn.cpu_rows, guard);
        if (vecs > 0) {
            o.split(k, ko, ki, lanes * vecs, TailStrategy::ShiftInwards)
                .split(ki, kvo, kv, lanes)
                .reorder(kv, kvo, xi, yi, xo, ko, yr, yt, n)
                .vectorize(kv)
                .unroll(kvo);
        } else {
            o.reorder(k, xi, yi, xo, yr, yt, n);
        }
        // Nested parallel loops rather than one fused (yt, n) loop: in a block's layer-by-layer pipeline the
        // fused loop's bounds reach the producers as task / (tile rows), which bounds inference could not
        // keep within the image (the block's input was read at n = -7 with cpu_rows 8).
        o.unroll(xi).unroll(yi).parallel(yt).parallel(n);
    };
    // The accumulator tile: every loop unrolled (or vectorized), so it lives in registers.
    auto schedule_acc = [&](Stage a, Stage u, int vecs) {
        a.unroll(ax).unroll(ay);
        u.unroll(ax).unroll(ay);
        if (vecs > 0) {
            a.split(ak, ako, akv, lanes).vectorize(akv).unroll(ako);
            u.split(ak, ako, akv, lanes).vectorize(akv).unroll(ako);
        }
        std::vector<VarOrRVar> order{vecs > 0 ? akv : ak};
        if (vecs > 0) order.push_back(ako);
        order.push_back(ax);
        order.push_back(ay);
        const bool channels = kind != ConvKind::depthwise;  // a depthwise layer reduces over the window only
        std::vector<VarOrRVar> reduction;
        if (channels && kn.cpu_unroll_c > 1) {
            u.split(r.x, rco, rci, kn.cpu_unroll_c, guard).unroll(rci);
            reduction = kn.cpu_window_inner ? std::vector<VarOrRVar>{r.y, r.z, rci, rco}
                                            : std::vector<VarOrRVar>{rci, r.y, r.z, rco};
        } else if (kn.cpu_window_inner || !channels) {
            reduction = {r.y, r.z, r.x};
        } else {
            reduction = {r.x, r.y, r.z};
        }
        order.insert(order.end(), reduction.begin(), reduction.end());
        u.reorder(order);
        if (static_kernel) u.unroll(r.y).unroll(r.z);
    };
    // The tile's pixel extent is pinned (full tiles at the image's edges), its channel extent is a
    // whole tile by the inward shift.
    acc.compute_at(out, xo).bound_extent(ax, kn.cpu_tile_x).bound_extent(ay, kn.cpu_tile_y);
    if (kn.cpu_stage_input) {
        Func padded = f.padded;
        Var pc = padded.args()[0];
        padded.store_at(out, yt).compute_at(out, yr).vectorize(pc, lanes, guard);
    }
    const Expr full = out_channels >= tile_k, one = out_channels >= lanes;
    schedule_acc(acc.specialize(full), acc.update().specialize(full), kn.cpu_vec_k);
    // The epilogue's activation is a runtime id: its common values get loop nests without the select
    // over every activation (a depthwise output has only 9-25 FMAs to hide it behind).
    if (activation_id.defined())
        for (int id : {int(Activation::none), int(Activation::relu)})
            schedule_out(out.specialize(full && activation_id == id), kn.cpu_vec_k);
    schedule_out(out.specialize(full), kn.cpu_vec_k);
    if (kn.cpu_vec_k > 1) {
        schedule_acc(acc.specialize(one), acc.update().specialize(one), 1);
        schedule_out(out.specialize(one), 1);
    }
    schedule_acc(acc, acc.update(), 0);
    schedule_out(out, 0);
}

}  // namespace blockfuse
