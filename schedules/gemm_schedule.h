// Schedules of the tensor-core GEMM (generators/gemm_algorithm.h): the mma.sync path on CUDA, and the
// same fragment space emulated on the CPU and on OpenCL (PoCL in CI). Schedules only.
#pragma once
#include "Halide.h"
#include "generators/gemm_algorithm.h"
#include "schedules/gemm_knobs.h"
#include <string>
#include <vector>

namespace blockfuse {

inline GemmTiling gemm_tiling(const GemmKnobs &kn) {
    return GemmTiling{kn.warp_m, kn.warp_n,  kn.warps_m,    kn.warps_n,
                      kn.k_step, kn.split_k, kn.wgmma != 0, kn.stage_c != 0};
}

// Throws Halide::CompileError naming the knob when the knobs cannot make a kernel.
void check_gemm_knobs(const GemmKnobs &kn);

// The GEMM's schedule on `target`: the mma.sync path on CUDA; on OpenCL the CUDA block and thread mapping with the
// emulated instructions (fragments in shared memory); on the CPU the same loops with block arrays.
void schedule_gemm(GemmFuncs &f, const GemmKnobs &kn, const Halide::Target &target);
// The K loop's pipelining the knobs name (GemmFuncs::prefetch, stages), which add_gemm_lowering reads; schedule_gemm
// sets it too. A caller that hands add_gemm_lowering copies taken before schedule_gemm sets it on them.
void set_gemm_pipelining(GemmFuncs &f, const GemmKnobs &kn);
// The GEMMs' lowering passes, once per pipeline: the panel prefetch (schedules/panel_prefetch.h) of every GEMM
// scheduled with it, on any target; on CUDA the pass of schedules/mma_lowering.h for every GEMM (it rewrites each
// ldmatrix it meets: a second pass would find them rewritten). `kernel` names the kernel in their errors.
void add_gemm_lowering(Halide::Pipeline p, const Halide::Target &target, const std::string &kernel,
                       const std::vector<GemmFuncs> &gemms);

}  // namespace blockfuse
