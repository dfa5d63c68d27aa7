// Schedules of the tensor-core GEMM (generators/gemm_algorithm.h): the mma.sync path on CUDA, and the
// same fragment space emulated on the CPU and on OpenCL (PoCL in CI). Schedules only.
#pragma once
#include "Halide.h"
#include "generators/gemm_algorithm.h"
#include "schedules/gemm_knobs.h"

namespace blockfuse {

inline GemmTiling gemm_tiling(const GemmKnobs &kn) {
    return GemmTiling{kn.warp_m, kn.warp_n, kn.warps_m, kn.warps_n, kn.k_step};
}

// Throws Halide::CompileError naming the knob when the knobs cannot make a kernel.
void check_gemm_knobs(const GemmKnobs &kn);

void schedule_gemm_cuda(GemmFuncs &f, const GemmKnobs &kn, Halide::Pipeline p);
// OpenCL: the CUDA block and thread mapping with the emulated instructions (fragments in shared memory).
void schedule_gemm_opencl(GemmFuncs &f, const GemmKnobs &kn);
void schedule_gemm_cpu(GemmFuncs &f, const GemmKnobs &kn);

}  // namespace blockfuse
