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
