// [gpu] The CUDA kernels against the float64 reference. Without a CUDA device the binary exits
// with code 77, which ctest reports as skipped (SKIP_RETURN_CODE), not passed.
#define CATCH_CONFIG_RUNNER
#include "runtime/cuda_driver.h"
#include "tests/block_cases.h"
#include "tests/stem_cases.h"
#include "tests/conv2d_cases.h"
#include <iostream>

using namespace blockfuse;

// The dispatcher's kernel of every strategy on the shape tables, and every prebuilt CUDA variant.
TEST_CASE("the CUDA conv2d kernels match the float64 reference on the shape table", "[conv2d][gpu]") {
    test::check_all_variants(Device::cuda, {DType::f32, DType::f16, DType::bf16}, true);
}

TEST_CASE("the CUDA block kernels match the float64 reference", "[blocks][gpu]") {
    test::check_all_block_variants(Device::cuda, {DType::f32, DType::f16}, false, true);
}

TEST_CASE("the CUDA stage kernels (layer-by-layer, per-block fused, depth-first) match the float64 reference",
          "[stages][gpu]") {
    test::check_all_block_variants(Device::cuda, {DType::f32, DType::f16}, true, true);
}

TEST_CASE("the CUDA stem kernels match the float64 reference", "[stem][gpu]") {
    test::check_all_stem_variants(Device::cuda, {DType::f32, DType::f16}, true);
}

int main(int argc, char **argv) {
    if (!cuda::device().available) {
        std::cout << "SKIP: " << cuda::device().reason << "\n";
        return 77;
    }
    cuda::install_halide_hooks();
    cuda::make_current();
    int rc = Catch::Session().run(argc, argv);
    cuda::release_halide_allocation_cache();  // so memcheck's leak check sees only real leaks
    if (test::narrowed_run_matched_nothing()) {  // a typo in the filter would otherwise pass with nothing tested
        std::cerr << "error: BLOCKFUSE_TEST_VARIANTS=" << std::getenv("BLOCKFUSE_TEST_VARIANTS")
                  << " matched no variant of the selected test cases: nothing was checked\n";
        return 1;
    }
    return rc;
}
