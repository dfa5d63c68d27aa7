// Thin Generator over the tensor-core GEMM: the tiling and schedule knobs are GeneratorParams from the
// one knob declaration (schedules/gemm_knobs.h); the algorithm and schedules are plain functions.
#include "Halide.h"
#include "generators/gemm_algorithm.h"
#include "schedules/gemm_schedule.h"

namespace {
using namespace Halide;

class GemmGenerator : public Generator<GemmGenerator> {
public:
    GeneratorParam<Type> storage{"storage", Float(16)};  // float16 or bfloat16: the inputs' and output's type
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)
    // Tests only: 1 swaps A registers 1 and 2, a wrong fragment layout the reference checks must catch.
    GeneratorParam<int> fragment_mutation{"fragment_mutation", 0};

    Input<Buffer<uint16_t, 2>> a{"a"};             // (k, m) bits, rows of K rounded up to 8 elements, zeros past K
    Input<Buffer<uint16_t, 2>> b{"b"};             // (k, n) bits: the weights as N x K, rows as a's
    Input<Buffer<float, 1>> bias{"bias"};          // (n)
    Input<int> k_size{"k_size"};                   // K, the reduction length (at most a's row length)
    Input<int> activation{"activation"};           // generators/activation.h ids
    Output<Buffer<uint16_t, 2>> output{"output"};  // (n, m) bits

    void generate() {
        blockfuse::GemmKnobs kn;
        BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_COPY)
        blockfuse::check_gemm_knobs(kn);
        const Type et = storage;
        if (!(et == Float(16) || et == BFloat(16))) throw CompileError("gemm: storage must be float16 or bfloat16");
        const blockfuse::mma::Elem e = et == Float(16) ? blockfuse::mma::Elem::f16 : blockfuse::mma::Elem::bf16;
        blockfuse::GemmShape s{a.dim(1).extent(), b.dim(1).extent(), k_size, a.dim(0).extent()};
        auto f =
            blockfuse::gemm(a, b, bias, s, activation, blockfuse::gemm_tiling(kn), e, get_target(), fragment_mutation);
        output = f.output;
        blockfuse::schedule_gemm(f, kn, get_target());
        blockfuse::add_gemm_lowering(get_pipeline(), get_target(), "gemm", {f});
        // Rows start on 16-byte boundaries and hold whole 8-element groups (extents and row strides
        // multiples of 8, aligned bases), so a panel row's groups are aligned vector loads; runtime/gemm.cpp
        // lays its tensors out so.
        for (auto *buf : {&a, &b}) {
            buf->dim(0).set_min(0).set_extent(a.dim(0).extent() / 8 * 8);
            buf->dim(1).set_min(0).set_stride(buf->dim(1).stride() / 8 * 8);
            buf->set_host_alignment(16);
        }
        output.dim(0).set_min(0).dim(1).set_min(0).set_stride(output.dim(1).stride() / 8 * 8);
        output.set_host_alignment(16);
        output.dim(0).set_extent(b.dim(1).extent());
        output.dim(1).set_extent(a.dim(1).extent());
        bias.dim(0).set_min(0).set_extent(b.dim(1).extent());
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(GemmGenerator, gemm)
