#define CATCH_CONFIG_MAIN
#include "tests/common/block_cases.h"
#include "runtime/dispatch.h"
#include "schedules/block_knobs.h"
#include "tests/common/stem_cases.h"
#include <algorithm>
#include <tuple>

using namespace blockfuse;

TEST_CASE("every CPU block variant (layer-by-layer and fused) matches the float64 reference", "[blocks][cpu]") {
    test::check_all_block_variants(Device::cpu, {DType::f32});
}

TEST_CASE("every CPU stage variant (layer-by-layer, per-block fused, depth-first) matches the float64 reference",
          "[stages][cpu]") {
    test::check_all_block_variants(Device::cpu, {DType::f32}, true);
}

TEST_CASE("every CPU stem variant (layer-by-layer and depth-first) matches the float64 reference", "[stem][cpu]") {
    test::check_all_stem_variants(Device::cpu, {DType::f32});
}

TEST_CASE("stem keys round-trip, bad ones name the field, accounting drops the intermediate", "[stem]") {
    const char *key = "stem:n=128,h=224,w=224,c=3,k=64,dtype=f16";
    StemWorkload w = parse_stem(key);
    CHECK(to_key(w) == key);
    CHECK(w.out_h() == 56);
    CHECK(w.out_w() == 56);
    REQUIRE_THROWS_WITH(parse_stem("stem:n=1,w=4"), Catch::Contains("missing field 'h'"));
    REQUIRE_THROWS_WITH(parse_stem("stem:n=1,h=4,w=4,k=0"), Catch::Contains("field 'k' = 0 must be positive"));
    auto lbl = stem_costs(w, "layer_by_layer"), df = stem_costs(w, "depth_first");
    REQUIRE(lbl.size() == 2);
    REQUIRE(df.size() == 1);
    const double mid = 2.0 * 128 * 64 * 112 * 112;  // the conv output, f16
    CHECK(lbl[0].bytes + lbl[1].bytes - df[0].bytes == Approx(2 * mid));
    CHECK(df[0].flops == Approx(2.0 * 128 * 64 * 112 * 112 * 27));
    // Launch limits: the default depth-first tile fits (64 x 17 x 9 x 2 B), a 16x16 pool tile does not.
    KernelVariant v =
        make_variant("stem", "synthetic", Device::cuda, DType::f16,
                     {{"strategy", "depth_first"}, {"channels", "3"}, {"out_channels", "64"}}, {}, 0, "test");
    CHECK_NOTHROW(check_stem_launch(v, w));
    v.knobs["tile_x"] = 16;
    v.knobs["tile_y"] = 16;
    CHECK_THROWS_WITH(check_stem_launch(v, w),
                      Catch::Contains("bytes of shared memory exceed") && Catch::Contains("strategy depth_first"));
}

TEST_CASE("block keys round-trip and bad ones name the field", "[blocks][workload]") {
    for (const char *key : {"mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16",
                            "ffn:n=1,c=256,h=1,w=25088,e=4,act=relu,dtype=f16",
                            "convfirst:n=8,c=64,h=56,w=56,e=4,k=3,stride=1,act=relu,dtype=f16",
                            "fused_mbconv:n=128,c=48,h=56,w=56,e=4,k=3,stride=1,act=silu,dtype=f16",
                            "convnext:n=128,c=96,h=56,w=56,e=4,k=7,stride=1,act=gelu,dtype=f16",
                            "mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,blocks=3,act=relu6,dtype=f16",
                            "ffn:n=1,c=16,h=3,w=5,e=2,blocks=4,act=relu,dtype=f32",
                            "mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,se=1,act=relu6,dtype=f16"}) {
        INFO(key);
        CHECK(to_key(parse_block(key)) == key);
    }
    struct Case {
        const char *key, *expect;
    };
    for (auto [key, expect] : std::initializer_list<Case>{
             {"mbconv:n=1,c=8,h=4,w=4,k=3", "missing field 'e'"},
             {"mbconv:n=1,c=8,h=4,w=4,e=6,k=4", "field 'k' = 4 must be odd"},
             {"mbconv:n=1,c=8,h=4,w=4,e=6,stride=3", "field 'stride' = 3 must be 1 or 2"},
             {"convfirst:n=1,c=12,h=4,w=4,e=4", "must be a multiple of the group width 8"},
             {"ffn:n=1,c=8,h=4,w=4,e=6,se=1", "Squeeze-Excitation is part of mbconv only"},
             {"mbconv:n=1,c=8,h=4,w=4,e=6,se=2", "field 'se' = 2 must be 0 or 1"},
             {"mbconv:n=1,c=8,h=4,w=4,e=6,blocks=2,se=1", "of blocks with se=1 is not supported"},
             {"mbconv:n=1,c=8,h=4,w=4,e=6,act=none", "field 'act' = 'none'"},
             {"ffn:n=1,c=8,h=4,w=4,e=4,k=3", "ffn has no spatial kernel"},
             {"mbconv:n=1,c=8,h=0,w=4,e=6", "field 'h' = 0 must be positive"},
             {"resblock:n=1", "family 'resblock'"},
             {"mbconv:n=1,c=8,h=4,w=4,e=6,blocks=5", "field 'blocks' = 5 must be 1 to 4"},
             {"mbconv:n=1,c=8,h=4,w=4,e=6,blocks=x", "field 'blocks' = 'x' is not an integer"},
             {"mbconv:n=1,c=8,h=8,w=8,e=6,stride=2,blocks=2", "a stage (blocks = 2) needs stride 1"},
         }) {
        INFO(key);
        REQUIRE_THROWS_AS(parse_block(key), WorkloadError);
        REQUIRE_THROWS_WITH(parse_block(key), Catch::Contains(expect));
    }
}

TEST_CASE("block accounting: fused moves only the block's input, weights and output", "[blocks][model]") {
    BlockWorkload w = parse_block("mbconv:n=2,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16");
    auto lbl = block_costs(w, "layer_by_layer"), fused = block_costs(w, "fused");
    REQUIRE(lbl.size() == 3);
    REQUIRE(fused.size() == 1);
    const double P = 2.0 * 56 * 56, C = 24, E = 144;
    // MACs: expand P*C*E, depthwise P*E*9, project P*E*C; 2 ops per MAC.
    CHECK(fused[0].flops == Approx(2 * (P * C * E + P * E * 9 + P * E * C)));
    CHECK(lbl[0].flops + lbl[1].flops + lbl[2].flops == Approx(fused[0].flops));
    // Fused bytes: input + output (2 bytes each) + weights (2 bytes) + biases (4 bytes).
    double weights = 2 * (C * E + E * 9 + E * C) + 4 * (E + E + C);
    CHECK(fused[0].bytes == Approx(2 * P * C * 2 + weights));
    // Layer by layer also writes and reads the two hidden tensors and re-reads the input.
    double hidden = 2 * P * E;
    CHECK(lbl[0].bytes + lbl[1].bytes + lbl[2].bytes == Approx(2 * P * C * 3 + weights + 4 * hidden));
}

TEST_CASE("block accounting: the tensors a kernel re-reads within its run", "[blocks][model]") {
    // mbconv c=24 e=6 N=2 56x56 f16: layer 1 reads the hidden tensor layer 0 wrote; layer 2 reads
    // the depthwise output and re-reads the block input for the residual. Fused: nothing.
    BlockWorkload w = parse_block("mbconv:n=2,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16");
    const double P = 2.0 * 56 * 56, C = 24, E = 144;
    auto lbl = block_costs(w, "layer_by_layer");
    REQUIRE(lbl.size() == 3);
    CHECK(lbl[0].rereads.empty());
    REQUIRE(lbl[1].rereads.size() == 1);
    CHECK(lbl[1].rereads[0] == Approx(2 * P * E));
    REQUIRE(lbl[2].rereads.size() == 2);
    CHECK(lbl[2].rereads[0] == Approx(2 * P * E));
    CHECK(lbl[2].rereads[1] == Approx(2 * P * C));
    CHECK(block_costs(w, "fused")[0].rereads.empty());
    // A stage's fused blocks: each block after the first reads the previous one's output.
    BlockWorkload st = parse_block("mbconv:n=2,c=24,h=56,w=56,e=6,k=3,stride=1,blocks=3,act=relu6,dtype=f16");
    auto fused = block_costs(st, "fused");
    REQUIRE(fused.size() == 3);
    CHECK(fused[0].rereads.empty());
    for (int b = 1; b < 3; ++b) {
        REQUIRE(fused[b].rereads.size() == 1);
        CHECK(fused[b].rereads[0] == Approx(2 * P * C));
    }
    // Layer by layer in a stage: block 1's first layer reads block 0's output.
    auto stage_lbl = block_costs(st, "layer_by_layer");
    REQUIRE(stage_lbl[3].rereads.size() == 1);
    CHECK(stage_lbl[3].rereads[0] == Approx(2 * P * C));
    // LayerNorm: mean, rstd and normalize re-read the layer output and the statistics.
    BlockWorkload cn = parse_block("convnext:n=2,c=16,h=9,w=9,e=4,k=7,stride=1,act=gelu,dtype=f16");
    auto norm = block_costs(cn, "layer_by_layer");
    const double Q = 2.0 * 9 * 9;
    CHECK(norm[1].rereads == std::vector<double>{2 * 16 * Q});
    CHECK(norm[3].rereads == std::vector<double>{2 * 16 * Q, 4 * Q, 4 * Q});
    CHECK(norm[4].rereads == std::vector<double>{2 * 16 * Q});  // the next layer reads the normalized tensor
}

namespace {
// A CUDA f16 block variant that is never built, for the launch checker: channels and expansion are
// static params, the rest schedule knobs over their declared defaults.
KernelVariant synthetic_cuda_block(const std::string &family, const std::string &strategy,
                                   std::map<std::string, int> knobs) {
    std::map<std::string, std::string> params{{"family", family}, {"strategy", strategy}};
    for (const char *p : {"channels", "expansion"})
        if (auto it = knobs.find(p); it != knobs.end()) {
            params[p] = std::to_string(it->second);
            knobs.erase(it);
        }
    return make_variant("block", "synthetic", Device::cuda, DType::f16, params, knobs, 0, "test");
}
}  // namespace

TEST_CASE("block launches beyond threads or shared memory are rejected, naming block, strategy and limit",
          "[blocks][launch]") {
    BlockWorkload w = parse_block("mbconv:n=1,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16");
    KernelVariant v = synthetic_cuda_block(
        "mbconv", "fused",
        {{"channels", 24}, {"expansion", 6}, {"vec_k", 4}, {"tile_x", 8}, {"tile_y", 4}, {"chunk", 8}});
    CHECK_NOTHROW(check_block_launch(v, w));
    v.knobs["tile_x"] = 64;  // 6 x 64 = 384 threads; accumulator 24 x 64 x 32 x 4 B = 196 KB
    v.knobs["tile_y"] = 32;
    CHECK_THROWS_WITH(check_block_launch(v, w), Catch::Contains("bytes of shared memory exceed") &&
                                                    Catch::Contains("strategy fused") && Catch::Contains("mbconv:"));
    v.knobs["vec_k"] = 1;  // 24 x 64 = 1536 threads
    CHECK_THROWS_WITH(check_block_launch(v, w), Catch::Contains("1536 threads per block exceed"));
    // The estimate itself: accumulator + the expand chunk on the tile + 1-pixel halo + the depthwise chunk.
    CHECK(fused_block_shared_bytes(w.spec(), 8, 4, 8, 2) == 4LL * 24 * 8 * 4 + 8LL * 10 * 6 * 2 + 8LL * 8 * 4 * 2);
    // stage_weights adds the chunk's f32 weights: expand 8 x 24, depthwise 8 x 1 x 3 x 3, project 24 x 8.
    CHECK(fused_block_shared_bytes(w.spec(), 8, 4, 8, 2, 1, 1) ==
          fused_block_shared_bytes(w.spec(), 8, 4, 8, 2) + 4LL * (8 * 24 + 8 * 9 + 24 * 8));
    // stage_weights = 2 adds the full-width layers' whole weights: none in MBConv; ConvFirst c=64's grouped 3x3
    // (64 x 8 x 3 x 3).
    CHECK(fused_block_shared_bytes(w.spec(), 8, 4, 8, 2, 1, 2) == fused_block_shared_bytes(w.spec(), 8, 4, 8, 2, 1, 1));
    const BlockSpec cf = parse_block("convfirst:n=1,c=64,h=56,w=56,e=4,k=3,stride=1,act=relu,dtype=f16").spec();
    CHECK(fused_block_shared_bytes(cf, 16, 4, 32, 2, 1, 2) ==
          fused_block_shared_bytes(cf, 16, 4, 32, 2, 1, 1) + 4LL * 64 * 8 * 9);
    // stage_padded stores both hidden chunks (expand on the tile + halo, depthwise on the tile) as f32.
    CHECK(fused_block_shared_bytes(w.spec(), 8, 4, 8, 2, 1, false, true) ==
          4LL * 24 * 8 * 4 + 8LL * 10 * 6 * 4 + 8LL * 8 * 4 * 4);
    // ...which the launch check counts: an FFN c=256 chunk 32 stages 2 x 32 x 256 x 4 B = 64 KB of weights.
    BlockWorkload ffn = parse_block("ffn:n=1,c=256,h=14,w=14,e=4,act=relu,dtype=f16");
    KernelVariant f = synthetic_cuda_block(
        "ffn", "fused",
        {{"channels", 256}, {"expansion", 4}, {"vec_k", 8}, {"tile_x", 7}, {"tile_y", 2}, {"chunk", 32}});
    CHECK_NOTHROW(check_block_launch(f, ffn));
    f.knobs["stage_weights"] = 1;
    CHECK_THROWS_WITH(check_block_launch(f, ffn), Catch::Contains("bytes of shared memory exceed"));
}

TEST_CASE("every CUDA block variant built for a workload of the blocks suite launches there", "[blocks][launch]") {
    // The launch check with the H200's limits (1024 threads, 227 KB of shared memory with the opt-in
    // runtime/cuda_driver.cpp makes for Halide's launches), so a mapping the benchmark would reject
    // fails here, in CI, instead.
    const LaunchLimits h200{1024, 227 * 1024};
    int checked = 0;
    for (const SuiteEntry &e : load_suite(BLOCKFUSE_SOURCE_DIR "/workloads/blocks.txt")) {
        if (!is_block_key(e.key)) continue;
        const BlockWorkload w = parse_block(e.key);
        for (const KernelVariant *v : block_candidates(w, Device::cuda)) {
            INFO(e.name << ": " << v->name);
            CHECK_NOTHROW(check_block_launch(*v, w, h200));
            ++checked;
        }
    }
    CHECK(checked > 100);
}

TEST_CASE("layer-by-layer block threads: the larger of the 1x1 layers' mapping and the default", "[blocks][launch]") {
    BlockWorkload w = parse_block("ffn:n=1,c=256,h=14,w=14,e=4,act=relu,dtype=f16");
    KernelVariant v = synthetic_cuda_block("ffn", "layer_by_layer", {{"channels", 256}, {"expansion", 4}});
    CHECK(v.threads_per_block() == 32 * 4);  // conv2d defaults: threads_k x threads_x
    v.knobs["pw_threads_k"] = 16;
    v.knobs["pw_threads_x"] = 4;
    CHECK(v.threads_per_block() == 32 * 4);  // 64 for the 1x1 layers, the other layers keep 128
    v.knobs["pw_threads_x"] = 16;
    CHECK(v.threads_per_block() == 256);
    CHECK_NOTHROW(check_block_launch(v, w));
    v.knobs["pw_threads_k"] = 128;  // 128 x 16 = 2048 threads
    CHECK_THROWS_WITH(check_block_launch(v, w),
                      Catch::Contains("2048 threads per block exceed") && Catch::Contains("strategy layer_by_layer"));
}

TEST_CASE("layer-by-layer mappings: which layer takes which knobs, threads and the dense layers' shared tile",
          "[blocks][launch]") {
    CHECK(layer_mapping(1, 1) == LayerMapping::pointwise);
    CHECK(layer_mapping(3, 1) == LayerMapping::full);    // FusedMBConv's expand
    CHECK(layer_mapping(7, 96) == LayerMapping::layer);  // depthwise
    CHECK(layer_mapping(3, 8) == LayerMapping::layer);   // ConvFirst's grouped conv
    CHECK(layer_mapping(1, 4) == LayerMapping::layer);   // grouped 1x1: not the dense pointwise mapping
    BlockWorkload w = parse_block("fused_mbconv:n=1,c=48,h=56,w=56,e=4,k=3,stride=1,act=silu,dtype=f16");
    KernelVariant v = synthetic_cuda_block("fused_mbconv", "layer_by_layer", {{"channels", 48}, {"expansion", 4}});
    v.knobs["full_threads_k"] = 32;
    v.knobs["full_threads_x"] = 16;  // the dense layer's 512 threads decide
    CHECK(v.threads_per_block() == 512);
    v.knobs["layer_flat_threads"] = 640;
    CHECK(v.threads_per_block() == 640);
    v.knobs.erase("layer_flat_threads");
    // The dense 3x3 layer's input tile + halo in f32: (16 x 2 - 1 + 3) x (2 - 1 + 3) pixels x 48 channels.
    v.knobs["full_stage_input"] = 2;
    v.knobs["full_tile_x"] = 2;
    v.knobs["full_tile_y"] = 2;
    CHECK(staged_tile_bytes(48, 16 * 2, 2, 1, 3, 1) == 4LL * 48 * 34 * 4);
    CHECK_NOTHROW(check_block_launch(v, w));  // 26 KB
    v.knobs["full_tile_y"] = 8;               // 34 x 10 x 48 x 4 B = 65 KB
    CHECK_THROWS_WITH(check_block_launch(v, w), Catch::Contains("65280 bytes of shared memory exceed"));
}

TEST_CASE("the dispatcher: a named variant the data marks default, else a kernel from the heuristics", "[blocks]") {
    // Every default of the variant data is what the dispatcher picks for a workload of its configuration
    // (any image size; without records), and its other strategies get a kernel generated for them.
    int defaults = 0;
    for (const auto &v : data_variants()) {
        if (!v.data_default || v.family != "block") continue;
        ++defaults;
        const std::string key = std::string(v.param("family")) + ":n=1,c=" + std::to_string(v.knob("channels")) +
                                ",h=31,w=29,e=" + std::to_string(v.knob("expansion")) +
                                (v.param("family") == "ffn" ? ""
                                                            : ",k=" + std::to_string(v.knob("kernel_size")) +
                                                                  ",stride=" + std::to_string(v.knob("stride"))) +
                                (v.knob("blocks") > 1 ? ",blocks=" + std::to_string(v.knob("blocks")) : "") +
                                (v.knob("se") ? ",se=1" : "") + ",act=" + activation_name(Activation(v.knob("act"))) +
                                ",dtype=" + dtype_name(v.dtype);
        INFO(v.name << " for " << key);
        const Pick p = dispatch(key, v.param("strategy"), v.device, nullptr);
        CHECK(p.variant == &v);
        CHECK(p.source == "variant data");
        for (const auto &s : strategies_of(key))
            if (s != v.param("strategy")) {
                const Pick other = dispatch(key, s, v.device, nullptr);
                CHECK(other.variant->param("strategy") == s);
                if (!other.variant->data_default) CHECK(other.source == "heuristic");
            }
    }
    CHECK(defaults > 0);
    // A configuration no variant was made for: generated, named after its shape, the knobs from the heuristics.
    const Pick g = dispatch("mbconv:n=1,c=32,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16", "layer_by_layer",
                            Device::cuda, nullptr);
    CHECK(g.source == "heuristic");
    CHECK(g.variant->name.rfind("mbconv_c32e6k3s1_relu6_layer_by_layer_f16_cuda@", 0) == 0);
    CHECK(g.variant->why.rfind("heuristic", 0) == 0);
    CHECK_THROWS_WITH(dispatch("mbconv:n=1,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16", "depth_first",
                               Device::cuda, nullptr),
                      Catch::Contains("strategy 'depth_first' does not apply") &&
                          Catch::Contains("layer_by_layer, fused"));
}

TEST_CASE("flat-mapped 1x1 layers are offered only where every 1x1 output holds one tile", "[blocks][launch]") {
    auto has_flat = [](const std::string &key) {
        for (const KernelVariant *v : block_candidates(parse_block(key), Device::opencl))
            if (v->knob("pw_flat_threads", 0) > 0) return true;
        return false;
    };
    CHECK(has_flat("ffn:n=1,c=12,h=5,w=7,e=4,act=relu,dtype=f32"));  // tile 7x1: fits
    CHECK(has_flat("ffn:n=1,c=12,h=1,w=9,e=4,act=relu,dtype=f32"));  // the last tile shifts inwards
    CHECK_FALSE(has_flat("ffn:n=1,c=12,h=5,w=6,e=4,act=relu,dtype=f32"));
    CHECK_FALSE(has_flat("convfirst:n=2,c=16,h=5,w=5,e=2,k=3,stride=1,act=relu,dtype=f32"));
    // The non-flat variants of the same shape are still offered.
    CHECK_FALSE(block_candidates(parse_block("ffn:n=1,c=12,h=5,w=6,e=4,act=relu,dtype=f32"), Device::opencl).empty());
}

TEST_CASE("stage accounting: per-block fusion writes every block output, depth-first only the last",
          "[blocks][model]") {
    BlockWorkload one = parse_block("mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16");
    BlockWorkload w = parse_block("mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,blocks=3,act=relu6,dtype=f16");
    auto lbl = block_costs(w, "layer_by_layer"), fused = block_costs(w, "fused"), df = block_costs(w, "depth_first");
    const KernelCost block = block_costs(one, "fused")[0];
    const auto layers = block_costs(one, "layer_by_layer");
    REQUIRE(lbl.size() == 9);
    REQUIRE(fused.size() == 3);
    REQUIRE(df.size() == 1);
    CHECK(lbl[4].name == "b1_layer1");
    CHECK(fused[2].name == "b2_block");
    CHECK(df[0].flops == Approx(3 * block.flops));
    for (const auto &k : fused) CHECK(k.bytes == Approx(block.bytes));
    const double act = 2.0 * 8 * 24 * 56 * 56;  // one block input or output, f16
    const double weights = block.bytes - 2 * act;
    CHECK(df[0].bytes == Approx(2 * act + 3 * weights));  // two intermediate outputs never written or read
    double lbl_bytes = 0;
    for (const auto &k : layers) lbl_bytes += k.bytes;
    double stage_lbl = 0;
    for (const auto &k : lbl) stage_lbl += k.bytes;
    CHECK(stage_lbl == Approx(3 * lbl_bytes));
}

TEST_CASE("depth-first shared memory: every earlier block on its grown region", "[blocks][launch]") {
    BlockSpec s = parse_block("mbconv:n=1,c=10,h=9,w=9,e=3,k=3,stride=1,act=relu6").spec();
    // One block = the fused estimate; two blocks add block 0 on the tile grown by block 1's
    // 3x3 halo (10 x 6): its accumulator, its output and its hidden chunks (12 x 8 expand, 10 x 6 depthwise).
    // Channels count as allocated: padded to 8 (10 -> 16, 6 -> 8; schedules/gpu_mapping.h).
    const long long one = fused_block_shared_bytes(s, 8, 4, 6, 4);
    CHECK(one == 4LL * 16 * 8 * 4 + 8LL * 10 * 6 * 4 + 8LL * 8 * 4 * 4);
    CHECK(fused_block_shared_bytes(s, 8, 4, 6, 4, 2) ==
          one + 4LL * 16 * 10 * 6 + 4LL * 16 * 10 * 6 + 8LL * 12 * 8 * 4 + 8LL * 10 * 6 * 4);
}

TEST_CASE("Squeeze-Excitation accounting: the kernels as launched, split around the mean", "[blocks][model]") {
    BlockWorkload plain = parse_block("mbconv:n=2,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16");
    BlockWorkload w = parse_block("mbconv:n=2,c=24,h=56,w=56,e=6,k=3,stride=1,se=1,act=relu6,dtype=f16");
    REQUIRE(w.spec().se_ch == 6);
    auto fused = block_costs(w, "fused", 16, 4), lbl = block_costs(w, "layer_by_layer");
    REQUIRE(fused.size() == 2);  // the fewest a grid-wide mean allows: tile sums, then the block
    CHECK(fused[0].name == "se_pool");
    CHECK(fused[1].name == "block");
    const double P = 2.0 * 56 * 56, C = 24, E = 144, R = 6;
    const double partials =
        4 * 2 * E * (56 / 16 + 1) * (56 / 4);  // f32 per channel, image and 16x4 tile (4 x 14 tiles)
    CHECK(fused[0].flops == 0);                // expand and depthwise recomputed there, counted once (in "block")
    // Block input, expand and depthwise weights (f16) and biases (f32), the partial sums written.
    CHECK(fused[0].bytes == Approx(2 * P * C + 2 * (C * E + E * 9) + 4 * (E + E) + partials));
    // The block: the plain block's flops plus reduce and gate, its bytes plus the partial sums read
    // and the SE weights (f16) and biases (f32).
    CHECK(fused[1].flops == Approx(block_costs(plain, "fused")[0].flops + 2 * 2 * (E * R + R * E)));
    CHECK(fused[1].bytes == Approx(block_costs(plain, "fused")[0].bytes + partials + 2 * 2 * E * R + 4 * (E + R)));
    CHECK(fused[1].rereads.size() == 2);
    // Launch resources: the partial-sum kernel's chunk x tile_x threads where they outnumber the block's, and
    // SE's shared memory (the block's mean, reduce and gate; the partial kernel's column and tile sums).
    CHECK(fused_kernel_threads(24, 4, 16, true, 48) == 48 * 16);
    CHECK(fused_kernel_threads(24, 4, 16, true, 4) == 6 * 16);
    CHECK(fused_kernel_threads(24, 4, 16, false, 48) == 6 * 16);
    CHECK(fused_block_shared_bytes(w.spec(), 16, 4, 8, 2) ==
          fused_block_shared_bytes(plain.spec(), 16, 4, 8, 2) + 4 * (2 * 144 + 8) + 4 * (8 * 16 + 144));  // 6 -> 8
    // layer0, layer1, se_pool_init, se_pool, se_reduce, se_gate, layer2
    REQUIRE(lbl.size() == 7);
    CHECK(lbl[2].name == "se_pool_init");
    CHECK(lbl[2].bytes == Approx(4 * 2 * E));
    CHECK(lbl[3].name == "se_pool");
    CHECK(lbl[3].bytes == Approx(2 * P * E + 8 * 2 * E));  // reads the stored depthwise output once
    CHECK(lbl[4].name == "se_reduce");
    CHECK(lbl[4].flops == Approx(2 * 2 * E * R));
    CHECK(lbl[4].bytes == Approx(2 * E * R + 4 * R + 4 * 2 * (E + R)));
    CHECK(lbl[5].name == "se_gate");
    CHECK(lbl[5].bytes == Approx(2 * R * E + 4 * E + 4 * 2 * (R + E)));
}

TEST_CASE("executed flops: a fused tile recomputes its hidden layers on the later layers' halo", "[blocks][model]") {
    // MBConv c=8 e=2 k=3 on a 7 x 9 image, tiles of 8 x 4: 1 x 3 tiles; the expand on (8+2) x (4+2) pixels per
    // tile, the depthwise and the projection on 8 x 4 (the extents are constant, past the image's edge included).
    BlockWorkload w = parse_block("mbconv:n=1,c=8,h=9,w=7,e=2,k=3,stride=1,act=relu6,dtype=f32");
    const auto L = w.layers();
    REQUIRE(L.size() == 3);
    auto per_pixel = [&](int i) { return conv2d_flops(L[i]) / (7.0 * 9.0); };
    const double tiles = 1 * 3;
    auto fused = block_costs(w, "fused", 8, 4);
    REQUIRE(fused.size() == 1);
    CHECK(fused[0].flops == Approx((per_pixel(0) + per_pixel(1) + per_pixel(2)) * 63));  // compulsory: once each
    CHECK(fused[0].executed() == Approx(tiles * (per_pixel(0) * 10 * 6 + (per_pixel(1) + per_pixel(2)) * 8 * 4)));
    for (const auto &k : block_costs(w, "layer_by_layer")) CHECK(k.executed() == k.flops);  // nothing recomputed
    // Squeeze-Excitation: the partial-sum kernel executes the expand and the depthwise again, the block kernel
    // the gate once per tile (2 x 2 E R flops, E = 16, R = 2).
    BlockWorkload se = parse_block("mbconv:n=1,c=8,h=9,w=7,e=2,k=3,stride=1,se=1,act=relu6,dtype=f32");
    auto split = block_costs(se, "fused", 8, 4);
    REQUIRE(split.size() == 2);
    CHECK(split[0].flops == 0);
    CHECK(split[0].executed() == Approx(tiles * (per_pixel(0) * 10 * 6 + per_pixel(1) * 8 * 4)));
    CHECK(split[1].executed() == Approx(fused[0].executed() + tiles * 2 * 2 * 16 * 2));
    // Depth-first, three blocks: block 0's layers on the tile grown by two more blocks' 3x3 halos.
    BlockWorkload st = parse_block("mbconv:n=1,c=8,h=9,w=7,e=2,k=3,stride=1,blocks=3,act=relu6,dtype=f32");
    auto df = block_costs(st, "depth_first", 8, 4);
    REQUIRE(df.size() == 1);
    const double block2 = per_pixel(0) * 10 * 6 + (per_pixel(1) + per_pixel(2)) * 8 * 4;
    const double block1 = per_pixel(0) * 12 * 8 + (per_pixel(1) + per_pixel(2)) * 10 * 6;
    const double block0 = per_pixel(0) * 14 * 10 + (per_pixel(1) + per_pixel(2)) * 12 * 8;
    CHECK(df[0].executed() == Approx(tiles * (block0 + block1 + block2)));
}

TEST_CASE("LayerNorm accounting: three kernels, each reading the layer's output", "[blocks][model]") {
    BlockWorkload w = parse_block("convnext:n=2,c=16,h=9,w=9,e=4,k=7,stride=1,act=gelu,dtype=f16");
    auto lbl = block_costs(w, "layer_by_layer");
    REQUIRE(lbl.size() == 6);  // layer0 (depthwise 7x7), norm0_mean, norm0_rstd, norm0, layer1, layer2
    const double P = 2.0 * 9 * 9, C = 16;
    CHECK(lbl[1].name == "norm0_mean");
    CHECK(lbl[1].bytes == Approx(2 * C * P + 4 * P));
    CHECK(lbl[2].name == "norm0_rstd");
    CHECK(lbl[2].bytes == Approx(2 * C * P + 8 * P));
    CHECK(lbl[3].name == "norm0");
    CHECK(lbl[3].bytes == Approx(2 * 2 * C * P + 8 * P));
    for (int i = 1; i <= 3; ++i) CHECK(lbl[i].flops == 0);
}

TEST_CASE("BLOCKFUSE_TEST_VARIANTS narrows the variant tests to names containing one of its substrings", "[blocks]") {
    setenv("BLOCKFUSE_TEST_VARIANTS", "fusedR,_cpu", 1);
    CHECK(test::selected_for_test("block_mbc24_fusedR_f32_cuda"));
    CHECK(test::selected_for_test("block_mbc10_fused_f32_cpu"));
    CHECK_FALSE(test::selected_for_test("block_mbc10_fused_f32_opencl"));
    setenv("BLOCKFUSE_TEST_VARIANTS", "", 1);  // empty: every variant
    CHECK(test::selected_for_test("block_mbc10_fused_f32_opencl"));
    unsetenv("BLOCKFUSE_TEST_VARIANTS");
    CHECK(test::selected_for_test("block_mbc10_fused_f32_opencl"));
    // A narrowed run that checked no variant is reported (the GPU test binary then fails), an unnarrowed one not.
    const int before = test::variants_run_count();
    test::variants_run_count() = 0;
    setenv("BLOCKFUSE_TEST_VARIANTS", "no_such_variant", 1);
    CHECK(test::narrowed_run_matched_nothing());
    test::variants_run_count() = 1;
    CHECK_FALSE(test::narrowed_run_matched_nothing());
    unsetenv("BLOCKFUSE_TEST_VARIANTS");
    test::variants_run_count() = 0;
    CHECK_FALSE(test::narrowed_run_matched_nothing());
    test::variants_run_count() = before;
}

// The knob space the tuner searches (schedules/block_knobs.h) must contain every hand-written GPU block
// mapping of the variant data (the f16 CUDA variants), so a search can start from each of them.
TEST_CASE("every fused and depth-first CUDA block mapping of the variant data lies in the declared knob space",
          "[blocks]") {
    int checked = 0;
    for (const auto &v : data_variants()) {
        if (v.family != "block" || v.device != Device::cuda || v.dtype != DType::f16 ||
            v.param("strategy") == "layer_by_layer")
            continue;
        ++checked;
        for (const KnobDecl &k : block_fused_knobs().knobs) {
            const int value = v.knob(k.name);
            if (value == k.default_value) continue;
            INFO(v.name << ": " << k.name << " = " << value);
            CHECK(std::find(k.values.begin(), k.values.end(), value) != k.values.end());
        }
    }
    CHECK(checked > 50);
}

TEST_CASE("a grouped layer's shared input tile must cover whole channel tiles (filtered before building)",
          "[blocks][knobs]") {
    // ConvFirst's grouped 3x3 (group width 8) on 64 channels: a channel tile of 9 leaves a last, partial tile whose
    // shared window reaches past channel 63, which Halide's bounds check refused at launch on the H200.
    const std::string key = "convfirst:n=1,c=64,h=56,w=56,e=4,k=3,stride=1,act=relu,dtype=f16";
    const LaunchLimits h200{1024, 232448, 65536};
    auto error = [&](int threads_k, int vec_k) {
        const KernelVariant *v = kernel_with_knobs(key, "layer_by_layer", Device::cuda,
                                                   {{"layer_stage_input", 2},
                                                    {"layer_threads_k", threads_k},
                                                    {"layer_vec_k", vec_k},
                                                    {"layer_flat_threads", 0}},
                                                   0, "test");
        return parse_op(key)->candidate_error(*v, h200);
    };
    CHECK_THAT(error(9, 1), Catch::Contains("stage_input=2 on a grouped layer needs its channel tile (threads_k x "
                                            "vec_k = 9) to divide its 64 output channels or cover them"));
    CHECK_THAT(error(9, 4), Catch::Contains("(threads_k x vec_k = 36)"));
    CHECK(error(16, 4).find("stage_input=2") == std::string::npos);  // 64 channels: one whole tile
    CHECK(error(8, 1).find("stage_input=2") == std::string::npos);   // 8 tiles of 8
    CHECK(error(30, 4).find("stage_input=2") == std::string::npos);  // 120 >= 64: one tile over all of them
}

TEST_CASE("a block too large for the whole reference is checked on three of its images, in the call as timed",
          "[blocks][cpu]") {
    // Above 2e8 MACs: the kernel runs at the workload's batch and images 0, one between and the last are compared
    // with their float64 reference (an autoscheduler's kernel may split the batch and fail at a smaller one).
    const std::string key = "mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f32";
    std::mt19937_64 rng(std::random_device{}());
    const auto op = parse_op(key);
    auto d = op->check_data(rng);
    CHECK_THAT(d->check_note(), Catch::StartsWith("on images 0, ") && Catch::Contains(" and 7 of 8"));
    const Comparison unwritten = d->check();  // the output as poisoned: every compared element NaN
    CHECK_FALSE(unwritten.ok());
    CHECK_THAT(unwritten.summary(), Catch::Contains(std::to_string(3 * 56 * 56 * 24) + " elements"));
    const KernelVariant &v = *dispatch(key, "layer_by_layer", Device::cpu, nullptr).variant;
    d->run(v);
    const Comparison cmp = d->check();
    INFO(cmp.summary());
    CHECK(cmp.ok());
}
