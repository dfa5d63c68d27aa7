// Thin Generator over the tensor-core conv2d and conv3d (an implicit GEMM, generators/conv2d_tc_algorithm.h): the
// shape is static (GeneratorParams; the batch is the input's run-time extent), the tiling and schedule knobs those of
// the GEMM (schedules/gemm_knobs.h), scheduled by the GEMM's schedules.
#include "Halide.h"
#include "generators/conv2d_tc_algorithm.h"
#include "schedules/gemm_schedule.h"

namespace {
using namespace Halide;

class Conv2dTcGenerator : public Generator<Conv2dTcGenerator> {
public:
    GeneratorParam<std::string> strategy{"strategy", "tensor_cores"};  // the dispatch label, nothing else
    GeneratorParam<int> channels{"channels", 8}, height{"height", 8}, width{"width", 8},
        out_channels{"out_channels", 8};
    GeneratorParam<int> kernel_h{"kernel_h", 1}, kernel_w{"kernel_w", 1};
    GeneratorParam<int> stride_x{"stride_x", 1}, stride_y{"stride_y", 1}, dil_x{"dil_x", 1}, dil_y{"dil_y", 1};
    GeneratorParam<int> pad_l{"pad_l", 0}, pad_r{"pad_r", 0}, pad_t{"pad_t", 0}, pad_b{"pad_b", 0};
    // A conv3d: its depth, depth kernel, stride, dilation and padding (both sides); the input's last dimension is
    // then (z + depth b), the output's (oz + out_depth b).
    GeneratorParam<int> depth{"depth", 1}, kernel_d{"kernel_d", 1}, stride_d{"stride_d", 1}, dil_d{"dil_d", 1},
        pad_d{"pad_d", 0};
    // Grouped: a block-diagonal implicit GEMM (generators/conv2d_tc_algorithm.h), weights per output channel's window.
    GeneratorParam<int> groups{"groups", 1};
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)
    // Tests only: 1 swaps A registers 1 and 2, a wrong fragment layout the reference checks must catch.
    GeneratorParam<int> fragment_mutation{"fragment_mutation", 0};

    // Storage types from the automatic `input.type` / `output.type` params (float16 or bfloat16).
    Input<Buffer<void, 4>> input{"input"};          // (c, x, y, b)
    Input<Buffer<uint16_t, 2>> weights{"weights"};  // (kr, k) bits, kr = (ky * S + kx) * Cp + c (grouped: k's window)
    Input<Buffer<float, 1>> bias{"bias"};           // (k), BatchNorm folded in
    Input<int> activation{"activation"};            // generators/activation.h ids
    Output<Buffer<void, 4>> output{"output"};       // (k, x, y, b)

    void generate() {
        blockfuse::GemmKnobs kn;
        BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_COPY)
        blockfuse::check_gemm_knobs(kn);
        const Type et = input.type();
        if (!(et == Float(16) || et == BFloat(16)))
            throw CompileError("conv2d_tc: input.type must be float16 or bfloat16");
        if (output.type() != et) throw CompileError("conv2d_tc: output.type must be input.type");
        blockfuse::ConvTcShape cs{channels, height,   width,    out_channels, kernel_h, kernel_w, stride_x,
                                  stride_y, dil_x,    dil_y,    pad_l,        pad_r,    pad_t,    pad_b,
                                  depth,    kernel_d, stride_d, dil_d,        pad_d};
        if (cs.c <= 0 || cs.h <= 0 || cs.w <= 0 || cs.k <= 0 || cs.r <= 0 || cs.s <= 0 || cs.out_w() <= 0 ||
            cs.out_h() <= 0 || cs.d <= 0 || cs.t <= 0 || cs.stride_z <= 0 || cs.dil_z <= 0 || cs.pad_z < 0 ||
            cs.out_d() <= 0)
            throw CompileError("conv2d_tc: the shape has no output");
        cs.groups = groups;
        if (const std::string why = cs.windows().error(); !why.empty()) throw CompileError("conv2d_tc: " + why);
        const auto e = et == Float(16) ? blockfuse::mma::Elem::f16 : blockfuse::mma::Elem::bf16;
        // The input's last dimension holds whole images of `depth` planes (declared below).
        const Expr images = cs.d == 1 ? input.dim(3).extent() : input.dim(3).extent() / cs.d;
        auto f = blockfuse::conv2d_tc(input, weights, bias, cs, images, activation, blockfuse::gemm_tiling(kn), e,
                                      get_target(), fragment_mutation, et);
        output = f.output;
        blockfuse::schedule_gemm(f, kn, get_target());
        blockfuse::add_gemm_lowering(get_pipeline(), get_target(), "gemm", {f});
        // Dense NHWC tensors, 16-byte aligned: with C a multiple of 8 a group of 8 channels is one aligned vector.
        input.dim(0).set_min(0).set_extent(cs.c).set_stride(1);
        input.dim(1).set_min(0).set_extent(cs.w).set_stride(cs.c);
        input.dim(2).set_min(0).set_extent(cs.h).set_stride(cs.c * cs.w);
        input.dim(3).set_min(0).set_stride(cs.c * cs.w * cs.h);
        if (cs.d > 1) input.dim(3).set_extent(images * cs.d);
        input.set_host_alignment(16);
        weights.dim(0).set_min(0).set_extent(cs.reduction()).set_stride(1);
        weights.dim(1).set_min(0).set_extent(cs.k).set_stride(cs.reduction());
        weights.set_host_alignment(16);
        bias.dim(0).set_min(0).set_extent(cs.k);
        output.dim(0).set_min(0).set_extent(cs.k).set_stride(1);
        output.dim(1).set_min(0).set_extent(cs.out_w()).set_stride(cs.k);
        output.dim(2).set_min(0).set_extent(cs.out_h()).set_stride(cs.k * cs.out_w());
        output.dim(3).set_min(0).set_extent(images * cs.out_d()).set_stride(cs.k * cs.out_w() * cs.out_h());
        output.set_host_alignment(16);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(Conv2dTcGenerator, conv2d_tc)
