// Thin Generator over the conv2d algorithm: shape knobs and schedule knobs are
// GeneratorParams; the algorithm and the schedules are plain functions it calls, so Halide JIT
// (autotuner, kernels regenerated for new shapes) uses the very same code.
#include "Halide.h"
#include "generators/activation.h"
#include "generators/conv2d_algorithm.h"
#include "schedules/conv2d_schedule.h"

namespace {
using namespace Halide;
using blockfuse::ConvKind;

class Conv2dGenerator : public Generator<Conv2dGenerator> {
public:
    GeneratorParam<ConvKind> kind{
        "kind",
        ConvKind::general,
        {{"general", ConvKind::general}, {"pointwise", ConvKind::pointwise}, {"depthwise", ConvKind::depthwise}}};
    // 0: kernel size taken from the weights buffer; >0: a static square kernel (unrolled).
    GeneratorParam<int> kernel_size{"kernel_size", 0};
    // Schedule knobs, one GeneratorParam each, from their declaration (schedules/conv2d_knobs.h).
    BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)
    BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)
    // Static stride / dilation (0: taken from the runtime arguments). Variants with a static
    // value are only dispatched to workloads that match (runtime/conv2d.cpp).
    GeneratorParam<int> static_stride{"static_stride", 0};
    GeneratorParam<int> static_dilation{"static_dilation", 0};
    // General kind: the group count as a constant (0: the runtime argument). 1 makes every
    // thread's output channels read the same input channel, which stage_channels needs.
    GeneratorParam<int> static_groups{"static_groups", 0};
    // General kind with static_groups: the output channel count K as a constant (0: from the weights). The
    // output channels per group become a constant too, so a vector of output channels that lies in one group
    // is known to (its group index a broadcast: one input value per lane, not a gather).
    GeneratorParam<int> static_out_channels{"static_out_channels", 0};
    // 1: channel strides are multiples of vec_k and buffers start at channel 0, so loads and
    // stores along channels are aligned vectors (16 bytes for 8 x f16). Dispatched only where
    // C and K are multiples of vec_k.
    GeneratorParam<int> aligned{"aligned", 0};
    // Depthwise channel multiplier K/C (0: from the buffers). Static 1 gives a constant input
    // window per thread (needed by stage_input).
    GeneratorParam<int> multiplier{"multiplier", 0};
    // Depthwise only: the channel count C (= K, multiplier 1) as a constant. The pixel stride
    // becomes a constant, so the taps' addresses are immediate offsets from one row pointer
    // instead of an integer multiply-add chain per load. Dispatched only where C matches.
    GeneratorParam<int> static_channels{"static_channels", 0};
    // The workload's shape, for Halide's autoschedulers only (autoscheduler=NAME, runtime/autoscheduler.h):
    // the estimates they plan for; the kernel still takes any shape the other params allow.
// clang-format does not settle on one layout of this list:
// clang-format off
#define BLOCKFUSE_CONV2D_ESTIMATES(X)                                                                       \
    X(est_n) X(est_c) X(est_h) X(est_w) X(est_k) X(est_r) X(est_s) X(est_stride_x) X(est_stride_y)          \
    X(est_dilation_x) X(est_dilation_y) X(est_pad_left) X(est_pad_top) X(est_groups)
// clang-format on
#define BLOCKFUSE_ESTIMATE_PARAM(name) GeneratorParam<int> name{#name, 0};
    BLOCKFUSE_CONV2D_ESTIMATES(BLOCKFUSE_ESTIMATE_PARAM)
    // Conv3d through this conv2d (depth_kernel > 0): the input buffer is NDHWC with depth and batch as
    // one dimension (c, x, y, z + depth_in * n), the output likewise with depth_out, and the weights are
    // (k, t * depth_cg + cg, kx, ky): each depth tap t of the depth_kernel is a block of depth_cg input
    // channels per group, so the conv2d reduction over C/groups x R x S becomes the conv3d reduction over
    // C/groups x T x R x S. The channel index the conv2d algorithm reads is decoded into (group, tap,
    // channel), the tap and the output depth into the input depth (zero outside it).
    GeneratorParam<int> depth_kernel{"depth_kernel", 0};
    GeneratorParam<int> depth_cg{"depth_cg", 1};
    GeneratorParam<int> depth_in{"depth_in", 1}, depth_out{"depth_out", 1};
    GeneratorParam<int> depth_stride{"depth_stride", 1}, depth_dilation{"depth_dilation", 1}, depth_pad{"depth_pad", 0};

    // Storage types come from the automatic `input.type` / `weights.type` / `output.type` params.
    Input<Buffer<void, 4>> input{"input"};      // (c, x, y, n)
    Input<Buffer<void, 4>> weights{"weights"};  // (k, cg, kx, ky)
    Input<Buffer<float, 1>> bias{"bias"};       // (k), f32 (BN folded in)
    Input<int> stride_x{"stride_x"}, stride_y{"stride_y"};
    Input<int> dilation_x{"dilation_x"}, dilation_y{"dilation_y"};
    Input<int> pad_left{"pad_left"}, pad_top{"pad_top"};
    Input<int> groups{"groups"};
    Input<int> activation{"activation"};
    Output<Buffer<void, 4>> output{"output"};  // (k, x, y, n)

    void generate() {
        blockfuse::Conv2dGeometry g;
        g.in_width = input.dim(1).extent();
        g.in_height = input.dim(2).extent();
        Expr K = weights.dim(0).extent();
        // stage_channels steps the input channels unroll_channels at a time: the extent is declared a
        // multiple of the step, which Halide checks at the call; the dispatcher only sends such workloads.
        auto whole_channel_steps = [&] {
            const int u = unroll_channels;
            weights.dim(1).set_extent((weights.dim(1).extent() / u) * u);
            return (weights.dim(1).extent() / u) * u;
        };
        switch (kind) {
        case ConvKind::general:
            g.groups = static_groups > 0 ? Expr(int(static_groups)) : Expr(groups);
            g.in_channels_per_group = stage_channels ? whole_channel_steps() : weights.dim(1).extent();
            break;
        case ConvKind::pointwise:
            g.groups = 1;
            g.in_channels_per_group = stage_channels ? whole_channel_steps() : weights.dim(1).extent();
            break;
        case ConvKind::depthwise:  // groups = C, one input channel per group, K = C * multiplier
            g.groups = input.dim(0).extent();
            g.in_channels_per_group = 1;
            break;
        }
        if (static_out_channels > 0) {
            if (kind != ConvKind::general || static_groups <= 0 || int(static_out_channels) % int(static_groups))
                throw CompileError("static_out_channels needs kind=general and static_groups dividing it");
            K = int(static_out_channels);
        }
        g.out_channels_per_group =
            (kind == ConvKind::depthwise && multiplier > 0) ? Expr(int(multiplier)) : K / g.groups;
        const bool static_kernel = kind == ConvKind::pointwise || kernel_size > 0;
        const int ks = kind == ConvKind::pointwise ? 1 : int(kernel_size);
        g.kernel_w = static_kernel ? Expr(ks) : weights.dim(2).extent();
        g.kernel_h = static_kernel ? Expr(ks) : weights.dim(3).extent();
        g.stride_x = static_stride > 0 ? Expr(int(static_stride)) : Expr(stride_x);
        g.stride_y = static_stride > 0 ? Expr(int(static_stride)) : Expr(stride_y);
        g.dilation_x = static_dilation > 0 ? Expr(int(static_dilation)) : Expr(dilation_x);
        g.dilation_y = static_dilation > 0 ? Expr(int(static_dilation)) : Expr(dilation_y);
        g.pad_left = pad_left;
        g.pad_top = pad_top;
        g.trim_window = !get_target().has_gpu_feature() && cpu_trim_window && !using_autoscheduler();

        Expr act = activation;
        Func in = input;
        if (depth_kernel > 0) {
            in = Func("conv3d_input");
            Var c("c"), x("x"), y("y"), n("n");
            const int cg = depth_cg, taps = int(depth_kernel) * cg;  // input channels per group as conv2d sees them
            Expr group = c / taps, tap = (c % taps) / cg, channel = group * cg + c % cg;
            Expr z = (n % int(depth_out)) * int(depth_stride) + tap * int(depth_dilation) - int(depth_pad);
            Expr batch = n / int(depth_out);
            Expr load = input(channel, x, y, clamp(z, 0, int(depth_in) - 1) + int(depth_in) * batch);
            in(c, x, y, n) = select(z >= 0 && z < int(depth_in), load, blockfuse::from_f32(input.type(), 0.0f));
        }
        auto f = blockfuse::conv2d(
            in, weights, bias, g,
            [act](const Expr &a, const std::vector<Var> &) { return blockfuse::apply_activation(a, act); },
            output.type(), "conv2d");
        output(f.output.args()) = f.output(f.output.args());

        if (using_autoscheduler()) {
            set_estimates();  // the algorithm and its estimates only: the autoscheduler schedules it
        } else {
            // The output wrapper is what gets scheduled: alias the algorithm's output to it.
            f.output.compute_inline();
            blockfuse::Conv2dFuncs sched = f;
            sched.output = output;
            if (get_target().has_gpu_feature()) {
                blockfuse::Conv2dGpuKnobs kn;
                BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_KNOB_COPY)
                const bool static_window = static_kernel && static_stride > 0 && static_dilation > 0;
                if (stage_input && !static_window)
                    throw CompileError("stage_input=1 needs kernel_size, static_stride and static_dilation");
                blockfuse::schedule_conv2d_gpu(sched, kind, kn, static_kernel, output.dim(0).extent(), activation);
            } else {
                blockfuse::Conv2dCpuKnobs kn;
                BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_KNOB_COPY)
                blockfuse::schedule_conv2d_cpu(sched, kind, kn, static_kernel, output.dim(0).extent(), activation);
            }
        }

        // Shapes the kernel relies on; the runtime validates workloads before calling, these
        // turn anything that slips through into a Halide error instead of a bad access.
        if (aligned) {
            const int v = vec_k;
            // Without a declared base alignment Halide assumes the element size (2 bytes) and
            // every f16 load becomes a 16-bit load.
            input.set_host_alignment(16);
            weights.set_host_alignment(16);
            output.set_host_alignment(16);
            for (auto *b : {&input, &weights}) {
                (*b).dim(0).set_min(0);
                for (int d = 1; d < 4; ++d) (*b).dim(d).set_stride(((*b).dim(d).stride() / v) * v);
            }
            output.dim(0).set_min(0);
            for (int d = 1; d < 4; ++d) output.dim(d).set_stride((output.dim(d).stride() / v) * v);
        }
        if (static_channels > 0) {
            if (kind != ConvKind::depthwise || multiplier != 1 || !static_kernel)
                throw CompileError("static_channels needs kind=depthwise, multiplier=1 and kernel_size");
            const int C = static_channels;
            input.dim(0).set_bounds(0, C);
            input.dim(1).set_stride(C);
            output.dim(0).set_bounds(0, C);
            output.dim(1).set_stride(C);
            weights.dim(0).set_bounds(0, C);
            weights.dim(1).set_bounds(0, 1).set_stride(C);
            weights.dim(2).set_stride(C);
            weights.dim(3).set_stride(C * ks);
        }
        if (static_out_channels > 0) {
            const int k = static_out_channels;
            weights.dim(0).set_bounds(0, k);
            output.dim(0).set_bounds(0, k);
            bias.dim(0).set_bounds(0, k);
        }
        weights.dim(2).set_min(0);
        weights.dim(3).set_min(0);
        if (static_kernel) {
            weights.dim(2).set_extent(ks);
            weights.dim(3).set_extent(ks);
        }
    }

    void set_estimates() {
#define BLOCKFUSE_ESTIMATE_CHECK(name)                                                                                 \
    if (int(name) <= 0 && std::string(#name) != "est_pad_left" && std::string(#name) != "est_pad_top")                 \
        throw CompileError("autoscheduler: " #name " (the workload's shape) must be given, and positive");
        BLOCKFUSE_CONV2D_ESTIMATES(BLOCKFUSE_ESTIMATE_CHECK)
        const int ow = (est_w + 2 * est_pad_left - est_dilation_x * (est_s - 1) - 1) / est_stride_x + 1;
        const int oh = (est_h + 2 * est_pad_top - est_dilation_y * (est_r - 1) - 1) / est_stride_y + 1;
        input.set_estimates({{0, est_c}, {0, est_w}, {0, est_h}, {0, est_n}});
        weights.set_estimates({{0, est_k}, {0, int(est_c) / int(est_groups)}, {0, est_s}, {0, est_r}});
        bias.set_estimates({{0, est_k}});
        output.set_estimates({{0, est_k}, {0, ow}, {0, oh}, {0, est_n}});
        stride_x.set_estimate(int(est_stride_x));
        stride_y.set_estimate(int(est_stride_y));
        dilation_x.set_estimate(int(est_dilation_x));
        dilation_y.set_estimate(int(est_dilation_y));
        pad_left.set_estimate(int(est_pad_left));
        pad_top.set_estimate(int(est_pad_top));
        groups.set_estimate(int(est_groups));
        activation.set_estimate(0);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Conv2dGenerator, conv2d)
