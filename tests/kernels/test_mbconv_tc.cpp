// MBConv fused on tensor cores (strategy fused_tc, generators/mbconv_tc_algorithm.h): the expand's GEMM over a tile's
// halo, the depthwise layer between the GEMMs in shared memory, the project's GEMM. Shapes that break the tiling
// (1x1 images, odd images no tile divides, stride 2 on odd sizes, k = 5, channels of 8 and 24 (the expand's K and
// the project's N padded), N = 1, one and several chunks, every activation, f16 and bf16) on chosen and random
// tilings against the float64 reference with a poisoned output, on the CPU (mma.sync emulated from the ISA tables)
// or, with BLOCKFUSE_TEST_DEVICES=cuda, on the GPU (kernels from a cache filled where Halide is,
// BLOCKFUSE_TEST_FILL_ONLY=1); a depthwise window read one pixel off caught; which MBConv blocks have the strategy;
// its knob and launch checks.
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
        // one pixel: the window all padding but its centre; 8 channels (K and N padded to 16), one warp
        {"mbconv:n=1,c=8,h=1,w=1,e=2,k=3,stride=1,act=relu6,dtype=f16",
         {{"chunk", 16}, {"tc_warps", 1}, {"tile_x", 1}, {"tile_y", 1}}},
        // 24 channels (K 32, N 32), a 4x4 tile over a 7x9 image (edge tiles cut), three chunks of 48, N = 2
        {"mbconv:n=2,c=24,h=7,w=9,e=6,k=3,stride=1,act=relu6,dtype=bf16",
         {{"chunk", 48}, {"tc_warps", 2}, {"tile_x", 4}, {"tile_y", 4}}},
        // stride 2 on an odd image (5 x 4 outputs, no residual), a 5x5 window, SiLU
        {"mbconv:n=1,c=16,h=9,w=7,e=4,k=5,stride=2,act=silu,dtype=f16",
         {{"chunk", 32}, {"tc_warps", 4}, {"tile_x", 2}, {"tile_y", 4}}},
        // an 8x8 tile larger than the 6x5 image, eight warps, chunks of 16, GELU (erf)
        {"mbconv:n=3,c=40,h=6,w=5,e=2,k=3,stride=1,act=gelu,dtype=bf16",
         {{"chunk", 16}, {"tc_warps", 8}, {"tile_x", 8}, {"tile_y", 8}}},
        // 24 output channels (N padded to 32) on 1x7 tiles of one warp, stride 2: the store visits C' only (a
        // predicate on the padding's n-tile once read the bias to channel 31)
        {"mbconv:n=1,c=24,h=5,w=3,e=2,k=3,stride=2,act=gelu,dtype=bf16",
         {{"chunk", 48}, {"tc_warps", 1}, {"tile_x", 1}, {"tile_y", 7}}},
        // the heuristic's tiling (no knob overridden) on a 14x14 image: 7x7 tiles
        {"mbconv:n=1,c=32,h=14,w=14,e=3,k=3,stride=1,act=relu,dtype=f16", {}},
        // Squeeze-Excitation (the pooling kernel's tile sums, the gate): 4x7 tiles over a 9x7 image (edge tiles cut,
        // their pixels past the image out of the mean), N = 2, the residual
        {"mbconv:n=2,c=16,h=7,w=9,e=4,k=3,stride=1,se=1,act=silu,dtype=f16",
         {{"chunk", 32}, {"tc_warps", 2}, {"tile_x", 4}, {"tile_y", 7}}},
        // ...stride 2 on an odd image, a 5x5 window, 24 channels (K and N padded), three chunks, bf16
        {"mbconv:n=1,c=24,h=9,w=7,e=2,k=5,stride=2,se=1,act=silu,dtype=bf16",
         {{"chunk", 16}, {"tc_warps", 1}, {"tile_x", 2}, {"tile_y", 3}}},
        // ...a 1x1 image (the mean of one pixel), one tile
        {"mbconv:n=3,c=8,h=1,w=1,e=4,k=3,stride=1,se=1,act=silu,dtype=f16",
         {{"chunk", 16}, {"tc_warps", 1}, {"tile_x", 1}, {"tile_y", 1}}},
        // a stage of three blocks (each block's output the next one's input), 16 channels on an odd 5x7 image
        {"mbconv:n=2,c=16,h=5,w=7,e=4,k=3,stride=1,blocks=3,act=relu6,dtype=f16",
         {{"chunk", 32}, {"tc_warps", 2}, {"tile_x", 4}, {"tile_y", 2}}},
    };
    std::mt19937_64 r(seed);
    using test::one_of;
    using test::uniform;
    for (int i = 0; i < random_count; ++i) {
        const int c = 8 * uniform(r, 1, 5);
        int e = uniform(r, 1, 6);
        while (c * e % 16) ++e;  // hidden channels in whole K steps
        const std::string key = "mbconv:n=" + std::to_string(uniform(r, 1, 2)) + ",c=" + std::to_string(c) +
                                ",h=" + std::to_string(uniform(r, 1, 12)) + ",w=" + std::to_string(uniform(r, 1, 12)) +
                                ",e=" + std::to_string(e) + ",k=" + std::to_string(one_of(r, std::vector<int>{3, 5})) +
                                ",stride=" + std::to_string(uniform(r, 1, 2)) + (uniform(r, 0, 2) ? "" : ",se=1") +
                                ",act=" + one_of<std::string>(r, {"relu", "relu6", "silu", "gelu"}) +
                                ",dtype=" + one_of<std::string>(r, {"f16", "bf16"});
        std::map<std::string, int> knobs{{"chunk", one_of(r, std::vector<int>{16, 32, 48})},
                                         {"tc_warps", one_of(r, std::vector<int>{1, 2, 4, 8})},
                                         {"tile_x", uniform(r, 1, 8)},
                                         {"tile_y", uniform(r, 1, 8)}};
        const BlockSpec spec = parse_block(key).spec();
        if (effective_chunk(spec.hidden, knobs["chunk"]) % 16) knobs["chunk"] = 16;
        if (!fused_tc_error(spec, block_knobs_from(knobs)).empty()) knobs["tc_warps"] = 8;  // fewer m-tiles a warp
        test::fit_fused_tc_shared(spec, knobs);
        out.push_back({key, knobs});
    }
    return out;
}

}  // namespace

TEST_CASE("random fused_tc MBConv tilings fit the smallest target's shared memory", "[blocks][mbconv_tc]") {
    test::require_fused_tc_cases_fit(cases);
}

TEST_CASE("fused_tc MBConv blocks on chosen and random shapes and tilings match the float64 reference",
          "[blocks][mbconv_tc]") {
    std::cout << "BLOCKFUSE_TEST_SEED=" << test::test_seed() << " (set it to reproduce this run)\n";
    INFO("BLOCKFUSE_TEST_SEED=" << test::test_seed());
    const std::vector<test::KnobCase> all =
        cases(test::test_seed(), std::stoi(test::env("BLOCKFUSE_TEST_SHAPES", "5")));
    test::check_knob_cases(all, kFusedTc);
}

TEST_CASE("fused_tc MBConv with the depthwise window one pixel off fails the reference check", "[blocks][mbconv_tc]") {
    if (!test::testing_device(Device::cpu)) return;
    const std::string key = "mbconv:n=1,c=16,h=6,w=5,e=2,k=3,stride=1,act=relu,dtype=f16";
    test::require_mutant_fails(
        *kernel_with_knobs(key, kFusedTc, Device::cpu, {{"tile_x", 4}, {"tile_y", 4}}, 0, "test"), key, 3);
}

TEST_CASE(
    "fused_tc is offered for f16/bf16 MBConv blocks without SE of 16-byte channel rows, refused elsewhere by name",
    "[blocks][mbconv_tc]") {
    auto has = [](const std::string &key) {
        const auto s = strategies_of(key);
        return std::find(s.begin(), s.end(), kFusedTc) != s.end();
    };
    CHECK(has("mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16"));
    CHECK(has("mbconv:n=1,c=40,h=28,w=28,e=6,k=5,stride=2,act=silu,dtype=bf16"));
    CHECK(has("mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,blocks=3,act=relu6,dtype=f16"));  // a stage
    CHECK_FALSE(has("mbconv:n=1,c=24,h=8,w=8,e=6,k=3,stride=1,act=relu6,dtype=f32"));       // mma.sync: f16 and bf16
    CHECK_FALSE(has("mbconv:n=1,c=12,h=8,w=8,e=4,k=3,stride=1,act=relu6,dtype=f16"));       // rows of 12 channels
    CHECK_FALSE(has("mbconv:n=1,c=8,h=8,w=8,e=3,k=3,stride=1,act=relu6,dtype=f16"));        // 24 hidden: no K steps
    CHECK(has("mbconv:n=1,c=24,h=8,w=8,e=6,k=3,stride=1,act=silu,se=1,dtype=f16"));  // SE: a pooling kernel first
    {  // its model: the pooling kernel executes the expand and depthwise again, counted once as fused counts them
        const BlockWorkload w = parse_block("mbconv:n=2,c=24,h=9,w=7,e=6,k=3,stride=1,act=silu,se=1,dtype=f16");
        const auto tc = block_costs(w, kFusedTc, 4, 4), cuda_cores = block_costs(w, "fused", 4, 4);
        REQUIRE(tc.size() == 3);
        CHECK(tc[0].name == "se_pool");
        CHECK(tc[0].flops == 0);
        CHECK(tc[0].executed() == Approx(conv2d_flops(w.layers()[0]) + conv2d_flops(w.layers()[1])));
        double ops = 0, ops_cuda_cores = 0;
        for (const KernelCost &c : tc) ops += c.flops;
        for (const KernelCost &c : cuda_cores) ops_cuda_cores += c.flops;
        CHECK(ops == Approx(ops_cuda_cores));
    }
    const BlockSpec mb = parse_block("mbconv:n=1,c=24,h=8,w=8,e=6,k=3,stride=1,act=relu6,dtype=f16").spec();
    CHECK_THAT(block_knobs_error(mb, kFusedTc, block_knobs_from({{"chunk", 48}, {"tc_prefetch", 1}}), true),
               Catch::Contains("tc_prefetch applies to FFN, FusedMBConv, ConvFirst and ConvNeXt blocks, not MBConv"));
    CHECK_THAT(block_knobs_error(mb, kFusedTc, block_knobs_from({{"chunk", 24}}), true),
               Catch::Contains("chunk 24 (the divisor of the hidden width used) is not a multiple of 16"));
}

TEST_CASE("fused_tc MBConv tilings: the heuristic's tile, accumulator registers, shared memory, threads",
          "[blocks][mbconv_tc]") {
    const LaunchLimits h200{1024, 232448};
    // Two rows of 7 or 8 pixels where the accumulators allow: 56x56 outputs in 8x14 tiles; a small image in one
    // tile.
    auto tile = [](const std::string &key) {
        const auto k = block_heuristic(parse_block(key), kFusedTc, Device::cuda).knobs;
        return std::pair{k.at("tile_x"), k.at("tile_y")};
    };
    CHECK(tile("mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16") == std::pair{8, 14});
    // c=40 k=5: one row of 7 on 4 warps (larger tiles or fewer warps spilled beside the 25-tap window).
    CHECK(tile("mbconv:n=128,c=40,h=28,w=28,e=6,k=5,stride=1,act=relu6,dtype=f16") == std::pair{7, 7});
    // c=112 k=5 (EfficientNet's): chunks of 16 (chunks of 32, 88 accumulators, spilled in ptxas)
    CHECK(block_heuristic(parse_block("mbconv:n=128,c=112,h=14,w=14,e=6,k=5,stride=1,se=1,act=silu,dtype=f16"),
                          kFusedTc, Device::cuda)
              .knobs.at("chunk") == 16);
    // stride 2: the halo of a 7x14 tile is 15x29 pixels (176 accumulators a thread): one row of 8.
    CHECK(tile("mbconv:n=128,c=24,h=112,w=28,e=6,k=3,stride=2,act=relu6,dtype=f16") == std::pair{7, 8});
    CHECK(tile("mbconv:n=1,c=16,h=5,w=3,e=4,k=3,stride=1,act=relu6,dtype=f16") == std::pair{3, 5});
    // N=8: 224 tiles of 8x14 on 2 warps, fewer than 4 warps an SM of 132; columns of 4 double them.
    CHECK(tile("mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16") == std::pair{4, 14});
    CHECK(tile("mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,blocks=3,act=relu6,dtype=f16") == std::pair{4, 14});
    // 192 output channels: two rows of 7x14 pixels on 4 warps would hold 2 x 24 x 4 + 48 = 240 accumulators a
    // thread; one row of 7 fits.
    const auto wide = block_heuristic(parse_block("mbconv:n=8,c=192,h=7,w=7,e=6,k=5,stride=1,act=silu,dtype=f16"),
                                      kFusedTc, Device::cuda)
                          .knobs;
    CHECK(fused_tc_error(parse_block("mbconv:n=8,c=192,h=7,w=7,e=6,k=5,stride=1,act=silu,dtype=f16").spec(),
                         block_knobs_from(wide))
              .empty());

    // 328 output channels, 1312 hidden: only chunks of 16 fit the accumulators (42 x 4 + 2 x 4 = 176 a thread on
    // one row of 7 pixels).
    const BlockWorkload widest = parse_block("mbconv:n=8,c=328,h=7,w=7,e=4,k=3,stride=1,act=silu,dtype=f16");
    REQUIRE(fused_tc_applies(widest.spec()));
    const BlockKnobs widest_knobs = block_knobs_from(block_heuristic(widest, kFusedTc, Device::cuda).knobs);
    CHECK(effective_chunk(widest.spec().hidden, widest_knobs.chunk) == 16);
    CHECK(fused_tc_error(widest.spec(), widest_knobs).empty());

    const BlockWorkload w = parse_block("mbconv:n=128,c=80,h=14,w=14,e=6,k=3,stride=1,act=relu6,dtype=f16");
    KernelVariant v = block_kernel_for(w, kFusedTc, Device::cuda, block_heuristic(w, kFusedTc, Device::cuda));
    CHECK(v.threads_per_block() == 128);  // 80 output channels: 4 warps, chunks of 32
    CHECK_NOTHROW(check_block_launch(v, w, h200));
    // 7x14 tile, halo 9x16, K 80, N 80: 2 (192 x 88 + 32 x 88 + 144 x 40 + 128 x 40 + 80 x 40) = 67584 bytes.
    CHECK_THROWS_WITH(check_block_launch(v, w, LaunchLimits{1024, 48 * 1024}),
                      Catch::Contains("67584 bytes of shared memory"));
    v.knobs["tc_warps"] = 1;  // 7 project and 9 expand m-tiles a warp: 7 x 10 x 4 + 9 x 4 x 4 = 424 accumulators
    CHECK_THROWS_WITH(check_block_launch(v, w, h200), Catch::Contains("424 accumulator registers per thread"));
    v.knobs["tc_warps"] = 40;
    CHECK_THROWS_WITH(check_block_launch(v, w, h200), Catch::Contains("1280 threads per block"));
}

int main(int argc, char **argv) {
    return test::run_on_test_devices([&] { return Catch::Session().run(argc, argv); });
}
