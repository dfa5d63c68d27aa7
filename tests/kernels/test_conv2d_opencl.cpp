// The GPU schedules (the same Halide schedule code as CUDA) generated for OpenCL and run on
// PoCL's CPU device, f32 (PoCL's CPU device has no fp16). Runs in CI: no GPU needed.
#define CATCH_CONFIG_MAIN
#include "tests/common/conv2d_cases.h"
#include <HalideRuntimeOpenCL.h>
#include <cstdlib>

using namespace blockfuse;

TEST_CASE("every OpenCL conv2d variant (GPU schedule) matches the float64 reference on PoCL", "[conv2d][opencl]") {
    if (!std::getenv("HL_OCL_DEVICE_TYPE")) halide_opencl_set_device_type("cpu");
    test::check_all_variants(Device::opencl, {DType::f32});
}
