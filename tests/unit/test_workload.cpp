#define CATCH_CONFIG_MAIN
#include "runtime/conv2d.h"
#include "runtime/kernel_registry.h"
#include "runtime/workload.h"
#include "schedules/gemm_knobs.h"
#include <cstdlib>
#include <set>
#include <utility>
#include <vector>
#include <catch2/catch.hpp>

#include "runtime/dispatch.h"
#include "runtime/block.h"
#include "runtime/gemm.h"
#include "runtime/model.h"
#include "runtime/op.h"
#include "runtime/conv2d_tc.h"
#include "schedules/block_knobs.h"
#include "schedules/gemm_knobs.h"
#include "schedules/heuristics.h"

using namespace blockfuse;

TEST_CASE("canonical keys round-trip through parse and print", "[workload]") {
    for (const char *key : {
             "conv2d:n=2,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,groups=1,dtype=f16",
             "conv2d:n=1,c=3,h=7,w=13,k=1,r=3,s=3,stride_h=2,stride_w=1,pad_t=0,pad_b=2,pad_l=1,pad_r=0,dil=2,groups=1,"
             "bias=1,act=gelu,dtype=bf16",
             "conv2d:n=1,c=2048,h=32,w=32,k=256,r=3,s=3,stride=1,pad=12,dil=12,groups=1,dtype=f16",
             "conv2d:n=1,c=128,h=28,w=28,k=256,r=3,s=3,stride=1,pad=1,dil_h=1,dil_w=3,groups=32,act=relu6,dtype=f32",
         }) {
        INFO(key);
        Conv2dWorkload w = parse_conv2d(key);
        CHECK(to_key(w) == key);
        CHECK(parse_conv2d(to_key(w)) == w);
    }
}

TEST_CASE("defaults and field values are read as written", "[workload]") {
    Conv2dWorkload w = parse_conv2d("conv2d:dtype=f16,s=5,r=3,k=8,w=11,h=9,c=4,n=2,stride_w=2,pad_l=3");
    CHECK(w.n == 2);
    CHECK(w.c == 4);
    CHECK(w.h == 9);
    CHECK(w.w == 11);
    CHECK(w.r == 3);
    CHECK(w.s == 5);
    CHECK(w.stride_h == 1);
    CHECK(w.stride_w == 2);
    CHECK(w.pad_l == 3);
    CHECK(w.pad_r == 0);
    CHECK(w.groups == 1);
    CHECK(w.dtype == DType::f16);
    CHECK(w.out_h() == 7);                     // (9 - 3) / 1 + 1
    CHECK(w.out_w() == (11 + 3 - 5) / 2 + 1);  // 5
}

TEST_CASE("the kernel family follows the shape", "[workload]") {
    CHECK(parse_conv2d("conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,groups=8").kind() == ConvKindTag::depthwise);
    CHECK(parse_conv2d("conv2d:n=1,c=8,h=4,w=4,k=16,r=3,s=3,groups=8").kind() == ConvKindTag::depthwise);
    CHECK(parse_conv2d("conv2d:n=1,c=8,h=4,w=4,k=16,r=1,s=1").kind() == ConvKindTag::pointwise);
    CHECK(parse_conv2d("conv2d:n=1,c=8,h=4,w=4,k=16,r=1,s=1,groups=2").kind() == ConvKindTag::general);
    CHECK(parse_conv2d("conv2d:n=1,c=1,h=4,w=4,k=1,r=3,s=3,groups=1").kind() == ConvKindTag::general);
}

TEST_CASE("bad keys get one clear message naming the field and the value", "[workload]") {
    struct Case {
        const char *key, *expect;
    };
    for (auto [key, expect] : std::initializer_list<Case>{
             {"", "empty key"},
             {"garbage", "no ':'"},
             {"conv3d:n=1", "family 'conv3d'"},
             {"conv2d:", "no fields"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3", "missing field 's'"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,foo=1", "unknown field 'foo'"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,n=2", "field 'n' given twice"},
             {"conv2d:n=0,c=8,h=4,w=4,k=8,r=3,s=3", "field 'n' = 0 must be positive"},
             {"conv2d:n=1,c=-8,h=4,w=4,k=8,r=3,s=3", "field 'c' = -8 must be positive"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,groups=3", "field 'groups' = 3 does not divide c = 8"},
             {"conv2d:n=1,c=8,h=4,w=4,k=6,r=3,s=3,groups=4", "field 'groups' = 4 does not divide k = 6"},
             {"conv2d:n=1,c=8,h=2,w=4,k=8,r=3,s=3", "empty output"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,dtype=f64", "field 'dtype' = 'f64' is not supported"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,dtype=int8", "field 'dtype' = 'int8'"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,act=tanh", "field 'act' = 'tanh'"},
             {"conv2d:n=1,c=x8,h=4,w=4,k=8,r=3,s=3", "field 'c' = 'x8' is not an integer"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=1,pad_t=2", "fields 'pad' and 'pad_t' are both given"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,pad=-1", "field 'pad_t' = -1 must not be negative"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,bias=2", "field 'bias' = 2 must be 0 or 1"},
             {"conv2d:n=1,c=8,h=4,w=4,k=8,r=3,s=3,stride=99999999999", "out of range"},
             {"conv2d:n=100000,c=1000,h=100,w=100,k=8,r=3,s=3", "more than 2^31 elements"},
             {"conv2d:n=1,,c=8", "empty field"},
             {"conv2d:n=1,c", "field 'c' has no '='"},
         }) {
        INFO(key);
        REQUIRE_THROWS_AS(parse_conv2d(key), WorkloadError);
        REQUIRE_THROWS_WITH(parse_conv2d(key), Catch::Contains(expect));
    }
}

TEST_CASE("the CUDA register cap follows the block size unless a fixed cap is asked for", "[registers]") {
    if (std::getenv("HL_CUDA_JIT_MAX_REGISTERS")) {
        WARN("HL_CUDA_JIT_MAX_REGISTERS is set in the environment and wins over the policy: not checked");
        return;
    }
    KernelVariant v;
    v.family = "conv2d";
    v.device = Device::cuda;
    auto cap_for = [&](int threads_k, int threads_x) {
        v.knobs = {{"threads_k", threads_k}, {"threads_x", threads_x}};
        return register_cap(v);
    };
    set_register_policy(0);
    CHECK(cap_for(32, 4) == 255);   // 128 threads: 512 would fit, the ISA stops at 255
    CHECK(cap_for(32, 12) == 168);  // 384 threads: 65536 / 384 = 170.7, down to a multiple of 8
    CHECK(cap_for(32, 16) == 128);  // 512 threads
    CHECK(cap_for(32, 32) == 64);   // 1024 threads: Halide's own default is the most that fits
    CHECK(cap_for(20, 17) == 168);  // 340 threads = 11 warps, allocated as 12: 65536 / 384 = 170.7 -> 168
    CHECK(cap_for(36, 8) == 168);   // 288 threads = 9 warps, allocated as 12 (224 failed its launch on the H200)
    CHECK(cap_for(36, 4) == 255);   // 144 threads = 5 warps, allocated as 8: 256 -> the ISA's 255
    v.max_registers = 64;           // the variant's own cap (variant data or tuning record)
    CHECK(register_cap(v) == 64);
    set_register_policy(96);  // --max-registers wins over the knob
    CHECK(register_cap(v) == 96);
    CHECK(cap_for(32, 4) == 96);
    set_register_policy(0);
}

TEST_CASE("flat-mapped depthwise variants: launch shape, block size, and only images holding a whole tile",
          "[registers][dispatch]") {
    KernelVariant v;
    v.family = "conv2d";
    v.device = Device::cuda;
    v.knobs = {{"flat_threads", 64}, {"vec_k", 4}, {"tile_x", 4}, {"tile_y", 4}, {"threads_k", 36}, {"threads_x", 2}};
    Conv2dWorkload w = parse_conv2d("conv2d:n=3,c=144,h=57,w=13,k=144,r=3,s=3,pad=1,groups=144,dtype=f16");
    LaunchShape s = conv2d_launch_shape(v, w);
    CHECK(s.threads == 64);  // flat_threads wins over threads_k x threads_x
    CHECK(v.threads_per_block() == 64);
    CHECK(s.grid[0] == (36 * 4 + 63) / 64);  // 36 channel vectors x ceil(13 / 4) = 4 x tiles, in blocks of 64
    CHECK(s.grid[1] == 15);                  // ceil(57 / 4) rows of tiles
    CHECK(s.grid[2] == 3);                   // images
    set_register_policy(0);
    if (!std::getenv("HL_CUDA_JIT_MAX_REGISTERS"))  // set in the environment, it wins (see the case above)
        CHECK(register_cap(v) == 255);              // 2 warps, allocated as 4: 512 -> the ISA's 255

    // The dispatcher offers a flat variant only where its tile fits in the output image (edge
    // tiles shift inwards), and ranks the built ones first on the shape they were made for.
    for (const char *key : {"conv2d:n=1,c=144,h=3,w=56,k=144,r=3,s=3,pad=1,groups=144,dtype=f16",
                            "conv2d:n=1,c=144,h=56,w=2,k=144,r=3,s=3,pad=1,groups=144,dtype=f16"}) {
        Conv2dWorkload small = parse_conv2d(key);
        for (const KernelVariant *c : conv2d_candidates(small, Device::cuda)) {
            INFO(c->name << " on " << key);
            if (c->knob("flat_threads", 0) > 0)
                CHECK((c->knob("tile_x", 0) <= small.out_w() && c->knob("tile_y", 0) <= small.out_h()));
        }
    }
    // Staged-window general variants: one group only, whole 4-channel steps, and a shared tile that fits
    // (c: (8 x 4 - 1 + 3) x (2 - 1 + 3) pixels x C channels x 4 B, so C = 64 fits in 48 KB and C = 128 does not).
    auto names = [](const std::string &key) {
        std::set<std::string> n;
        for (const KernelVariant *c : conv2d_candidates(parse_conv2d(key), Device::cuda)) n.insert(c->name);
        return n;
    };
    auto c64 = names("conv2d:n=2,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,groups=1,dtype=f16");
    CHECK(c64.count("conv2d_general_c_f16_cuda") == 1);
    CHECK(c64.count("conv2d_general_e_f16_cuda") == 1);
    auto c128 = names("conv2d:n=2,c=128,h=56,w=56,k=64,r=3,s=3,pad=1,groups=1,dtype=f16");
    CHECK(c128.count("conv2d_general_c_f16_cuda") == 0);  // 69632 B of shared tile
    CHECK(c128.count("conv2d_general_e_f16_cuda") == 1);  // no shared tile
    auto grouped = names("conv2d:n=2,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,groups=2,dtype=f16");
    CHECK(grouped.count("conv2d_general_e_f16_cuda") == 0);
    CHECK(grouped.count("conv2d_general_a_f16_cuda") == 1);
    auto s2 = names("conv2d:n=1,c=8,h=9,w=9,k=8,r=5,s=5,stride=2,pad=2,groups=1,dtype=f16");
    CHECK(s2.count("conv2d_general_g_f16_cuda") == 1);
    CHECK(s2.count("conv2d_general_f_f16_cuda") == 0);  // 3x3 only
    // A variant that reads f32 weights (widened at load time) moves 4-byte weights in the model.
    Conv2dWorkload f16 = parse_conv2d("conv2d:n=2,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,groups=1,dtype=f16");
    KernelVariant wide;
    wide.params["weights.type"] = "float32";
    CHECK(takes_f32_weights(wide));
    CHECK(conv2d_bytes(f16, &wide) - conv2d_bytes(f16) == 2.0 * 64 * 64 * 9);
    // Without the widened copy such a variant refuses to run, naming the cause.
    Conv2dWorkload g = parse_conv2d("conv2d:n=1,c=2,h=3,w=3,k=2,r=3,s=3,pad=1,groups=1,dtype=f16");
    int widened = 0;
    for (const KernelVariant *v : conv2d_candidates(g, Device::cpu))
        if (takes_f32_weights(*v)) {
            ++widened;
            Conv2dTensors t = make_conv2d_tensors(g);
            CHECK_THROWS_WITH(run_conv2d(*v, g, t), Catch::Contains("widen_weights() was not called"));
        }
    CHECK(widened == 1);  // conv2d_general_w_f16_cpu
    // The dispatcher's kernel for a depthwise 3x3 is the flat mapping, made for the shape.
    const Pick big = dispatch("conv2d:n=2,c=144,h=56,w=56,k=144,r=3,s=3,pad=1,groups=144,dtype=f16", "direct",
                              Device::cuda, nullptr);
    CHECK(big.source == "heuristic");
    CHECK(big.variant->knob("flat_threads") > 0);
    CHECK(big.variant->knob("static_channels") == 144);
}

TEST_CASE("GEMMs on Hopper take the swizzled wgmma ring where it was measured faster, mma.sync elsewhere",
          "[heuristics]") {
    auto wgmma = [](const std::string &key, const char *gpu) {
        setenv("BLOCKFUSE_GPU", gpu, 1);  // this machine has no GPU: the heuristics read the one named
        const ScheduleChoice s = gemm_heuristic(parse_gemm(key), Device::cuda);
        unsetenv("BLOCKFUSE_GPU");
        auto it = s.knobs.find("wgmma");
        return it != s.knobs.end() && it->second == 1;
    };
    const char *h200 = "NVIDIA H200:sm_90", *a100 = "NVIDIA A100-SXM4-80GB:sm_80";
    CHECK(wgmma("gemm:m=4096,n=4096,k=4096,dtype=f16", h200));
    CHECK(wgmma("gemm:m=25088,n=256,k=1024,dtype=f16", h200));
    CHECK(wgmma("gemm:m=25088,n=1024,k=256,dtype=f16", h200));
    CHECK_FALSE(wgmma("gemm:m=25088,n=1024,k=128,dtype=f16", h200));  // shorter reductions not measured
    CHECK(wgmma("gemm:m=25088,n=1024,k=256,dtype=bf16", h200));
    CHECK_FALSE(wgmma("gemm:m=4096,n=4096,k=4096,dtype=f16", a100));  // no wgmma before sm_90
    CHECK_FALSE(wgmma("gemm:m=1024,n=1024,k=4096,dtype=f16", h200));  // 64 tiles: fewer than the SMs
    const ScheduleChoice s = gemm_heuristic(parse_gemm("gemm:m=4096,n=4096,k=4096,dtype=f16"), Device::cpu);
    CHECK(s.knobs.count("wgmma") == 0);
    // The wgmma tiling passes the GEMM's knob check (schedules/gemm_knobs.h).
    setenv("BLOCKFUSE_GPU", h200, 1);
    const ScheduleChoice h = gemm_heuristic(parse_gemm("gemm:m=4096,n=4096,k=4096,dtype=f16"), Device::cuda);
    unsetenv("BLOCKFUSE_GPU");
    CHECK(gemm_knobs_error(gemm_knobs_from(h.knobs)).empty());
    // The epilogue staged where K <= 1024 (faster there, slower at 4096^3: bench/results/h100/stage-c/).
    CHECK(h.knobs.at("stage_c") == 0);
    setenv("BLOCKFUSE_GPU", h200, 1);
    const ScheduleChoice k1024 = gemm_heuristic(parse_gemm("gemm:m=25088,n=256,k=1024,dtype=f16"), Device::cuda);
    unsetenv("BLOCKFUSE_GPU");
    CHECK(k1024.knobs.at("stage_c") == 1);
    CHECK(gemm_knobs_error(gemm_knobs_from(k1024.knobs)).empty());
    // A block's 1x1 layers of that shape on layer_by_layer_tc too, from K = 128 (staged): the FFN's expand (K = 256)
    // and project (K = 1024), ConvFirst's expand and project, not a convolution's implicit GEMM (its grouped 3x3).
    auto block_wgmma = [](const std::string &key, const char *gpu) {
        setenv("BLOCKFUSE_GPU", gpu, 1);
        const ScheduleChoice s = block_heuristic(parse_block(key), "layer_by_layer_tc", Device::cuda);
        unsetenv("BLOCKFUSE_GPU");
        std::set<std::string> on;
        for (const auto &[k, v] : s.knobs)
            if (k.size() > 6 && k.compare(k.size() - 6, 6, "_wgmma") == 0 && v) on.insert(k);
        return on;
    };
    const std::string ffn = "ffn:n=128,c=256,h=14,w=14,e=4,act=relu,dtype=f16";
    CHECK(block_wgmma(ffn, h200) == std::set<std::string>{"tc0_wgmma", "tc1_wgmma"});
    CHECK(block_wgmma(ffn, a100).empty());
    CHECK(block_wgmma("convfirst:n=128,c=256,h=14,w=14,e=4,k=3,stride=1,act=relu,dtype=f16", h200) ==
          (std::set<std::string>{"tc1_wgmma", "tc2_wgmma"}));
    CHECK(block_wgmma("ffn:n=8,c=64,h=14,w=14,e=4,act=relu,dtype=f16", h200).empty());  // K = 64-256, few tiles
    // With their 1x1 layers on wgmma, FFN and ConvFirst at 128 registers (two 8-warp blocks an SM); not where those
    // layers stay on mma.sync, not off sm_90, not FusedMBConv (its wgmma layer a convolution, not measured capped).
    auto cap = [](const std::string &key, const char *gpu) {
        setenv("BLOCKFUSE_GPU", gpu, 1);
        const int r = block_heuristic(parse_block(key), "layer_by_layer_tc", Device::cuda).max_registers;
        unsetenv("BLOCKFUSE_GPU");
        return r;
    };
    CHECK(cap(ffn, h200) == 128);
    CHECK(cap("convfirst:n=128,c=256,h=14,w=14,e=4,k=3,stride=1,act=relu,dtype=f16", h200) == 128);
    CHECK(cap("convfirst:n=128,c=128,h=28,w=28,e=4,k=3,stride=1,act=relu,dtype=f16", h200) == 128);
    CHECK(cap("convfirst:n=128,c=64,h=56,w=56,e=4,k=3,stride=1,act=relu,dtype=f16", h200) == 0);
    CHECK(cap("ffn:n=8,c=64,h=14,w=14,e=4,act=relu,dtype=f16", h200) == 0);
    CHECK(cap(ffn, a100) == 0);
    CHECK(cap("ffn:n=128,c=256,h=14,w=14,e=4,act=relu,dtype=bf16", h200) == 0);  // bf16: mma.sync
    CHECK(cap("fused_mbconv:n=128,c=48,h=56,w=56,e=4,k=3,stride=1,act=silu,dtype=f16", h200) == 0);
}

TEST_CASE("dense convolutions on Hopper take one-warpgroup wgmma tiles, staged, within the knob checks",
          "[heuristics]") {
    auto knobs = [](const std::string &key, const char *gpu) {
        setenv("BLOCKFUSE_GPU", gpu, 1);  // this machine has no GPU: the heuristics read the one named
        const ScheduleChoice s = parse_op(key)->heuristic(kTensorCores, Device::cuda);
        unsetenv("BLOCKFUSE_GPU");
        return s.knobs;
    };
    const char *h200 = "NVIDIA H200:sm_90", *a100 = "NVIDIA A100-SXM4-80GB:sm_80";
    auto at = [](const std::map<std::string, int> &k, const char *name) { return k.count(name) ? k.at(name) : 0; };
    // Long reductions onto two 128 x 128 tiles for every SM: two warpgroups, a 3-stage ring (highres: 36 panels, 392
    // tiles); one fewer tile's worth of rows keeps one warpgroup.
    const auto highres = knobs("conv2d:n=1,c=256,h=112,w=112,k=512,r=3,s=3,pad=1,dtype=f16", h200);
    CHECK(at(highres, "wgmma") == 1);
    CHECK(at(highres, "warps_m") == 8);
    CHECK(at(highres, "warp_n") == 128);
    CHECK(at(highres, "stages") == 3);
    CHECK(at(highres, "split_k") <= 1);
    CHECK(at(highres, "stage_c") == 1);
    CHECK(gemm_knobs_error(gemm_knobs_from(highres)).empty());
    // 65 x 4 = 260 tiles of 128 x 128 (M = 8320), fewer than 264: one warpgroup
    const auto below = knobs("conv2d:n=1,c=256,h=64,w=130,k=512,r=3,s=3,pad=1,dtype=f16", h200);
    CHECK(at(below, "warps_m") == 4);
    CHECK(at(knobs("conv2d:n=1,c=256,h=66,w=130,k=512,r=3,s=3,pad=1,dtype=f16", h200), "warps_m") == 8);
    // Short reductions (15 panels: 1 x 1 over 960 channels) keep one warpgroup however many tiles.
    CHECK(at(knobs("conv2d:n=64,c=960,h=28,w=28,k=512,r=1,s=1,dtype=f16", h200), "warps_m") == 4);
    // The widest of 128, 64, 32 columns not past twice the output channels that still gives every SM a tile; the
    // ring's depth from the reduction a split runs.
    const auto one_group = knobs("conv2d:n=1,c=256,h=56,w=56,k=512,r=3,s=3,pad=1,dtype=f16", h200);
    CHECK(at(one_group, "warps_m") == 4);
    CHECK(at(one_group, "warp_n") == 128);
    CHECK(at(one_group, "stages") == 4);
    const auto narrow = knobs("conv2d:n=128,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,bias=1,act=relu,dtype=f16", h200);
    CHECK(at(narrow, "warp_n") == 64);
    CHECK(at(narrow, "stages") == 3);  // 9 panels of 64
    // 13 x 8 tiles of 64 x 32, fewer than the SMs, but a reduction of 18 panels: not split.
    const auto few = knobs("conv2d:n=1,c=128,h=56,w=56,k=256,r=3,s=3,stride=2,pad=1,dtype=bf16", h200);
    CHECK(at(few, "warp_n") == 32);
    CHECK(at(few, "split_k") <= 1);
    CHECK(at(few, "stages") == 4);
    // Split where the reduction is long (deeplabv3-aspp: 288 panels on 128 tiles) or the tiles very few (16).
    CHECK(at(knobs("conv2d:n=1,c=2048,h=32,w=32,k=256,r=3,s=3,pad=12,dil=12,dtype=f16", h200), "split_k") > 1);
    CHECK(at(knobs("conv2d:n=1,c=128,h=28,w=28,k=128,r=3,s=3,stride=2,pad=1,dtype=bf16", h200), "split_k") > 1);
    // 64 x 128 tiles over 4-15 panels keep 2 stages (whisper-conv1: 3 ran 0.80x).
    CHECK(at(knobs("conv1d:n=1,c=80,l=3000,k=1280,kernel=3,dtype=f16", h200), "stages") == 2);
    // K steps of 32 where at most 4 channels (taps packed) make a reduction of at most 128; 64 elsewhere.
    CHECK(at(knobs("conv3d:n=1,c=3,d=16,h=112,w=112,k=64,kernel=3,pad=1,dtype=f16", h200), "k_step") == 32);
    CHECK(at(knobs("conv2d:n=2,c=64,h=56,w=56,k=256,r=1,s=1,dtype=f16", h200), "k_step") == 64);
    CHECK(at(knobs("conv2d:n=1,c=4,h=56,w=56,k=64,r=7,s=7,pad=3,dtype=f16", h200), "k_step") == 64);  // K = 200
    // No cp.async ring where the input channels are not a multiple of 8 (it copies whole 16-byte rows).
    CHECK(at(knobs("conv2d:n=2,c=96,h=56,w=56,k=64,r=3,s=3,pad=1,dtype=f16", h200), "stages") == 3);
    CHECK(at(knobs("conv2d:n=2,c=100,h=56,w=56,k=64,r=3,s=3,pad=1,dtype=f16", h200), "stages") == 1);
    // conv1d and conv3d by the same rule (their implicit GEMMs); an odd, tiny shape too.
    for (const char *key : {"conv1d:n=1,c=80,l=3000,k=1280,kernel=3,dtype=f16",
                            "conv3d:n=1,c=3,d=16,h=112,w=112,k=64,kernel=3,pad=1,dtype=f16",
                            "conv2d:n=1,c=3,h=1,w=1,k=5,r=1,s=1,dtype=bf16"}) {
        const auto k = knobs(key, h200);
        CHECK(at(k, "wgmma") == 1);
        CHECK(gemm_knobs_error(gemm_knobs_from(k)).empty());
    }
    // A block's dense k x k layer on layer_by_layer_tc (FusedMBConv's expand, stride 1 and 2) by the rule of the
    // convolution it is, within the block's knob check; its 1x1 project (48 columns) stays on mma.sync.
    for (const auto &[block_key, conv_key] : std::vector<std::pair<std::string, std::string>>{
             {"fused_mbconv:n=128,c=48,h=56,w=56,e=4,k=3,stride=1,act=silu,dtype=f16",
              "conv2d:n=128,c=48,h=56,w=56,k=192,r=3,s=3,pad=1,dtype=f16"},
             {"fused_mbconv:n=8,c=24,h=112,w=112,e=4,k=3,stride=2,act=silu,dtype=f16",
              "conv2d:n=8,c=24,h=112,w=112,k=96,r=3,s=3,stride=2,pad=1,dtype=f16"}}) {
        const BlockWorkload b = parse_block(block_key);
        setenv("BLOCKFUSE_GPU", h200, 1);
        const ScheduleChoice s = block_heuristic(b, "layer_by_layer_tc", Device::cuda);
        unsetenv("BLOCKFUSE_GPU");
        const auto conv = knobs(conv_key, h200);
        CHECK(at(conv, "wgmma") == 1);
        for (const auto &[k, v] : conv) {
            INFO(block_key << " tc0_" << k);
            CHECK(at(s.knobs, ("tc0_" + k).c_str()) == v);
        }
        CHECK(at(s.knobs, "tc1_wgmma") == 0);
        CHECK(block_knobs_error(b.spec(), "layer_by_layer_tc", block_knobs_from(s.knobs), true).empty());
        setenv("BLOCKFUSE_GPU", a100, 1);
        CHECK(at(block_heuristic(b, "layer_by_layer_tc", Device::cuda).knobs, "tc0_wgmma") == 0);
        unsetenv("BLOCKFUSE_GPU");
    }
    // Not before sm_90, not grouped (wgmma has no windows), not on the CPU.
    CHECK(at(knobs("conv2d:n=1,c=256,h=112,w=112,k=512,r=3,s=3,pad=1,dtype=f16", a100), "wgmma") == 0);
    CHECK(at(knobs("conv2d:n=1,c=64,h=56,w=56,k=128,r=3,s=3,pad=1,groups=8,dtype=f16", h200), "wgmma") == 0);
    const auto cpu =
        parse_op("conv2d:n=1,c=256,h=112,w=112,k=512,r=3,s=3,pad=1,dtype=f16")->heuristic(kTensorCores, Device::cpu);
    CHECK(at(cpu.knobs, "wgmma") == 0);
}

TEST_CASE("a kernel built with wgmma counts against the wgmma ceiling in the waterline, the others as before",
          "[model]") {
    const BlockWorkload w = parse_block("ffn:n=128,c=256,h=14,w=14,e=4,act=relu,dtype=f16");
    const auto ks = block_costs(w, "layer_by_layer_tc", 8, 4, false, {false, true});
    REQUIRE(ks.size() == 2);
    CHECK(ks[0].tensor_cores);
    CHECK_FALSE(ks[0].wgmma);
    CHECK(ks[1].wgmma);
    const double R = 65e12, B = 4e12, mma = 600e12, wg = 900e12;
    auto expect = [&](const KernelCost &k, double roof) { return std::max(k.flops / roof, k.bytes / B); };
    CHECK(waterline_seconds(ks, R, B, mma, wg) == Approx(expect(ks[0], mma) + expect(ks[1], wg)));
    CHECK(waterline_seconds(ks, R, B, mma) == Approx(expect(ks[0], mma) + expect(ks[1], mma)));  // no wgmma ceiling
    CHECK(kernel_roof(KernelCost{"cuda cores", 1, 1}, R, mma, wg) == R);
}

TEST_CASE("a depth-first pick never gives an earlier block's hidden layer one point per thread", "[heuristics]") {
    // The key a random draw failed on (PoCL): chunk 8 in vectors of 4 over block 1's 6 x 4 pixels is 48 points, the
    // thread block's 48 threads; Halide 21 proves the kernel's bounds check false and builds nothing.
    const BlockWorkload w = parse_block("convfirst:n=2,c=24,h=5,w=7,e=3,k=3,stride=1,blocks=3,act=relu,dtype=f32");
    const std::string why = depth_first_one_point_per_thread(w.spec(), w.blocks, 4, 2, 2, 8, 4);
    CHECK(why.find("block 1's hidden layer 1 has one point per thread") != std::string::npos);
    CHECK(depth_first_one_point_per_thread(w.spec(), w.blocks, 4, 2, 2, 8, 2).empty());
    CHECK(depth_first_one_point_per_thread(w.spec(), 1, 4, 2, 2, 8, 4).empty());  // one block: the fused kernel
    for (Device d : {Device::opencl, Device::cuda}) {
        const ScheduleChoice s = block_heuristic(w, "depth_first", d);
        const BlockKnobs kn = block_knobs_from(s.knobs);
        INFO(s.why);
        CHECK(depth_first_one_point_per_thread(w.spec(), w.blocks, kn.tile_x, kn.tile_y, kn.vec_k, kn.chunk,
                                               kn.hidden_vec)
                  .empty());
        CHECK(block_knobs_error(w.spec(), "depth_first", kn, true).empty());
    }
}
