// The FFN fused on tensor cores (strategy fused_tc, generators/ffn_tc_algorithm.h), alone and as ConvFirst's (its
// grouped k x k computed into the FFN's input rows: stride 2 on odd images, 1x1 images all padding but the centre,
// k = 5): random shapes (N = 1, 1x1 and odd images, so that the pixels are no whole thread blocks; every
// activation; f16 and bf16) on random tilings
// (chunks of 16 to 64, 1 to 8 warps of 16 or 32 pixels, the chunk loop pipelined or not) against the float64 reference with a poisoned output, on
// the CPU (mma.sync emulated from the ISA tables) or, with BLOCKFUSE_TEST_DEVICES=cuda, on the GPU (kernels from a
// cache filled where Halide is, BLOCKFUSE_TEST_FILL_ONLY=1); a wrong mapping of the expand's accumulators onto the
// project's A fragments caught; which blocks have the strategy; its launch checks.
#define CATCH_CONFIG_RUNNER
#include "runtime/block.h"
#include "runtime/dispatch.h"
#include "schedules/block_knobs.h"
#include "schedules/heuristics.h"
#include "tests/common/block_tc_cases.h"
#include "tests/common/check_kernel.h"
#include "tests/common/random_shapes.h"
#include "tests/common/test_env.h"
#include <catch2/catch.hpp>
#include <iostream>

using namespace blockfuse;

namespace {

std::vector<test::KnobCase> cases(uint64_t seed, int random_count) {
    std::vector<test::KnobCase> out{
        // one pixel: a single thread block of which one row is real
        {"ffn:n=1,c=16,h=1,w=1,e=1,act=relu,dtype=f16", {{"chunk", 16}, {"tc_warps", 1}, {"tc_warp_m", 16}}},
        // 189 pixels over blocks of 64 (two m-tiles per warp), a hidden width of 96 in chunks of 32, GELU (erf)
        {"ffn:n=3,c=48,h=7,w=9,e=2,act=gelu,dtype=bf16", {{"chunk", 32}, {"tc_warps", 2}, {"tc_warp_m", 32}}},
        // fewer pixels than one block of 4 warps, one chunk of the whole hidden width
        {"ffn:n=2,c=32,h=5,w=5,e=2,act=silu,dtype=f16", {{"chunk", 64}, {"tc_warps", 4}, {"tc_warp_m", 16}}},
        // the chunk loop pipelined (schedules/panel_prefetch.h): three chunks, the last reloading its own panels
        {"ffn:n=1,c=16,h=3,w=11,e=3,act=relu6,dtype=bf16",
         {{"chunk", 16}, {"tc_warps", 2}, {"tc_warp_m", 16}, {"tc_prefetch", 1}}},
        // ConvFirst: a 1x1 image (the window's padding everywhere but its centre), with the residual
        {"convfirst:n=2,c=16,h=1,w=1,e=2,k=3,stride=1,act=relu,dtype=f16", {{"chunk", 16}, {"tc_warps", 1}}},
        // stride 2 on an odd image (4 x 5 outputs, no residual), two groups per 16 channels
        {"convfirst:n=3,c=32,h=7,w=9,e=2,k=3,stride=2,act=relu,dtype=bf16",
         {{"chunk", 32}, {"tc_warps", 2}, {"tc_warp_m", 32}}},
        // a 5 x 5 window over image borders, the chunk loop pipelined
        {"convfirst:n=1,c=48,h=6,w=5,e=2,k=5,stride=1,act=relu,dtype=f16",
         {{"chunk", 32}, {"tc_warps", 4}, {"tc_warp_m", 16}, {"tc_prefetch", 1}}},
        // ConvFirst's grouped layer on mma (tc_grouped): a 1x1 image (every tap but the centre padding), the residual
        {"convfirst:n=2,c=16,h=1,w=1,e=2,k=3,stride=1,act=relu,dtype=f16",
         {{"chunk", 16}, {"tc_warps", 1}, {"tc_grouped", 1}}},
        // stride 2 on an odd image over blocks of 64 pixels, two m-tiles a warp, bf16
        {"convfirst:n=3,c=32,h=7,w=9,e=2,k=3,stride=2,act=relu,dtype=bf16",
         {{"chunk", 32}, {"tc_warps", 2}, {"tc_warp_m", 32}, {"tc_grouped", 1}}},
        // a 5x5 window (25 taps: 13 K steps, the last half zeros) over image borders, the chunk loop pipelined
        {"convfirst:n=1,c=48,h=6,w=5,e=2,k=5,stride=1,act=relu,dtype=f16",
         {{"chunk", 32}, {"tc_warps", 4}, {"tc_warp_m", 16}, {"tc_prefetch", 1}, {"tc_grouped", 1}}},
        // a 1x1 window (one tap: one K step, half zeros)
        {"convfirst:n=2,c=16,h=5,w=3,e=3,k=1,stride=1,act=relu,dtype=bf16",
         {{"chunk", 16}, {"tc_warps", 2}, {"tc_grouped", 1}}},
        // FusedMBConv: the 3x3 expand over a 1x1 image (im2col rows all zeros but the centre tap), the residual
        {"fused_mbconv:n=2,c=16,h=1,w=1,e=4,k=3,stride=1,act=silu,dtype=f16", {{"chunk", 32}, {"tc_warps", 1}}},
        // stride 2 on an odd image (no residual), 3 channel groups a tap (K steps across taps' groups), bf16
        {"fused_mbconv:n=3,c=48,h=9,w=7,e=2,k=3,stride=2,act=relu6,dtype=bf16",
         {{"chunk", 32}, {"tc_warps", 2}, {"tc_warp_m", 32}}},
        // a 5x5 expand over image borders, odd pixels over blocks of 64, the chunk loop pipelined
        {"fused_mbconv:n=1,c=32,h=6,w=7,e=2,k=5,stride=1,act=gelu,dtype=f16",
         {{"chunk", 16}, {"tc_warps", 4}, {"tc_warp_m", 16}, {"tc_prefetch", 1}}},
        // ConvNeXt: the 7x7 window over a 1x1 image (all padding but the centre: LayerNorm of the bias alone)
        {"convnext:n=2,c=16,h=1,w=1,e=4,k=7,stride=1,act=gelu,dtype=f16", {{"chunk", 32}, {"tc_warps", 1}}},
        // odd images over blocks of 64 pixels, 48 channels (6 groups of 8 in the LayerNorm), bf16
        {"convnext:n=3,c=48,h=9,w=7,e=4,k=7,stride=1,act=gelu,dtype=bf16",
         {{"chunk", 64}, {"tc_warps", 2}, {"tc_warp_m", 32}}},
        // GELU's erf form (torchvision's ConvNeXt), division-free in the chunk loop
        {"convnext:n=2,c=32,h=5,w=6,e=4,k=7,stride=1,act=gelu_erf,dtype=f16", {{"chunk", 32}, {"tc_warps", 1}}},
        // stride 2 (no residual), a 3x3 window, the chunk loop pipelined
        {"convnext:n=1,c=32,h=9,w=8,e=2,k=3,stride=2,act=relu,dtype=f16",
         {{"chunk", 16}, {"tc_warps", 4}, {"tc_warp_m", 16}, {"tc_prefetch", 1}}},
        // stages: two FFN blocks with the chunk loops pipelined, three ConvFirst blocks on an odd image, two
        // FusedMBConv blocks (each block's output the next one's input and residual)
        {"ffn:n=2,c=32,h=3,w=7,e=2,blocks=2,act=relu,dtype=bf16",
         {{"chunk", 16}, {"tc_warps", 2}, {"tc_warp_m", 16}, {"tc_prefetch", 1}}},
        {"convfirst:n=1,c=16,h=5,w=9,e=2,k=3,stride=1,blocks=3,act=relu,dtype=f16", {{"chunk", 16}, {"tc_warps", 2}}},
        {"convfirst:n=2,c=32,h=3,w=7,e=2,k=3,stride=1,blocks=2,act=relu,dtype=bf16",
         {{"chunk", 16}, {"tc_warps", 1}, {"tc_grouped", 1}}},
        {"fused_mbconv:n=2,c=16,h=4,w=5,e=2,k=3,stride=1,blocks=2,act=silu,dtype=f16",
         {{"chunk", 32}, {"tc_warps", 1}}},
    };
    std::mt19937_64 r(seed);
    using test::one_of;
    using test::uniform;
    for (int i = 0; i < random_count; ++i) {
        const int c = 16 * uniform(r, 1, 4), e = uniform(r, 1, 4);
        const std::string family = one_of<std::string>(r, {"ffn", "fused_mbconv", "convfirst", "convnext"});
        const bool convfirst = family == "convfirst";  // ConvFirst uses ReLU
        const std::string act =
            convfirst ? "relu" : one_of<std::string>(r, {"relu", "relu6", "silu", "gelu", "gelu_erf"});
        const std::vector<int> windows =
            convfirst || family == "fused_mbconv" ? std::vector<int>{1, 3, 5} : std::vector<int>{3, 5, 7};
        const std::string window =
            family != "ffn" ? ",k=" + std::to_string(one_of(r, windows)) + ",stride=" + std::to_string(uniform(r, 1, 2))
                            : "";
        const std::string key = family + ":n=" + std::to_string(uniform(r, 1, 3)) + ",c=" + std::to_string(c) +
                                ",h=" + std::to_string(uniform(r, 1, 9)) + ",w=" + std::to_string(uniform(r, 1, 9)) +
                                ",e=" + std::to_string(e) + window + ",act=" + act +
                                ",dtype=" + one_of<std::string>(r, {"f16", "bf16"});
        std::map<std::string, int> knobs{{"chunk", one_of(r, std::vector<int>{16, 32, 48, 64})},
                                         {"tc_warps", one_of(r, std::vector<int>{1, 2, 4, 8})},
                                         {"tc_warp_m", one_of(r, std::vector<int>{16, 32})},
                                         {"tc_prefetch", uniform(r, 0, 1)}};
        if (convfirst) knobs["tc_grouped"] = uniform(r, 0, 1);  // its grouped layer on CUDA cores or on mma
        const BlockSpec spec = parse_block(key).spec();
        if (!fused_tc_error(spec, block_knobs_from(knobs)).empty())
            knobs["chunk"] = 16;  // a chunk whose divisor of the hidden width is no multiple of 16
        test::fit_fused_tc_shared(spec, knobs);
        out.push_back({key, knobs});
    }
    return out;
}

}  // namespace

TEST_CASE("random fused_tc FFN-family tilings fit the smallest target's shared memory", "[blocks][ffn_tc]") {
    test::require_fused_tc_cases_fit(cases);
}

TEST_CASE("fused_tc FFN blocks on random shapes and tilings match the float64 reference", "[blocks][ffn_tc]") {
    std::cout << "BLOCKFUSE_TEST_SEED=" << test::test_seed() << " (set it to reproduce this run)\n";
    INFO("BLOCKFUSE_TEST_SEED=" << test::test_seed());
    const std::vector<test::KnobCase> all =
        cases(test::test_seed(), std::stoi(test::env("BLOCKFUSE_TEST_SHAPES", "6")));
    test::check_knob_cases(all, kFusedTc);
}

// layer_by_layer_tc's layers with their K loops pipelined (tc<i>_stages or tc<i>_prefetch: CUDA takes one of them a
// layer, so the other is set to 0 where the heuristic has it): a layer's panels copied from the previous layer's
// buffer (cp.async on CUDA), K of several steps (FFN c=16: 64 and 16; ConvFirst c=64: 64 and 256; MBConv c=24 e=6: the
// project's 144, not a whole step of 32), odd images, N = 1, a residual; and Hopper's tiling of FFN's project layer
// (wgmma, swizzled K steps of 64, the 3-stage ring) on a partial tile of 70 pixels.
TEST_CASE("layer_by_layer_tc blocks with their layers' panel ring and prefetch match the float64 reference",
          "[blocks][ffn_tc]") {
    INFO("BLOCKFUSE_TEST_SEED=" << test::test_seed());
    test::check_knob_cases(
        {{"ffn:n=3,c=16,h=1,w=9,e=4,act=relu,dtype=f16", {{"tc0_stages", 2}, {"tc0_prefetch", 0}, {"tc1_prefetch", 1}}},
         {"convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu,dtype=f16",
          {{"tc0_prefetch", 1}, {"tc1_stages", 3}, {"tc1_prefetch", 0}, {"tc2_stages", 4}, {"tc2_prefetch", 0}}},
         {"mbconv:n=2,c=24,h=7,w=13,e=6,k=3,stride=1,act=relu6,dtype=bf16",
          {{"tc0_stages", 3}, {"tc0_prefetch", 0}, {"tc2_stages", 2}, {"tc2_prefetch", 0}}},
         {"ffn:n=2,c=128,h=5,w=7,e=4,act=relu,dtype=f16",
          {{"tc1_warp_m", 16},
           {"tc1_warp_n", 128},
           {"tc1_warps_m", 8},
           {"tc1_warps_n", 1},
           {"tc1_k_step", 64},
           {"tc1_pad", 0},
           {"tc1_wgmma", 1},
           {"tc1_stages", 3},
           {"tc1_prefetch", 0}}}},
        kLayerByLayerTc);
}

// ConvFirst's grouped 3x3 on the CUDA cores with the flat mapping of a 4 x 7 tile of 4 channels, its reduction not
// unrolled: the accumulator tile lands in local memory, stored as 16-byte vectors into a depot LLVM aligns for 4 bytes
// (runtime/ptx_local_depot.h): loaded without the loader's alignment it stops with CUDA_ERROR_MISALIGNED_ADDRESS on an
// H100 (bench/results/h100/block-ring/); the same kernel serves any N. CUDA only: the mapping's knobs are the GPU's.
TEST_CASE("layer_by_layer_tc ConvFirst with its grouped layer's accumulator tile in local memory matches float64",
          "[blocks][ffn_tc][gpu]") {
    if (!test::testing_device(Device::cuda)) return;
    INFO("BLOCKFUSE_TEST_SEED=" << test::test_seed());
    test::check_knob_cases({{"convfirst:n=2,c=256,h=14,w=14,e=4,k=3,stride=1,act=relu,dtype=f16",
                             {{"layer_flat_threads", 128},
                              {"layer_threads_k", 72},
                              {"layer_threads_x", 1},
                              {"layer_tile_x", 4},
                              {"layer_tile_y", 7},
                              {"layer_vec_k", 4},
                              {"layer_unroll_channels", 1},
                              {"layer_unroll_reduction", 0}}}},
                           kLayerByLayerTc, Device::cuda);
}

TEST_CASE("fused_tc with the hidden A registers 1 and 2 swapped fails the reference check", "[blocks][ffn_tc]") {
    if (!test::testing_device(Device::cpu)) return;
    const std::string key = "ffn:n=1,c=32,h=5,w=7,e=2,act=relu,dtype=f16";
    test::require_mutant_fails(*kernel_with_knobs(key, kFusedTc, Device::cpu, {}, 0, "test"), key, 2);
}

TEST_CASE("fused_tc ConvFirst with its grouped layer's A registers 1 and 2 swapped fails the reference check",
          "[blocks][ffn_tc]") {
    if (!test::testing_device(Device::cpu)) return;
    const std::string key = "convfirst:n=1,c=16,h=6,w=7,e=2,k=3,stride=1,act=relu,dtype=f16";
    test::require_mutant_fails(*kernel_with_knobs(key, kFusedTc, Device::cpu, {{"tc_grouped", 1}}, 0, "test"), key, 5);
}

TEST_CASE("fused_tc ConvNeXt with LayerNorm statistics short of a channel group fails the reference check",
          "[blocks][ffn_tc]") {
    if (!test::testing_device(Device::cpu)) return;
    const std::string key = "convnext:n=1,c=32,h=5,w=6,e=4,k=7,stride=1,act=gelu,dtype=f16";
    test::require_mutant_fails(*kernel_with_knobs(key, kFusedTc, Device::cpu, {}, 0, "test"), key, 4);
}

TEST_CASE("fused_tc is offered for f16/bf16 FFN, FusedMBConv, ConvFirst and ConvNeXt blocks of whole mma tiles, and "
          "refused elsewhere by name (MBConv's: test_mbconv_tc)",
          "[blocks][ffn_tc]") {
    auto has = [](const std::string &key) {
        const auto s = strategies_of(key);
        return std::find(s.begin(), s.end(), kFusedTc) != s.end();
    };
    CHECK(has("ffn:n=1,c=16,h=5,w=7,e=4,act=relu,dtype=f16"));
    CHECK(has("ffn:n=128,c=256,h=14,w=14,e=4,act=relu,dtype=bf16"));
    CHECK_FALSE(has("ffn:n=1,c=16,h=5,w=7,e=4,act=relu,dtype=f32"));     // mma.sync takes f16 and bf16
    CHECK_FALSE(has("ffn:n=1,c=12,h=5,w=7,e=4,act=relu,dtype=f16"));     // channels no multiple of 16
    CHECK_FALSE(has("ffn:n=8,c=384,h=28,w=28,e=4,act=gelu,dtype=f16"));  // 384 outputs: 200 accumulators per thread
    CHECK(has("convfirst:n=128,c=64,h=56,w=56,e=4,k=3,stride=1,act=relu,dtype=f16"));
    CHECK(has("convfirst:n=1,c=32,h=7,w=7,e=4,k=3,stride=2,act=relu,dtype=bf16"));
    CHECK_FALSE(has("convfirst:n=1,c=24,h=7,w=7,e=4,k=3,stride=1,act=relu,dtype=f16"));  // groups of 8, K of 16
    CHECK(has("convnext:n=128,c=96,h=56,w=56,e=4,k=7,stride=1,act=gelu,dtype=f16"));
    CHECK(has("convnext:n=8,c=192,h=28,w=28,e=4,k=7,stride=1,act=gelu,dtype=bf16"));
    CHECK_FALSE(has("convnext:n=8,c=384,h=14,w=14,e=4,k=7,stride=1,act=gelu,dtype=f16"));  // 200 accumulators
    CHECK_FALSE(has("convnext:n=1,c=40,h=7,w=7,e=4,k=7,stride=1,act=gelu,dtype=f16"));     // K of 16
    CHECK_FALSE(has("convnext:n=1,c=96,h=7,w=7,e=4,k=7,stride=1,act=gelu,dtype=f32"));
    CHECK(has("fused_mbconv:n=128,c=48,h=56,w=56,e=4,k=3,stride=1,act=silu,dtype=f16"));
    CHECK(has("fused_mbconv:n=1,c=16,h=5,w=7,e=4,k=5,stride=2,act=silu,dtype=bf16"));
    CHECK_FALSE(has("fused_mbconv:n=8,c=24,h=112,w=112,e=4,k=3,stride=2,act=silu,dtype=f16"));  // K of 16
    CHECK_FALSE(has("fused_mbconv:n=1,c=16,h=5,w=7,e=4,k=3,stride=1,act=silu,dtype=f32"));
    // A stage: each block its own fused_tc kernel.
    CHECK(has("ffn:n=1,c=64,h=8,w=8,e=4,blocks=2,act=relu,dtype=f16"));
    CHECK(has("convnext:n=8,c=96,h=56,w=56,e=4,k=7,stride=1,blocks=3,act=gelu,dtype=f16"));
    // MBConv with SE: fused_tc with a pooling kernel first (tests/kernels/test_mbconv_tc.cpp)
    const BlockWorkload se = parse_block("mbconv:n=1,c=24,h=8,w=8,e=4,k=3,stride=1,se=1,act=silu,dtype=f16");
    CHECK(block_knobs_error(se.spec(), kFusedTc, block_knobs_from({{"chunk", 16}}), true).empty());
}

TEST_CASE("fused_tc launches are checked: accumulator registers, shared memory, threads", "[blocks][ffn_tc]") {
    const BlockWorkload w = parse_block("ffn:n=128,c=256,h=14,w=14,e=4,act=relu,dtype=f16");
    KernelVariant v = block_kernel_for(w, kFusedTc, Device::cuda, block_heuristic(w, kFusedTc, Device::cuda));
    const LaunchLimits h200{1024, 232448};
    CHECK(v.threads_per_block() == 256);  // the heuristic's 8 warps, chunks of 64
    CHECK(v.knob("chunk") == 64);
    CHECK_NOTHROW(check_block_launch(v, w, h200));
    // 128 rows of X, 64 of U, the V chunk: 138240 bytes, past the 48 KB a block gets without opting in.
    CHECK_THROWS_WITH(check_block_launch(v, w, LaunchLimits{1024, 48 * 1024}),
                      Catch::Contains("138240 bytes of shared memory"));
    v.knobs["tc_warp_m"] = 32;  // two m-tiles of 32 n-tiles and a chunk of 8: 320 accumulators per thread
    CHECK_THROWS_WITH(check_block_launch(v, w, h200), Catch::Contains("320 accumulator registers per thread"));
    v.knobs["tc_warp_m"] = 16;
    v.knobs["tc_warps"] = 64;
    CHECK_THROWS_WITH(check_block_launch(v, w, h200), Catch::Contains("2048 threads per block"));
    // Few pixels (N=8: 1568): 2 warps.
    const BlockWorkload small = parse_block("ffn:n=8,c=256,h=14,w=14,e=4,act=relu,dtype=f16");
    CHECK(block_heuristic(small, kFusedTc, Device::cuda).knobs.at("tc_warps") == 2);
    // FusedMBConv as the H200's records run it: 8 warps of 16 pixels, chunks of 32, prefetch, the mma.sync register
    // floor, one thread block an SM (c=48 3x3: 160 rows of 440 f16 and the V chunk, 144640 bytes); c=128's 1152-wide
    // im2col rows fit one SM on 4 warps with chunks of 16 (191744 bytes), not on 8 (381440) nor 4 with 32 (232960).
    const BlockWorkload fm = parse_block("fused_mbconv:n=128,c=48,h=56,w=56,e=4,k=3,stride=1,act=silu,dtype=f16");
    const ScheduleChoice fs = block_heuristic(fm, kFusedTc, Device::cuda);
    CHECK(fs.knobs.at("tc_warps") == 8);
    CHECK(fs.knobs.at("chunk") == 32);
    CHECK(fs.knobs.at("tc_prefetch") == 1);
    CHECK(fs.max_registers == 168);
    CHECK_NOTHROW(check_block_launch(block_kernel_for(fm, kFusedTc, Device::cuda, fs), fm, h200));
    const BlockWorkload wide = parse_block("fused_mbconv:n=128,c=128,h=28,w=28,e=4,k=3,stride=1,act=silu,dtype=f16");
    const ScheduleChoice ws = block_heuristic(wide, kFusedTc, Device::cuda);
    CHECK(ws.knobs.at("tc_warps") == 4);
    CHECK(ws.knobs.at("chunk") == 16);
    CHECK_NOTHROW(check_block_launch(block_kernel_for(wide, kFusedTc, Device::cuda, ws), wide, h200));
    // ConvNeXt c=192 adds the depthwise sums' f32 rows, its f32 weights and the LayerNorm's sums: on 8 warps of 16
    // pixels (chunks of 64) 149248 bytes beside the FFN's 104448, past the H200's 232448; the heuristic's 2 warps fit.
    const BlockWorkload cn = parse_block("convnext:n=8,c=192,h=28,w=28,e=4,k=7,stride=1,act=gelu,dtype=f16");
    KernelVariant c = block_kernel_for(cn, kFusedTc, Device::cuda, block_heuristic(cn, kFusedTc, Device::cuda));
    CHECK(c.knob("tc_warps") == 2);
    CHECK_NOTHROW(check_block_launch(c, cn, h200));
    c.knobs["tc_warps"] = 8;
    c.knobs["chunk"] = 64;
    CHECK_THROWS_WITH(check_block_launch(c, cn, h200), Catch::Contains("253696 bytes of shared memory"));
}

int main(int argc, char **argv) {
    return test::run_on_test_devices([&] { return Catch::Session().run(argc, argv); });
}
