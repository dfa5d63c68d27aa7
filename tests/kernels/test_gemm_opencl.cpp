// The tensor-core GEMM's GPU block and thread mapping (panels per K step in shared memory, one block per
// output tile) generated for OpenCL with the mma.sync and ldmatrix instructions emulated, run on PoCL's
// CPU device against the float64 reference, f16 and bf16 (as bit patterns: PoCL has no half type).
#define CATCH_CONFIG_MAIN
#include "tests/common/gemm_cases.h"
#include <HalideRuntimeOpenCL.h>
#include <cstdlib>

using namespace blockfuse;

TEST_CASE("every OpenCL gemm variant (emulated mma.sync, GPU mapping) matches the float64 reference on PoCL",
          "[gemm][opencl]") {
    if (!std::getenv("HL_OCL_DEVICE_TYPE")) halide_opencl_set_device_type("cpu");
    install_halide_error_handler();
    test::check_gemm_kernels(test::gemm_test_kernels(Device::opencl, {DType::f16, DType::bf16}, true));
}
