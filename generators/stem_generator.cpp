// Thin Generator over the stem (3x3 s2 conv + ReLU, 3x3 s2 max pool); the strategy picks the schedule.
#include "Halide.h"
#include "generators/stem_algorithm.h"
#include "schedules/stem_schedule.h"

namespace {
using namespace Halide;
using blockfuse::StemStrategy;

class StemGenerator : public Generator<StemGenerator> {
public:
    GeneratorParam<StemStrategy> strategy{
        "strategy",
        StemStrategy::depth_first,
        {{"layer_by_layer", StemStrategy::layer_by_layer}, {"depth_first", StemStrategy::depth_first}}};
    GeneratorParam<int> channels{"channels", 3};
    GeneratorParam<int> out_channels{"out_channels", 64};
    GeneratorParam<Type> storage{"storage", Float(32)};
    // Schedule knobs from their declaration (schedules/stem_knobs.h).
    BLOCKFUSE_STEM_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)

    GeneratorInput<Buffer<>> *input = nullptr, *weights = nullptr, *bias = nullptr;
    GeneratorOutput<Buffer<>> *output = nullptr;

    void configure() {
        input = add_input<Buffer<>>("input", Type(storage), 4);      // (c, x, y, n)
        weights = add_input<Buffer<>>("weights", Type(storage), 4);  // (k, c, kx, ky)
        bias = add_input<Buffer<>>("bias", Float(32), 1);
        output = add_output<Buffer<>>("output", Type(storage), 4);  // (k, x, y, n)
    }

    void generate() {
        auto f = blockfuse::stem_algorithm(*input, *weights, *bias, input->dim(1).extent(), input->dim(2).extent(),
                                           channels, out_channels, storage);
        Func out = *output;
        out(f.pool.args()) = f.pool(f.pool.args());
        f.pool.compute_inline();
        f.pool = out;
        if (int(out_channels) % int(conv_vec)) {
            throw CompileError("stem: conv_vec = " + std::to_string(int(conv_vec)) +
                               " must divide out_channels = " + std::to_string(int(out_channels)));
        }
        blockfuse::StemKnobs kn;
        BLOCKFUSE_STEM_KNOBS(BLOCKFUSE_KNOB_COPY)
        blockfuse::schedule_stem(f, out_channels, strategy, kn, get_target().has_gpu_feature());
        input->dim(0).set_bounds(0, channels);
        weights->dim(0).set_bounds(0, out_channels);
        output->dim(0).set_bounds(0, out_channels);
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(StemGenerator, stem)
