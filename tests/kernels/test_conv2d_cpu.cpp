#define CATCH_CONFIG_MAIN
#include "tests/common/conv2d_cases.h"

#include "runtime/dispatch.h"

using namespace blockfuse;

TEST_CASE("every CPU conv2d variant matches the float64 reference on the shape table", "[conv2d][cpu]") {
    test::check_all_variants(Device::cpu, {DType::f32, DType::f16, DType::bf16});
}

TEST_CASE("the comparison catches a wrong output and an unwritten one", "[conv2d][cpu]") {
    // The gate itself must be able to fail: corrupt one element, leave another NaN.
    std::mt19937_64 rng(std::random_device{}());
    Conv2dWorkload w = parse_conv2d("conv2d:n=1,c=8,h=6,w=5,k=4,r=3,s=3,stride=1,pad=1,groups=1,dtype=f32");
    Conv2dTensors t = make_conv2d_tensors(w);
    randomize(t, w, rng);
    run_conv2d(*dispatch(to_key(w), "direct", Device::cpu, nullptr).variant, w, t);
    REQUIRE(check_conv2d(w, t, 1 << 20, rng).ok());
    auto *out = static_cast<float *>(t.output.data());
    out[3] += 1e-3f * (1 + std::fabs(out[3]));
    Comparison bad = check_conv2d(w, t, 1 << 20, rng);
    CHECK(bad.violations == 1);
    out[5] = std::nanf("");
    CHECK(check_conv2d(w, t, 1 << 20, rng).unwritten == 1);
}

TEST_CASE("an unwritten output is detected: a poisoned buffer fails the check", "[conv2d][cpu]") {
    std::mt19937_64 rng(std::random_device{}());
    Conv2dWorkload w = parse_conv2d("conv2d:n=1,c=4,h=3,w=3,k=4,r=1,s=1,stride=1,pad=0,groups=1,dtype=f16");
    Conv2dTensors t = make_conv2d_tensors(w);
    randomize(t, w, rng);  // output is NaN-poisoned and no kernel runs
    Comparison c = check_conv2d(w, t, 1 << 20, rng);
    CHECK(c.unwritten == c.elements);
    CHECK_FALSE(c.ok());
}

TEST_CASE("grouped conv2d on the CPU: vectors of output channels within a group, across groups and shifted inwards",
          "[conv2d][cpu][grouped]") {
    // A grouped kernel knows K and so its output channels per group (static_out_channels): a vector lying in one
    // group reads one input value per step, one crossing groups reads each lane's own. Group widths 8 (whole
    // vectors), 4 and 5 (vectors across groups), a last tile shifted inwards onto a vector boundary and off it.
    using K = std::map<std::string, int>;
    const K two_vectors{{"cpu_lanes", 8}, {"cpu_vec_k", 2}, {"cpu_tile_x", 4}, {"cpu_tile_y", 2}};
    test::check_knob_cases(
        {
            {"conv2d:n=1,c=32,h=7,w=9,k=64,r=3,s=3,pad=1,groups=8,bias=1,act=relu,dtype=f32", two_vectors},
            {"conv2d:n=2,c=20,h=5,w=6,k=40,r=3,s=3,stride=2,pad=1,groups=5,dtype=f32", two_vectors},
            {"conv2d:n=2,c=20,h=5,w=6,k=40,r=3,s=3,stride=2,pad=1,groups=5,dtype=f32",
             {{"cpu_lanes", 16}, {"cpu_vec_k", 1}, {"cpu_tile_x", 2}, {"cpu_stage_input", 0}}},
            {"conv2d:n=1,c=9,h=6,w=5,k=15,r=3,s=3,pad=2,dil=2,groups=3,bias=1,dtype=f32",
             {{"cpu_lanes", 8}, {"cpu_vec_k", 2}, {"cpu_tile_x", 3}}},
            {"conv2d:n=1,c=16,h=5,w=7,k=16,r=3,s=3,pad=1,groups=4,act=silu,dtype=f16",
             {{"cpu_lanes", 8}, {"cpu_unroll_c", 2}, {"cpu_window_inner", 1}, {"cpu_rows", 2}}},
        },
        "direct");
}

TEST_CASE("cpu_trim_window: the padding's taps skipped, every tile's window bounded to the image, matches float64",
          "[conv2d][cpu]") {
    // Register tiles that straddle the padded border (tile widths 3 and 5 against dilations 2-12), stride 2 on odd
    // sizes, a window wider than the image (1x1 images, every tap but the centre in the padding), asymmetric
    // padding from the output extent, depthwise and grouped, channels not a whole tile, the window innermost.
    using K = std::map<std::string, int>;
    const K trim{{"cpu_trim_window", 1}};
    test::check_knob_cases(
        {
            {"conv2d:n=1,c=24,h=13,w=11,k=20,r=3,s=3,pad=12,dil=12,dtype=f32",
             {{"cpu_trim_window", 1}, {"cpu_tile_x", 5}, {"cpu_vec_k", 2}}},
            {"conv2d:n=2,c=9,h=7,w=9,k=12,r=3,s=3,stride=2,pad=2,dil=2,bias=1,act=relu,dtype=f32",
             {{"cpu_trim_window", 1}, {"cpu_tile_x", 3}, {"cpu_tile_y", 2}, {"cpu_stage_input", 0}}},
            {"conv2d:n=1,c=16,h=1,w=1,k=8,r=3,s=3,pad=6,dil=6,dtype=f16", trim},
            {"conv2d:n=1,c=8,h=6,w=5,k=16,r=5,s=5,pad=2,dtype=bf16",
             {{"cpu_trim_window", 1}, {"cpu_window_inner", 1}, {"cpu_unroll_c", 2}}},
            {"conv2d:n=1,c=32,h=9,w=7,k=32,r=3,s=3,pad=3,dil=3,groups=32,dtype=f32", trim},
            {"conv2d:n=1,c=12,h=5,w=6,k=24,r=3,s=3,pad=1,groups=3,act=silu,dtype=f32",
             {{"cpu_trim_window", 1}, {"cpu_rows", 2}}},
        },
        "direct");
}
