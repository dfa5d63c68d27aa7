// The fused-block GPU schedules (shared memory, barriers) through OpenCL on PoCL, f32.
#define CATCH_CONFIG_MAIN
#include "tests/common/block_cases.h"
#include "tests/common/stem_cases.h"
#include <HalideRuntimeOpenCL.h>
#include <cstdlib>

using namespace blockfuse;

TEST_CASE("every OpenCL block variant matches the float64 reference on PoCL", "[blocks][opencl]") {
    if (!std::getenv("HL_OCL_DEVICE_TYPE")) halide_opencl_set_device_type("cpu");
    test::check_all_block_variants(Device::opencl, {DType::f32});
}

TEST_CASE(
    "every OpenCL stage variant (layer-by-layer, per-block fused, depth-first) matches the float64 reference on PoCL",
    "[stages][opencl]") {
    if (!std::getenv("HL_OCL_DEVICE_TYPE")) halide_opencl_set_device_type("cpu");
    test::check_all_block_variants(Device::opencl, {DType::f32}, true);
}

TEST_CASE("every OpenCL stem variant matches the float64 reference on PoCL", "[stem][opencl]") {
    if (!std::getenv("HL_OCL_DEVICE_TYPE")) halide_opencl_set_device_type("cpu");
    test::check_all_stem_variants(Device::opencl, {DType::f32});
}
