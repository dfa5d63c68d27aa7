// The tensor-core conv2d (an implicit GEMM of mma.sync fragments) without a GPU: the same kernels with the
// instructions emulated from the PTX ISA tables, on the CPU, against the float64 reference; a wrong fragment
// layout caught; the strategy's dispatch and weight layout. The blocks layer by layer on those GEMMs too.
#define CATCH_CONFIG_MAIN
#include "runtime/mma_ptx.h"
#include "tests/common/block_tc_cases.h"
#include "schedules/heuristics.h"
#include "tests/common/conv2d_tc_cases.h"
#include "tune/space.h"
#include <regex>
#include <tuple>

using namespace blockfuse;

namespace {
// The kernel of `strategy` for key with `knobs` over the heuristic's, against the float64 reference (fresh data from
// seed, a poisoned output); returns it.
const KernelVariant *check_with_knobs(const std::string &key, const std::string &strategy,
                                      const std::map<std::string, int> &knobs, uint64_t seed) {
    const KernelVariant *v = kernel_with_knobs(key, strategy, Device::cpu, knobs, 0, "test");
    INFO(v->name << " [" << v->knob_summary() << "] on " << key << ", seed " << seed);
    const Comparison c = test::run_conv2d_tc_case(*v, key, seed);
    INFO(c.summary());
    CHECK(c.ok());
    return v;
}
// The conv2d shapes and a conv3d of odd sizes (stride 2 and dilation 2 in depth, a 3 x 2 x 3 window).
std::vector<std::string> conv2d_and_conv3d_shapes() {
    std::vector<std::string> keys = test::conv2d_tc_shapes();
    keys.push_back("conv3d:n=2,c=5,d=5,h=6,w=7,k=12,kernel_d=3,kernel_h=2,kernel_w=3,stride_d=2,pad=1,dil_d=2,bias=1,"
                   "dtype=bf16");
    return keys;
}
}  // namespace

TEST_CASE("every tensor-core conv2d shape (emulated mma.sync) matches the float64 reference", "[conv2d_tc][cpu]") {
    test::check_conv2d_tc_shapes(Device::cpu);
}

TEST_CASE("every block shape layer by layer on the tensor cores (emulated mma.sync) matches the float64 reference",
          "[blocks][conv2d_tc][cpu]") {
    test::check_block_tc_shapes(Device::cpu);
}

// The panel prefetch (schedules/panel_prefetch.h) on the implicit GEMMs: the gather of every window, stride,
// dilation and padding, and the block layers (their residual, static N), each K step loading the next one's panels.
TEST_CASE("the panel prefetch on the emulated implicit GEMMs: conv2d shapes and blocks match the float64 reference",
          "[conv2d_tc][blocks][cpu]") {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    for (const auto &key : test::conv2d_tc_shapes())
        REQUIRE(check_with_knobs(key, kTensorCores, {{"prefetch", 1}}, seed)->knob("prefetch") == 1);
    // Dense layers with K of more than one step of 32 (the CPU heuristic's): FFN c=12 e=4 (K = 12, 48), FusedMBConv
    // c=8 (3x3 expand K = 72), ConvFirst c=64 (K = 64, 256), MBConv c=24 e=6 (project K = 144).
    for (const std::string key : {"ffn:n=3,c=12,h=1,w=9,e=4,act=relu,dtype=f16",
                                  "fused_mbconv:n=2,c=8,h=7,w=9,e=2,k=3,stride=1,act=silu,dtype=bf16",
                                  "convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu,dtype=f16",
                                  "mbconv:n=2,c=24,h=7,w=13,e=6,k=3,stride=1,act=relu6,dtype=bf16"})
        check_with_knobs(key, kLayerByLayerTc, {{"tc0_prefetch", 1}, {"tc1_prefetch", 1}, {"tc2_prefetch", 1}}, seed);
}

// The multi-stage panel ring (schedules/panel_prefetch.h, knob stages): each K step's panels copied stages - 1 steps
// ahead into their copy of the ring (plain stores here, cp.async on CUDA), zeros past the last step; the gather of
// every window, stride, dilation and padding, with and without split K, and the block layers. Channels that are no
// multiple of 8 (the stem's 3) are refused before launch: cp.async copies whole 16-byte rows.
TEST_CASE(
    "the cp.async panel ring on the emulated implicit GEMMs: conv2d shapes and blocks match the float64 reference",
    "[conv2d_tc][blocks][cpu]") {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    for (const auto &key : test::conv2d_tc_shapes())
        for (const auto &[stages, split] : {std::pair{2, 1}, std::pair{3, 2}, std::pair{4, 1}}) {
            const std::map<std::string, int> knobs{{"stages", stages}, {"split_k", split}};
            const Conv2dWorkload w = parse_conv2d(key);
            if (w.c % 8 || conv_windows(w).window_channels() % 8) {
                const KernelVariant *v = kernel_with_knobs(key, kTensorCores, Device::cpu, knobs, 0, "test");
                CHECK_THAT(conv2d_tc_launch_error(*v, w, launch_limits(Device::cpu)),
                           Catch::Contains("stages = " + std::to_string(stages) +
                                           " needs input channels that are a multiple of 8"));
                continue;
            }
            REQUIRE(check_with_knobs(key, kTensorCores, knobs, seed)->knob("stages") == stages);
        }
    // Dense layers with K of more than one step of 32 and input channels multiples of 8: FusedMBConv c=8 (3x3
    // expand K = 72), ConvFirst c=64 (K = 64, 256), MBConv c=24 e=6 (project K = 144), FFN c=16.
    for (const std::string key : {"fused_mbconv:n=2,c=8,h=7,w=9,e=2,k=3,stride=1,act=silu,dtype=bf16",
                                  "convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu,dtype=f16",
                                  "mbconv:n=2,c=24,h=7,w=13,e=6,k=3,stride=1,act=relu6,dtype=bf16",
                                  "ffn:n=3,c=16,h=1,w=9,e=4,act=relu,dtype=f16"})
        check_with_knobs(key, kLayerByLayerTc, {{"tc0_stages", 3}, {"tc1_stages", 2}, {"tc2_stages", 4}}, seed);
}

// Split K (schedules/gemm_knobs.h split_k): the partial sums of each split in the workspace, added by the epilogue.
// Splits of 2 and 3 (3 leaves the last split past K on most shapes: its panels must read zeros), with and without
// the prefetch; a conv3d (the depth taps split over blocks) and the block layers (their residual) too.
TEST_CASE("split K on the emulated implicit GEMMs: conv2d and conv3d shapes and blocks match the float64 reference",
          "[conv2d_tc][blocks][cpu]") {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    const std::vector<std::string> keys = conv2d_and_conv3d_shapes();
    for (const auto &key : keys)
        for (const auto &[split, prefetch] : {std::pair{2, 0}, std::pair{3, 1}})
            REQUIRE(check_with_knobs(key, kTensorCores, {{"split_k", split}, {"prefetch", prefetch}}, seed)
                        ->knob("split_k") == split);
    for (const std::string key : {"ffn:n=3,c=12,h=1,w=9,e=4,act=relu,dtype=f16",
                                  "convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu,dtype=f16"})
        check_with_knobs(key, kLayerByLayerTc, {{"tc0_split_k", 2}, {"tc1_split_k", 3}, {"tc2_split_k", 2}}, seed);
}

// Hopper's wgmma (knob wgmma): the implicit GEMM's A gathered into core-matrix panels (8 rows of 16 bytes each,
// the layout wgmma's descriptors read; K steps of 64 in the 128-byte swizzle), the warpgroup's 64 x warp_n instruction emulated from the panels; every
// conv2d shape, a conv3d, 64 x 40 (five n-tiles), 128 x 64 with split K and the register prefetch, 64 x 64 on a
// 3-stage ring, and the block layers. A grouped convolution is refused (wgmma has no windows).
TEST_CASE("wgmma on the emulated implicit GEMMs: conv2d and conv3d shapes and blocks match the float64 reference",
          "[conv2d_tc][blocks][cpu]") {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    const std::vector<std::string> keys = conv2d_and_conv3d_shapes();
    const std::map<std::string, int> wg{{"wgmma", 1}, {"warp_m", 16},  {"warps_n", 1},
                                        {"pad", 0},   {"prefetch", 0}, {"stages", 1}};
    for (const auto &key : keys) {
        std::smatch groups;
        if (std::regex_search(key, groups, std::regex("groups=([0-9]+)")) && std::stoi(groups[1].str()) > 1) {
            auto knobs = wg;
            knobs.insert({{"warps_m", 4}, {"warp_n", 64}});
            const KernelVariant *v = kernel_with_knobs(key, kTensorCores, Device::cpu, knobs, 0, "test");
            CHECK_THAT(conv2d_tc_launch_error(*v, parse_conv2d(key), launch_limits(Device::cpu)),
                       Catch::Contains("wgmma = 1 serves no grouped convolution"));
            continue;
        }
        // (warps_m, warp_n, split_k, stages, prefetch, k_step); the ring where the channels are whole 16-byte
        // vectors; K steps of 64: the panels' rows in the 128-byte swizzle
        std::smatch channels;
        REQUIRE(std::regex_search(key, channels, std::regex(",c=([0-9]+)")));
        for (const auto &[warps_m, warp_n, split, stages, prefetch, k_step] :
             {std::tuple{4, 40, 1, 1, 0, 32}, std::tuple{8, 64, 2, 1, 1, 64}, std::tuple{4, 64, 1, 3, 0, 64}}) {
            if (stages > 1 && std::stoi(channels[1].str()) % 8) continue;
            auto knobs = wg;
            knobs["stages"] = stages;
            knobs["prefetch"] = prefetch;
            knobs.insert({{"warps_m", warps_m}, {"warp_n", warp_n}, {"split_k", split}, {"k_step", k_step}});
            REQUIRE(check_with_knobs(key, kTensorCores, knobs, seed)->knob("wgmma") == 1);
        }
    }
    for (const std::string key : {"ffn:n=3,c=12,h=1,w=9,e=4,act=relu,dtype=f16",
                                  "mbconv:n=2,c=24,h=7,w=13,e=6,k=3,stride=1,act=relu6,dtype=bf16"}) {
        std::map<std::string, int> knobs;
        for (int i = 0; i < 3; ++i)
            for (const auto &[k, v] : wg) knobs["tc" + std::to_string(i) + "_" + k] = v;
        for (int i = 0; i < 3; ++i) knobs["tc" + std::to_string(i) + "_warps_m"] = 4;
        // the FFN's layers in the 128-byte swizzle (K steps of 64), the MBConv's in plain core matrices
        for (int i = 0; i < 3; ++i) knobs["tc" + std::to_string(i) + "_k_step"] = key.rfind("ffn", 0) == 0 ? 64 : 32;
        check_with_knobs(key, kLayerByLayerTc, knobs, seed);
    }
}

// Knob tc_grouped: ConvFirst's grouped layer (group width 8: windows of one group; c=16 e=2: two groups) as the
// block-diagonal implicit GEMM inside layer_by_layer_tc's pipeline, its weights in the windows' layout; with the
// cp.async ring and the prefetch on it, a stage, stride 1 on odd sizes; on fused_tc ConvFirst's only; searched by the
// tuner.
// The tilings Hopper's heuristic picks for dense convolutions (schedules/heuristics.cpp, hopper_conv_wgmma_tiling),
// run on the emulation: the staged epilogue, K steps of 32 on the packed few-channel reductions, the ring's 3 and 4
// stages, the K split onto few tiles, over the conv2d shapes, a conv3d and shapes that reach each of those.
TEST_CASE("Hopper's heuristic tilings of dense convolutions, emulated, match the float64 reference",
          "[conv2d_tc][cpu]") {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    std::vector<std::string> keys = conv2d_and_conv3d_shapes();
    for (const char *key :
         {"conv2d:n=1,c=24,h=7,w=9,k=40,r=3,s=3,pad=1,bias=1,act=relu,dtype=f16",  // 4 panels: 3 stages
          "conv2d:n=1,c=128,h=5,w=3,k=24,r=3,s=3,pad=1,dtype=bf16",                // 18 panels on 1 tile: split
          "conv3d:n=1,c=3,d=4,h=9,w=7,k=16,kernel=3,pad=1,dtype=f16",              // taps packed: K steps of 32
          "conv2d:n=1,c=128,h=47,w=49,k=24,r=3,s=3,pad=1,dtype=f16"})              // 18 panels on 36 tiles: 4 stages
        keys.push_back(key);
    std::set<std::string> reached;
    for (const auto &key : keys) {
        if (std::regex_search(key, std::regex("groups=([2-9]|[1-9][0-9])"))) continue;  // wgmma has no windows
        setenv("BLOCKFUSE_GPU", "NVIDIA H200:sm_90", 1);  // the heuristic of a Hopper GPU, none needed here
        const std::map<std::string, int> knobs = parse_op(key)->heuristic(kTensorCores, Device::cuda).knobs;
        unsetenv("BLOCKFUSE_GPU");
        REQUIRE(knobs.at("wgmma") == 1);
        REQUIRE(knobs.at("stage_c") == 1);
        if (knobs.at("k_step") == 32) reached.insert("k_step 32");
        if (knobs.at("stages") >= 3) reached.insert("stages " + std::to_string(knobs.at("stages")));
        if (knobs.count("split_k") && knobs.at("split_k") > 1) reached.insert("split_k");
        check_with_knobs(key, kTensorCores, knobs, seed);
    }
    CHECK(reached == std::set<std::string>{"k_step 32", "stages 3", "stages 4", "split_k"});
    // Long reductions onto two 128 x 128 tiles an SM take two warpgroups: no shape that large is emulated here, so
    // highres's tiling runs on a small shape whose M, N and K are no multiple of its tiles.
    setenv("BLOCKFUSE_GPU", "NVIDIA H200:sm_90", 1);
    const std::map<std::string, int> wide = parse_op("conv2d:n=1,c=256,h=112,w=112,k=512,r=3,s=3,pad=1,dtype=f16")
                                                ->heuristic(kTensorCores, Device::cuda)
                                                .knobs;
    unsetenv("BLOCKFUSE_GPU");
    REQUIRE(wide.at("warps_m") == 8);
    REQUIRE(wide.at("warp_n") == 128);
    check_with_knobs("conv2d:n=1,c=72,h=13,w=11,k=136,r=3,s=3,pad=1,bias=1,act=relu,dtype=bf16", kTensorCores, wide,
                     seed);
}

TEST_CASE("layer_by_layer_tc with tc_grouped: the grouped layer on the emulated tensor cores matches float64",
          "[blocks][conv2d_tc][cpu]") {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    for (const auto &[key, knobs] : std::vector<std::pair<std::string, std::map<std::string, int>>>{
             {"convfirst:n=1,c=16,h=9,w=7,e=2,k=3,stride=1,act=relu,dtype=f16", {{"tc_grouped", 1}}},
             {"convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu,dtype=bf16",
              {{"tc_grouped", 1}, {"tc0_stages", 2}}},
             {"convfirst:n=2,c=16,h=3,w=2,e=2,k=3,stride=1,blocks=2,act=relu,dtype=f16",
              {{"tc_grouped", 1}, {"tc0_prefetch", 1}}}}) {
        const KernelVariant *v = check_with_knobs(key, kLayerByLayerTc, knobs, seed);
        REQUIRE(v->knob("tc_grouped") == 1);
        CHECK(block_costs(parse_block(key), kLayerByLayerTc, 8, 4, true)[0].tensor_cores);
    }
    const BlockWorkload w = parse_block("convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu,dtype=f16");
    CHECK_FALSE(block_costs(w, kLayerByLayerTc)[0].tensor_cores);  // the default: its CUDA-core mapping
    // fused_tc takes it on ConvFirst (its grouped layer on mma: tests/kernels/test_ffn_tc.cpp), no other family
    BlockKnobs kn = block_knobs_from(block_heuristic(w, kFusedTc, Device::cuda).knobs);
    kn.tc_grouped = 1;
    CHECK(block_knobs_error(w.spec(), kFusedTc, kn, true).empty());
    const BlockWorkload ffn = parse_block("ffn:n=1,c=64,h=5,w=7,e=4,act=relu,dtype=f16");
    BlockKnobs fk = block_knobs_from(block_heuristic(ffn, kFusedTc, Device::cuda).knobs);
    fk.tc_grouped = 1;
    CHECK_THAT(block_knobs_error(ffn.spec(), kFusedTc, fk, true), Catch::Contains("tc_grouped applies to"));
    CHECK_THAT(block_knobs_error(w.spec(), "fused", kn, true), Catch::Contains("tc_grouped applies to"));
    const auto op = parse_op(to_key(w));
    for (const char *knob : {"tc_grouped", "tc0_warp_n", "layer_threads_k", "tc1_warp_n"}) {
        const auto space = op->tunable_knobs(kLayerByLayerTc, Device::cuda);
        CHECK(std::count(space.begin(), space.end(), knob) == 1);
    }
    // Knobs a kernel does not read take their defaults (block_kernel_for): tc_grouped 0 reads no tc0_ tiling, 1 no
    // layer_ mapping (ConvFirst's only layer_ layer is the grouped one); the tuner then measures such choices once.
    auto name_of = [&](const std::map<std::string, int> &k) {
        ScheduleChoice c;
        c.knobs = k;
        return block_kernel_for(w, kLayerByLayerTc, Device::cuda, c).name;
    };
    std::map<std::string, int> a = block_heuristic(w, kLayerByLayerTc, Device::cuda).knobs;
    a["tc_grouped"] = 0, a["tc0_warp_n"] = 16, a["layer_threads_k"] = 8;
    std::map<std::string, int> b = a, c = a;
    b["tc0_warp_n"] = 32, c["layer_threads_k"] = 16;
    CHECK(name_of(a) == name_of(b));
    CHECK(name_of(a) != name_of(c));
    for (auto *k : {&a, &b, &c}) (*k)["tc_grouped"] = 1;
    CHECK(name_of(a) != name_of(b));
    CHECK(name_of(a) == name_of(c));
    const auto fused_space = op->tunable_knobs(kFusedTc, Device::cuda);
    CHECK(std::count(fused_space.begin(), fused_space.end(), "tc_grouped") == 1);
    const auto ffn_space = parse_op(to_key(ffn))->tunable_knobs(kFusedTc, Device::cuda);
    CHECK(std::count(ffn_space.begin(), ffn_space.end(), "tc_grouped") == 0);
    // fused_tc's model: the grouped layer's padded K (80 of 72 for a 3x3) executed on mma with tc_grouped
    const double base = block_costs(w, kFusedTc, 8, 4, false)[0].executed();
    const double padded = block_costs(w, kFusedTc, 8, 4, true)[0].executed();
    CHECK(padded - base == Approx(conv2d_flops(w.layers()[0]) / 9.0));
}

TEST_CASE("layer_by_layer_tc reads the tensor-core weight layout: the plain one fails the check, none is refused",
          "[blocks][conv2d_tc][cpu]") {
    install_halide_error_handler();
    const std::string key = "ffn:n=1,c=16,h=5,w=7,e=4,act=relu,dtype=f16";
    const BlockWorkload w = parse_block(key);
    const KernelVariant *v = test::block_tc_kernel(key, Device::cpu);
    const uint64_t seed = std::random_device{}();
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    BlockTensors t = make_block_tensors(w);
    randomize(t, w, rng);
    run_block(*v, w, t);
    REQUIRE(check_block(w, t).ok());
    // The expand layer's bits as (k, c) -- the CUDA-core layout, the same size here (c = 16) -- not (c, k).
    Halide::Runtime::Buffer<uint16_t> plain(static_cast<uint16_t *>(t.weights[0].data()),
                                            t.weights_tc[0].dim(0).extent(), t.weights_tc[0].dim(1).extent());
    t.weights_tc[0] = plain.copy();
    t.weights_tc[0].set_host_dirty();
    poison(t.output, w.dtype);
    run_block(*v, w, t);
    const Comparison bad = check_block(w, t);
    INFO(bad.summary());
    CHECK_FALSE(bad.ok());
    t.weights_tc[1] = {};
    CHECK_THROWS_WITH(run_block(*v, w, t), Catch::Contains("reads the tensor-core weight layout of layer 1"));
    // f32 blocks have no such strategy; f16 ones list it after the CUDA-core ones (an FFN of whole mma tiles, then
    // fused_tc).
    CHECK(strategies_of("ffn:n=1,c=16,h=5,w=7,e=4,act=relu,dtype=f32") ==
          std::vector<std::string>{"layer_by_layer", "fused"});
    CHECK(strategies_of(key) == std::vector<std::string>{"layer_by_layer", "fused", kLayerByLayerTc, kFusedTc});
}

TEST_CASE("layer_by_layer_tc launches are checked against the module's register cap and each GEMM's limits",
          "[blocks][conv2d_tc]") {
    const BlockWorkload w = parse_block("convfirst:n=1,c=64,h=56,w=56,e=4,k=3,stride=1,act=relu,dtype=f16");
    KernelVariant v =
        block_kernel_for(w, kLayerByLayerTc, Device::cuda, block_heuristic(w, kLayerByLayerTc, Device::cuda));
    const LaunchLimits h200{1024, 232448};
    CHECK_NOTHROW(check_block_launch(v, w, h200));
    // A 512-thread grouped-layer kernel shares the module's cap, raised to 168 for mma.sync: 86016 registers.
    v.knobs["layer_threads_k"] = 64;
    v.knobs["layer_threads_x"] = 8;
    CHECK_THROWS_WITH(check_block_launch(v, w, h200),
                      Catch::Contains("512 threads") && Catch::Contains("exceed the 65536 registers per block"));
    v.knobs["layer_threads_k"] = 32;
    v.knobs["layer_threads_x"] = 4;
    // A GEMM tiling whose panels exceed the shared memory: layer 1 (tc1_), named.
    v.knobs["tc1_warps_m"] = 2;
    v.knobs["tc1_warps_n"] = 2;
    v.knobs["tc1_warp_m"] = 64;
    v.knobs["tc1_warp_n"] = 64;
    v.knobs["tc1_k_step"] = 512;  // 2 x 256 rows x 520 b16 = 266 KB of panels
    CHECK_THROWS_WITH(check_block_launch(v, w, h200), Catch::Contains("layer 1 (tc1_)"));
}

TEST_CASE("a tensor-core conv2d with A registers 1 and 2 swapped fails the reference check", "[conv2d_tc][cpu]") {
    const std::string key = "conv2d:n=1,c=8,h=9,w=7,k=40,r=3,s=3,pad=1,bias=1,act=relu,dtype=f16";
    install_halide_error_handler();
    test::require_mutant_fails(*test::conv2d_tc_kernel(key, Device::cpu), key, 1);
}

TEST_CASE("the tensor-core strategy: dense f16/bf16 convolutions only, weights laid out taps x (padded) channels",
          "[conv2d_tc]") {
    CHECK(strategies_of("conv2d:n=1,c=8,h=8,w=8,k=8,r=3,s=3,pad=1,dtype=f16") ==
          std::vector<std::string>{"direct", kTensorCores});
    CHECK(strategies_of("conv2d:n=1,c=8,h=8,w=8,k=8,r=3,s=3,pad=1,dtype=f32") == std::vector<std::string>{"direct"});
    // Grouped: where a group's output channels are a multiple of 8 or divide 8; depthwise stays on the CUDA cores.
    CHECK(strategies_of("conv2d:n=1,c=16,h=8,w=8,k=16,r=3,s=3,pad=1,groups=2,dtype=f16") ==
          std::vector<std::string>{"direct", kTensorCores});
    CHECK(strategies_of("conv2d:n=1,c=12,h=8,w=8,k=12,r=3,s=3,pad=1,groups=4,dtype=f16") ==
          std::vector<std::string>{"direct"});
    CHECK(strategies_of("conv2d:n=1,c=16,h=8,w=8,k=16,r=3,s=3,pad=1,groups=16,dtype=f16") ==
          std::vector<std::string>{"direct"});
    const Conv2dWorkload w = parse_conv2d("conv2d:n=2,c=3,h=6,w=5,k=4,r=3,s=2,dtype=bf16");
    const GemmWorkload g = implicit_gemm_of(w);
    CHECK(g.m == 2 * w.out_h() * w.out_w());
    CHECK(g.n == 4);
    // One group of 3 channels: two taps to each 8 of the reduction (6 channels, 2 zeros), 6 taps in 3 groups.
    CHECK(g.k == 24);
    std::mt19937_64 rng(1);
    Conv2dTensors t = make_conv2d_tensors(w);
    randomize(t, w, rng);
    REQUIRE(t.weights_tc.dim(0).extent() == 24);
    REQUIRE(t.weights_tc.dim(1).extent() == 4);
    const uint16_t *src = static_cast<const uint16_t *>(t.weights.data());
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < 24; ++i) {
            const int tap = i / 8 * 2 + i % 8 / 3, c = i % 8 % 3;  // tap = ky * 2 + kx
            REQUIRE(t.weights_tc(i, k) == (i % 8 < 6 ? src[(tap * 3 + c) * 4 + k] : 0));
        }
    // A multiple of 8 channels: each tap's slice is its channels, unpadded.
    CHECK(implicit_gemm_of(parse_conv2d("conv2d:n=1,c=16,h=6,w=5,k=4,r=3,s=2,dtype=f16")).k == 3 * 2 * 16);
    // Grouped, 2 output and 3 input channels a group: windows of 8 output channels (4 groups, 12 input channels, 16
    // with the padding); row k holds its window's channels, its own group's 3 at 3 x (k's group within the window).
    const Conv2dWorkload gw = parse_conv2d("conv2d:n=1,c=15,h=4,w=4,k=10,r=1,s=2,groups=5,dtype=f16");
    REQUIRE(implicit_gemm_of(gw).k == 2 * 16);
    Conv2dTensors gt = make_conv2d_tensors(gw);
    randomize(gt, gw, rng);
    REQUIRE(gt.weights_tc.dim(0).extent() == 32);
    const uint16_t *gsrc = static_cast<const uint16_t *>(gt.weights.data());
    for (int k = 0; k < 10; ++k)
        for (int tap = 0; tap < 2; ++tap)
            for (int c = 0; c < 16; ++c) {
                const int group_in_window = (k % 8) / 2, ci = c - 3 * group_in_window;
                const uint16_t want = ci >= 0 && ci < 3 ? gsrc[(tap * 3 + ci) * 10 + k] : 0;
                REQUIRE(gt.weights_tc(tap * 16 + c, k) == want);
            }
    // The heuristic's tiling keeps a warp's columns within a window of 24; one straddling windows is refused by name,
    // and the shared memory counts an A panel per window of the block: 8 windows of 8 channels on 128 x 64 tiles
    // with K steps of 128 hold 2 x (8 x 128 + 64) x 136 = 296 KB, past the H200's 227 KB (one group's: 52 KB).
    const Conv2dWorkload w24 = parse_conv2d("conv2d:n=1,c=48,h=4,w=4,k=48,r=1,s=1,groups=2,dtype=f16");
    ScheduleChoice s24 = conv2d_tc_heuristic(w24, Device::cuda);
    const LaunchLimits h200{1024, 232448};
    CHECK(conv2d_tc_launch_error(conv2d_tc_kernel_for(w24, Device::cuda, s24), w24, h200).empty());
    s24.knobs["warp_n"] = 16;
    CHECK_THAT(conv2d_tc_launch_error(conv2d_tc_kernel_for(w24, Device::cuda, s24), w24, h200),
               Catch::Contains("warp_n = 16 must be a multiple or a divisor") && Catch::Contains("window of 24"));
    const Conv2dWorkload w8 = parse_conv2d("conv2d:n=1,c=64,h=4,w=4,k=64,r=1,s=1,groups=8,dtype=f16");
    ScheduleChoice s8 = conv2d_tc_heuristic(w8, Device::cuda);
    s8.knobs = {{"warp_m", 64}, {"warps_m", 2}, {"warp_n", 32}, {"warps_n", 2}, {"k_step", 128}};
    CHECK_THAT(conv2d_tc_launch_error(conv2d_tc_kernel_for(w8, Device::cuda, s8), w8, h200), Catch::Contains("shared"));
    const Conv2dWorkload dense8 = parse_conv2d("conv2d:n=1,c=64,h=4,w=4,k=64,r=1,s=1,dtype=f16");
    CHECK(conv2d_tc_launch_error(conv2d_tc_kernel_for(dense8, Device::cuda, s8), dense8, h200).empty());
    // The tuner searches the GEMM's knobs for this strategy.
    const auto op = parse_op(to_key(w));
    CHECK(op->family(kTensorCores) == "conv2d_tc");
    const auto knobs = op->tunable_knobs(kTensorCores, Device::cuda);
    CHECK(std::find(knobs.begin(), knobs.end(), "warp_m") != knobs.end());
    CHECK(std::find(knobs.begin(), knobs.end(), "k_step") != knobs.end());
}

TEST_CASE("the tuner's space of the tensor-core strategy: the GEMM knobs, register caps the rewrite honours",
          "[conv2d_tc]") {
    const auto op = parse_op("conv2d:n=1,c=64,h=28,w=28,k=128,r=3,s=3,pad=1,dtype=f16");
    const SearchSpace space(*op, kTensorCores, Device::cuda, LaunchLimits{1024, 227 * 1024});
    std::set<std::string> names;
    for (const auto &d : space.dims()) {
        names.insert(d.name);
        if (d.name == "max_registers")  // the rule's (0, raised to the mma.sync floor) and caps below it, on purpose
            CHECK((std::count(d.values.begin(), d.values.end(), 0) == 1 &&
                   std::count(d.values.begin(), d.values.end(), 128) == 1));
    }
    for (const char *k : {"warp_m", "warp_n", "warps_m", "warps_n", "k_step", "max_registers"})
        CHECK(names.count(k) == 1);
}

// The staged epilogue (knob stage_c): each block's C tile through a block array (shared memory on CUDA), then stored
// by rows; rows and columns past M and N computed in the tile and not stored. Every conv2d and conv3d shape on
// mma.sync (a tiling of odd n-tile count, one with split K; the grouped shapes' windows) and on the emulated wgmma (the
// ring of 3 where the channels allow it), and the block layers with their residual. OpenCL refuses it before launch.
TEST_CASE("the staged epilogue on the emulated implicit GEMMs: conv2d and conv3d shapes and blocks match the float64 "
          "reference",
          "[conv2d_tc][blocks][cpu]") {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    const std::map<std::string, int> wg{{"wgmma", 1},   {"warp_m", 16}, {"warps_n", 1}, {"pad", 0},
                                        {"warps_m", 4}, {"warp_n", 64}, {"k_step", 64}};
    for (const auto &key : conv2d_and_conv3d_shapes()) {
        INFO(key);
        std::smatch groups, channels;
        const bool grouped = std::regex_search(key, groups, std::regex("groups=([0-9]+)")) && std::stoi(groups[1]) > 1;
        REQUIRE(std::regex_search(key, channels, std::regex(",c=([0-9]+)")));
        // five n-tiles a warp (a grouped convolution's windows: one)
        REQUIRE(
            check_with_knobs(key, kTensorCores, {{"stage_c", 1}, {"warp_n", grouped ? 8 : 40}, {"warp_m", 32}}, seed)
                ->knob("stage_c") == 1);
        check_with_knobs(key, kTensorCores, {{"stage_c", 1}, {"split_k", 2}}, seed);
        if (grouped) continue;  // wgmma serves no grouped convolution
        auto knobs = wg;
        knobs["stage_c"] = 1;
        knobs["stages"] = std::stoi(channels[1]) % 8 ? 1 : 3;
        check_with_knobs(key, kTensorCores, knobs, seed);
    }
    for (const std::string key : {"ffn:n=3,c=12,h=1,w=9,e=4,act=relu,dtype=f16",
                                  "convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu,dtype=f16",
                                  "mbconv:n=2,c=24,h=7,w=13,e=6,k=3,stride=1,act=relu6,dtype=bf16"})
        check_with_knobs(key, kLayerByLayerTc, {{"tc0_stage_c", 1}, {"tc1_stage_c", 1}, {"tc2_stage_c", 1}}, seed);
    const std::string key = conv2d_and_conv3d_shapes().front();
    const KernelVariant *v = kernel_with_knobs(key, kTensorCores, Device::opencl, {{"stage_c", 1}}, 0, "test");
    CHECK_THAT(conv2d_tc_launch_error(*v, parse_conv2d(key), launch_limits(Device::opencl)),
               Catch::Contains("stage_c = 1 is for CUDA and the CPU"));
}
