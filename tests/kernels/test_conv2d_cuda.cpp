// [gpu] The prebuilt CUDA kernels against the float64 reference. Without a CUDA device the binary exits
// with code 77, which ctest reports as skipped (SKIP_RETURN_CODE), not passed.
#define CATCH_CONFIG_RUNNER
#include "runtime/cuda_driver.h"
#include "tests/common/conv2d_cases.h"
#include <iostream>

using namespace blockfuse;

// The conv2d shape table on the prebuilt CUDA variants (the generic kinds, f32, f16 and bf16). Kernels
// generated for a shape, blocks, stages and the stem among them, run on the GPU in test_generated
// (ctest generated_random_shapes_gpu) from a cache filled where Halide is.
TEST_CASE("the prebuilt CUDA conv2d variants match the float64 reference on the shape table", "[conv2d][gpu]") {
    test::check_all_variants(Device::cuda, {DType::f32, DType::f16, DType::bf16});
}

int main(int argc, char **argv) {
    if (!cuda::device().available) {
        std::cout << "SKIP: " << cuda::device().reason << "\n";
        return 77;
    }
    cuda::install_halide_hooks();
    cuda::make_current();
    int rc = Catch::Session().run(argc, argv);
    cuda::release_halide_allocation_cache();     // so memcheck's leak check sees only real leaks
    if (test::narrowed_run_matched_nothing()) {  // a typo in the filter would otherwise pass with nothing tested
        std::cerr << "error: BLOCKFUSE_TEST_VARIANTS=" << std::getenv("BLOCKFUSE_TEST_VARIANTS")
                  << " matched no variant of the selected test cases: nothing was checked\n";
        return 1;
    }
    return rc;
}
