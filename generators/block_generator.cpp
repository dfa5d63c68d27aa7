// Thin Generator over the fused-block algorithm: the block's structure and static channel
// counts are GeneratorParams (static shapes give better code), the strategy picks the schedule.
// blocks > 1: a stage of that many identical blocks, each block's input the previous one's output.
#include "Halide.h"
#include "generators/block_algorithm.h"
#include "generators/conv2d_tc_algorithm.h"
#include "generators/ffn_tc_algorithm.h"
#include "schedules/block_schedule.h"
#include "schedules/fused_tc_schedule.h"
#include "schedules/gemm_schedule.h"

namespace {
using namespace Halide;
using blockfuse::BlockFamily;
using blockfuse::BlockStrategy;

class BlockGenerator : public Generator<BlockGenerator> {
public:
    GeneratorParam<BlockFamily> family{"family",
                                       BlockFamily::mbconv,
                                       {{"mbconv", BlockFamily::mbconv},
                                        {"fused_mbconv", BlockFamily::fused_mbconv},
                                        {"ffn", BlockFamily::ffn},
                                        {"convfirst", BlockFamily::convfirst},
                                        {"convnext", BlockFamily::convnext}}};
    GeneratorParam<BlockStrategy> strategy{"strategy",
                                           BlockStrategy::fused,
                                           {{"layer_by_layer", BlockStrategy::layer_by_layer},
                                            {"fused", BlockStrategy::fused},
                                            {"depth_first", BlockStrategy::depth_first},
                                            {"layer_by_layer_tc", BlockStrategy::layer_by_layer_tc},
                                            {"fused_tc", BlockStrategy::fused_tc}}};
    GeneratorParam<int> blocks{"blocks", 1};
    GeneratorParam<int> se{"se", 0};  // mbconv: Squeeze-Excitation after the depthwise layer
    GeneratorParam<int> channels{"channels", 24};
    GeneratorParam<int> expansion{"expansion", 6};
    GeneratorParam<int> kernel_size{"kernel_size", 3};
    GeneratorParam<int> stride{"stride", 1};
    GeneratorParam<int> act{"act", 2};  // Activation id: 1 relu, 2 relu6, 3 silu, 4 gelu
    GeneratorParam<Type> storage{"storage", Float(32)};
    // The batch and image size, for Halide's autoschedulers only (autoscheduler=NAME,
    // runtime/autoscheduler.h): the estimates they plan for; the channels are static already.
    GeneratorParam<int> est_n{"est_n", 0}, est_h{"est_h", 0}, est_w{"est_w", 0};
    // layer_by_layer_tc, fused_tc: the input image's size, static (the GEMMs index pixels by constant divisions).
    GeneratorParam<int> height{"height", 0}, width{"width", 0};
    // fused_tc, tests only: a layout the checks must catch. FFN: 2 swaps two of the hidden A registers
    // (generators/ffn_tc_algorithm.h); MBConv: 3 reads the depthwise rows one pixel off (mbconv_tc_algorithm.h);
    // ConvNeXt: 4 leaves the last channel group out of the LayerNorm's statistics.
    GeneratorParam<int> fragment_mutation{"fragment_mutation", 0};
    // Schedule knobs, one GeneratorParam each, from their declaration (schedules/block_knobs.h): the
    // block-level ones, and the conv2d mapping of each kind of layer (layer by layer), prefixed.
    BLOCKFUSE_BLOCK_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)
#define BLOCKFUSE_PW_PARAM(...) BLOCKFUSE_KNOB_GENERATOR_PARAM_PREFIXED(pw_, __VA_ARGS__)
#define BLOCKFUSE_FULL_PARAM(...) BLOCKFUSE_KNOB_GENERATOR_PARAM_PREFIXED(full_, __VA_ARGS__)
#define BLOCKFUSE_LAYER_PARAM(...) BLOCKFUSE_KNOB_GENERATOR_PARAM_PREFIXED(layer_, __VA_ARGS__)
    BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_PW_PARAM)
    BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_FULL_PARAM)
    BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_LAYER_PARAM)
    BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_PW_PARAM)
    BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_FULL_PARAM)
    BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_LAYER_PARAM)
    // layer_by_layer_tc: dense layer i's implicit-GEMM tiling (schedules/gemm_knobs.h), prefixed tc<i>_.
#define BLOCKFUSE_TC0_PARAM(...) BLOCKFUSE_KNOB_GENERATOR_PARAM_PREFIXED(tc0_, __VA_ARGS__)
#define BLOCKFUSE_TC1_PARAM(...) BLOCKFUSE_KNOB_GENERATOR_PARAM_PREFIXED(tc1_, __VA_ARGS__)
#define BLOCKFUSE_TC2_PARAM(...) BLOCKFUSE_KNOB_GENERATOR_PARAM_PREFIXED(tc2_, __VA_ARGS__)
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_TC0_PARAM)
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_TC1_PARAM)
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_TC2_PARAM)
    static_assert(blockfuse::kMaxBlockLayers == 3, "one tc<i>_ knob set per layer");

    // Arguments, in ABI order: input, then (weights_i, bias_i) per layer of each block, then
    // output. Added in configure() because the number of layers depends on the family.
    GeneratorInput<Buffer<>> *input = nullptr;
    std::vector<GeneratorInput<Buffer<>> *> weights, biases, se_weights, se_biases;
    GeneratorOutput<Buffer<>> *output = nullptr;

    void configure() {
        auto spec = make_spec();
        if (blocks < 1 || (blocks > 1 && spec.cout != spec.c))
            throw CompileError("blocks = " + std::to_string(int(blocks)) +
                               ": a stage needs blocks that keep their shape");
        if (spec.has_se() && (blocks > 1 || strategy == BlockStrategy::depth_first))
            throw CompileError("se = 1 is built for single blocks (layer_by_layer or fused)");
        if (tensor_core_strategy()) {
            const std::string name = blockfuse::block_strategy_name(strategy);
            if (!(Type(storage) == Float(16) || Type(storage) == BFloat(16)))
                throw CompileError("strategy " + name + ": storage must be float16 or bfloat16 (mma.sync)");
            if (height <= 0 || width <= 0)
                throw CompileError("strategy " + name + " needs the image size: height and width > 0");
        }
        input = add_input<Buffer<>>("input", Type(storage), 4);  // (c, x, y, n)
        for (int blk = 0; blk < blocks; ++blk) {
            const std::string pre = blocks > 1 ? "b" + std::to_string(blk) + "_" : "";
            for (size_t i = 0; i < spec.layers.size(); ++i) {
                const std::string name = pre + "weights" + std::to_string(i);
                if (on_tensor_cores(spec, i))  // (kr, k) bits, as runtime/conv2d_tc.h lays them out
                    weights.push_back(add_input<Buffer<>>(name, UInt(16), 2));
                else weights.push_back(add_input<Buffer<>>(name, Type(storage), 4));  // (k, cg, kx, ky)
                biases.push_back(add_input<Buffer<>>(pre + "bias" + std::to_string(i), Float(32), 1));
            }
        }
        for (int i = 0; spec.has_se() && i < 2; ++i) {  // reduce, expand
            se_weights.push_back(add_input<Buffer<>>("se_weights" + std::to_string(i), Type(storage), 4));
            se_biases.push_back(add_input<Buffer<>>("se_bias" + std::to_string(i), Float(32), 1));
        }
        output = add_output<Buffer<>>("output", Type(storage), 4);
    }

    blockfuse::BlockSpec make_spec() const {
        return blockfuse::make_block_spec(family, channels, expansion, kernel_size, stride, act, se != 0);
    }
    bool tensor_core_strategy() const {
        return strategy == BlockStrategy::layer_by_layer_tc || strategy == BlockStrategy::fused_tc;
    }
    bool on_tensor_cores(const blockfuse::BlockSpec &spec, size_t layer) const {
        return tensor_core_strategy() && blockfuse::tensor_core_layer(spec.layers[layer], knobs());
    }

    // fused_tc: each block in one kernel on the tensor cores, its own schedule (the generator's knob check has refused
    // every other family and tiling): the FFN; FusedMBConv's k x k expand as the FFN's expand over im2col rows;
    // ConvFirst's grouped layer and ConvNeXt's depthwise layer and LayerNorm computed into the FFN's X rows; MBConv's
    // three layers around a tile and its halo. A stage's blocks one after another, each block's output in global
    // memory for the next (per-block fusion).
    void generate_fused_tc(const blockfuse::BlockSpec &spec, const blockfuse::BlockKnobs &kn) {
        const auto elem = Type(storage) == Float(16) ? blockfuse::mma::Elem::f16 : blockfuse::mma::Elem::bf16;
        const std::string kernel = "block (fused_tc)";
        const size_t L = spec.layers.size();
        // The first layer: ConvFirst's, ConvNeXt's and FusedMBConv's k x k (its stride, same padding, the block's);
        // MBConv's stride is in its geometry; a stage's blocks have stride 1.
        const blockfuse::LayerSpec &first = spec.layers[0];
        std::vector<blockfuse::MbconvTcFuncs> mbconv;
        std::vector<blockfuse::FfnTcFuncs> ffn;
        // One chunk (the whole hidden width) has no next chunk: Halide drops the loop, and the prefetch with it.
        const bool prefetch = kn.tc_prefetch != 0 && spec.hidden / kn.chunk > 1;
        const blockfuse::FfnTcTiling t{kn.tc_warps, kn.tc_warp_m, kn.chunk, prefetch};
        Func x = *input;
        int ih = height, iw = width;  // block blk's input image
        for (int blk = 0; blk < blocks; ++blk) {
            const std::string pre = blocks > 1 ? "b" + std::to_string(blk) + "_" : "";
            auto w = [&](size_t i) { return Func(*weights[blk * L + i]); };
            auto b = [&](size_t i) { return Func(*biases[blk * L + i]); };
            Func y;
            if (spec.family == BlockFamily::mbconv) {
                const blockfuse::MbconvTcGeometry knobs_g = blockfuse::mbconv_tc_geometry(spec, kn);
                const blockfuse::MbconvTcGeometry g =
                    knobs_g.within(blockfuse::mbconv_tc_out(ih, knobs_g), blockfuse::mbconv_tc_out(iw, knobs_g));
                const blockfuse::MbconvTcShape s{ih, iw, blockfuse::Activation(first.act), spec.residual};
                auto instance = [&](const std::string &name, const Func &gate) {
                    return blockfuse::mbconv_tc(x, w(0), b(0), w(1), b(1), w(2), b(2), g, s, input->dim(3).extent(),
                                                elem, Type(storage), get_target(), fragment_mutation, name, gate);
                };
                Func gate;
                if (spec.has_se()) {  // Squeeze-Excitation, split around the mean: a pooling kernel, then the gate
                    mbconv.push_back(instance(pre + "se_pool_", Func()));
                    Func sum;
                    const Func mean = blockfuse::mbconv_tc_se_mean(mbconv.back(), g, s, sum, pre);
                    blockfuse::SEFuncs se;
                    std::vector<Func> sw, sb;
                    for (size_t i = 0; i < se_weights.size(); ++i)
                        sw.push_back(*se_weights[i]), sb.push_back(*se_biases[i]);
                    blockfuse::se_gate(se, mean, spec, sw, sb, pre);
                    blockfuse::schedule_mbconv_tc_se(mbconv.back(), g, sum, se, get_target());
                    gate = se.gate;
                }
                mbconv.push_back(instance(pre, gate));
                blockfuse::schedule_mbconv_tc(mbconv.back(), g, s.residual, get_target());
                y = mbconv.back().output;
            } else {
                const bool has_prologue = spec.family == BlockFamily::convfirst || spec.family == BlockFamily::convnext;
                const size_t f0 = has_prologue ? 1 : 0;  // the FFN's first layer
                blockfuse::FfnTcPrologue prologue;
                const int oh = (ih - 1) / first.stride + 1, ow = (iw - 1) / first.stride + 1;
                if (has_prologue)  // ConvFirst's grouped layer, ConvNeXt's depthwise layer and LayerNorm
                    prologue = {w(0),
                                b(0),
                                first.ks,
                                first.stride,
                                ih,
                                iw,
                                spec.family == BlockFamily::convnext,
                                kn.tc_grouped != 0};
                blockfuse::FfnTcShape s{spec.c, spec.hidden, spec.cout,
                                        oh,     ow,          blockfuse::Activation(spec.layers[f0].act)};
                if (spec.family == BlockFamily::fused_mbconv)  // the expand is the block's k x k convolution
                    s.expand_ks = first.ks, s.expand_stride = first.stride, s.in_h = ih, s.in_w = iw;
                ffn.push_back(blockfuse::ffn_tc(x, w(f0), b(f0), w(f0 + 1), b(f0 + 1), s, input->dim(3).extent(), t,
                                                elem, Type(storage), get_target(), spec.residual ? x : Func(),
                                                fragment_mutation, prologue, pre));
                blockfuse::schedule_ffn_tc(ffn.back(), s, t, blockfuse::kFusedTcPad, get_target());
                y = ffn.back().output;
            }
            ih = (ih - 1) / first.stride + 1, iw = (iw - 1) / first.stride + 1;
            if (blk + 1 < blocks) y.compute_root();
            x = y;
        }
        *output = x;
        if (!mbconv.empty()) blockfuse::add_mbconv_tc_lowering(get_pipeline(), get_target(), kernel, mbconv);
        if (!ffn.empty()) blockfuse::add_ffn_tc_lowering(get_pipeline(), get_target(), kernel, ffn, t);
    }

    // layer_by_layer_tc: layer i of block blk as an implicit GEMM, its input image of iw x ih (static).
    std::optional<blockfuse::GemmFuncs> implicit_gemm_layer(const blockfuse::BlockSpec &spec,
                                                            const blockfuse::BlockKnobs &kn, int blk, size_t i, int iw,
                                                            int ih, const Func &in, const Func &residual) {
        if (!on_tensor_cores(spec, i)) return std::nullopt;
        const blockfuse::LayerSpec &L = spec.layers[i];
        const int pad = L.ks / 2;
        blockfuse::ConvTcShape cs{L.in_ch, ih, iw, L.out_ch, L.ks, L.ks, L.stride, L.stride, 1, 1, pad, pad, pad, pad};
        cs.groups = L.groups;  // grouped (tc_grouped): the block-diagonal GEMM
        const auto elem = Type(storage) == Float(16) ? blockfuse::mma::Elem::f16 : blockfuse::mma::Elem::bf16;
        const size_t j = blk * spec.layers.size() + i;
        blockfuse::GemmFuncs g =
            blockfuse::conv2d_tc(in, Func(*weights[j]), Func(*biases[j]), cs, input->dim(3).extent(), Expr(L.act),
                                 blockfuse::gemm_tiling(kn.tensor_core[i]), elem, get_target(), 0, Type(storage),
                                 residual, "b" + std::to_string(blk) + "_layer" + std::to_string(i) + "_");
        blockfuse::set_gemm_pipelining(g, kn.tensor_core[i]);  // the copy the lowering pass gets carries it
        return g;
    }

    blockfuse::BlockKnobs knobs() const {
        blockfuse::BlockKnobs kn;
        BLOCKFUSE_BLOCK_KNOBS(BLOCKFUSE_KNOB_COPY)
#define BLOCKFUSE_COPY_MAPPING(field, prefix, name) kn.field.name = prefix##name;
#define BLOCKFUSE_COPY_PW(name, ...) BLOCKFUSE_COPY_MAPPING(pointwise_gpu, pw_, name)
#define BLOCKFUSE_COPY_FULL(name, ...) BLOCKFUSE_COPY_MAPPING(full_gpu, full_, name)
#define BLOCKFUSE_COPY_LAYER(name, ...) BLOCKFUSE_COPY_MAPPING(layer_gpu, layer_, name)
        BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_COPY_PW)
        BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_COPY_FULL)
        BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_COPY_LAYER)
#define BLOCKFUSE_COPY_PW_CPU(name, ...) BLOCKFUSE_COPY_MAPPING(pointwise_cpu, pw_, name)
#define BLOCKFUSE_COPY_FULL_CPU(name, ...) BLOCKFUSE_COPY_MAPPING(full_cpu, full_, name)
#define BLOCKFUSE_COPY_LAYER_CPU(name, ...) BLOCKFUSE_COPY_MAPPING(layer_cpu, layer_, name)
        BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_COPY_PW_CPU)
        BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_COPY_FULL_CPU)
        BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_COPY_LAYER_CPU)
#define BLOCKFUSE_COPY_TC0(name, ...) BLOCKFUSE_COPY_MAPPING(tensor_core[0], tc0_, name)
#define BLOCKFUSE_COPY_TC1(name, ...) BLOCKFUSE_COPY_MAPPING(tensor_core[1], tc1_, name)
#define BLOCKFUSE_COPY_TC2(name, ...) BLOCKFUSE_COPY_MAPPING(tensor_core[2], tc2_, name)
        BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_COPY_TC0)
        BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_COPY_TC1)
        BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_COPY_TC2)
        // The chunk must divide the hidden width: a partial last chunk made the GPU schedule's
        // hidden layers read weights past the end (seen on PoCL with hidden 30, chunk 8), so the
        // largest divisor of the hidden width not above the requested chunk is used.
        kn.chunk = blockfuse::effective_chunk(make_spec().hidden, chunk);
        return kn;
    }

    void generate() {
        auto spec = make_spec();
        const blockfuse::BlockKnobs kn = knobs();
        if (tensor_core_strategy() && using_autoscheduler())
            throw CompileError("strategy " + std::string(blockfuse::block_strategy_name(strategy)) +
                               " is scheduled by its own schedule (the mma.sync fragments need it), not by an "
                               "autoscheduler");
        const char *strategy_name = blockfuse::block_strategy_name(strategy);
        if (!using_autoscheduler())
            if (const std::string why =
                    blockfuse::block_knobs_error(spec, strategy_name, kn, get_target().has_gpu_feature());
                !why.empty())
                throw CompileError(why);
        if (strategy == BlockStrategy::fused_tc) generate_fused_tc(spec, kn);
        else generate_stage(spec, kn);
        constrain_buffers(spec);
    }

    void generate_stage(const blockfuse::BlockSpec &spec, const blockfuse::BlockKnobs &kn) {
        const size_t L = spec.layers.size();
        const char *strategy_name = blockfuse::block_strategy_name(strategy);
        std::vector<blockfuse::BlockFuncs> stage;
        std::vector<blockfuse::GemmFuncs> gemms;  // the tensor-core layers, for their lowering pass
        Func x = *input;
        for (int blk = 0; blk < blocks; ++blk) {
            std::vector<Func> w, b;
            for (size_t i = 0; i < L; ++i) {
                w.push_back(*weights[blk * L + i]);
                b.push_back(*biases[blk * L + i]);
            }
            std::vector<Func> sw, sb;
            for (size_t i = 0; i < se_weights.size(); ++i) {
                sw.push_back(*se_weights[i]);
                sb.push_back(*se_biases[i]);
            }
            blockfuse::TensorCoreLayer tc;
            if (strategy == BlockStrategy::layer_by_layer_tc)
                tc = [&, blk](size_t i, const Func &in, const Func &residual) {
                    int iw = width, ih = height;  // layer i's input image (same padding)
                    for (size_t j = 0; j < i; ++j)
                        iw = (iw - 1) / spec.layers[j].stride + 1, ih = (ih - 1) / spec.layers[j].stride + 1;
                    auto g = implicit_gemm_layer(spec, kn, blk, i, iw, ih, in, residual);
                    if (g) gemms.push_back(*g);
                    return g;
                };
            stage.push_back(blockfuse::block_algorithm(x, w, b, spec, input->dim(1).extent(), input->dim(2).extent(),
                                                       storage, "b" + std::to_string(blk) + "_", sw, sb, tc));
            x = stage.back().layers.back().output;
        }
        if (stage.back().tensor_core.back()) {
            // The last layer's GEMM is the output itself (its scatter store cannot be inlined into a copy).
            *output = x;
        } else {
            Func last = x, out = *output;
            out(last.args()) = last(last.args());
            if (!using_autoscheduler()) {
                last.compute_inline();
                stage.back().layers.back().output = out;
            }
        }
        if (using_autoscheduler()) {  // the algorithm and its estimates only: the autoscheduler schedules it
            set_estimates(spec);
        } else {
            blockfuse::schedule_stage(stage, spec, strategy, kn, get_target());
            blockfuse::add_gemm_lowering(get_pipeline(), get_target(), "block (" + std::string(strategy_name) + ")",
                                         gemms);
        }
    }

    void constrain_buffers(const blockfuse::BlockSpec &spec) {
        const size_t L = spec.layers.size();
        // Static channel counts: the runtime passes matching buffers (checked by Halide too).
        // Dense NHWC / (k, cg, kx, ky) buffers with static channel counts: every channel vector
        // is then provably aligned (unaligned f16 vectors give wrong results through Halide 21's
        // PTX backend on the H200: layer-by-layer f16 mbconv, docs/halide-21.md).
        auto dense = [](GeneratorInput<Buffer<>> &b, int inner) {
            b.set_host_alignment(16);
            b.dim(0).set_bounds(0, inner);
            b.dim(1).set_stride(inner);
            for (int d = 2; d < b.dimensions(); ++d) b.dim(d).set_stride(b.dim(d - 1).stride() * b.dim(d - 1).extent());
        };
        dense(*input, spec.c);
        for (size_t i = 0; i < weights.size(); ++i) {
            const blockfuse::LayerSpec &l = spec.layers[i % L];
            if (!on_tensor_cores(spec, i % L)) {
                dense(*weights[i], l.out_ch);
                continue;
            }
            // ConvTcShape::reduction()
            const int kr = blockfuse::ConvWindows{l.in_ch, l.out_ch, l.groups}.reduction(l.ks * l.ks);
            weights[i]->set_host_alignment(16);
            weights[i]->dim(0).set_bounds(0, kr).set_stride(1);
            weights[i]->dim(1).set_bounds(0, l.out_ch).set_stride(kr);
        }
        for (size_t i = 0; i < se_weights.size(); ++i)
            dense(*se_weights[i], i == 0 ? spec.se_ch : spec.layers[spec.se_after].out_ch);
        output->set_host_alignment(16);
        output->dim(0).set_bounds(0, spec.cout);
        output->dim(1).set_stride(spec.cout);
        for (int d = 2; d < 4; ++d)
            output->dim(d).set_stride(output->dim(d - 1).stride() * output->dim(d - 1).extent());
    }

    void set_estimates(const blockfuse::BlockSpec &spec) {
        if (est_n <= 0 || est_h <= 0 || est_w <= 0)
            throw CompileError(
                "autoscheduler: est_n, est_h and est_w (the workload's shape) must be given, and positive");
        input->set_estimates({{0, spec.c}, {0, est_w}, {0, est_h}, {0, est_n}});
        const size_t L = spec.layers.size();
        int oh = est_h, ow = est_w;
        for (int blk = 0; blk < blocks; ++blk)
            for (size_t i = 0; i < L; ++i) {
                const blockfuse::LayerSpec &l = spec.layers[i];
                weights[blk * L + i]->set_estimates({{0, l.out_ch}, {0, l.in_ch / l.groups}, {0, l.ks}, {0, l.ks}});
                biases[blk * L + i]->set_estimates({{0, l.out_ch}});
                if (blk == 0) oh = (oh - 1) / l.stride + 1, ow = (ow - 1) / l.stride + 1;  // same padding
            }
        for (size_t i = 0; i < se_weights.size(); ++i) {
            const int hidden = spec.layers[spec.se_after].out_ch, out_ch = i == 0 ? spec.se_ch : hidden;
            se_weights[i]->set_estimates({{0, out_ch}, {0, i == 0 ? hidden : spec.se_ch}, {0, 1}, {0, 1}});
            se_biases[i]->set_estimates({{0, out_ch}});
        }
        output->set_estimates({{0, spec.cout}, {0, ow}, {0, oh}, {0, est_n}});
    }
};

}  // namespace

HALIDE_REGISTER_GENERATOR(BlockGenerator, block)
