// Schedules of the blocks fused on tensor cores (the block strategy fused_tc): the FFN, FusedMBConv, ConvFirst and
// ConvNeXt (generators/ffn_tc_algorithm.h) and MBConv (generators/mbconv_tc_algorithm.h), the mma.sync path on CUDA and the
// same fragment space emulated on the CPU. Schedules only.
#pragma once
#include "Halide.h"
#include "generators/ffn_tc_algorithm.h"
#include "generators/block_algorithm.h"
#include "generators/mbconv_tc_algorithm.h"
#include <string>
#include <vector>

namespace blockfuse {

// `pad`: elements past each shared panel row (8: the 8 row addresses of an ldmatrix phase in distinct banks).
void schedule_ffn_tc(FfnTcFuncs &f, const FfnTcShape &s, const FfnTcTiling &t, int pad, const Halide::Target &target);
// The lowering passes of a pipeline's blocks (a stage: one each): with t.prefetch each chunk loop pipelined by one step
// (schedules/panel_prefetch.h), on any target; on CUDA schedules/mma_lowering.h (both accumulators per warp in
// registers).
void add_ffn_tc_lowering(Halide::Pipeline p, const Halide::Target &target, const std::string &kernel,
                         const std::vector<FfnTcFuncs> &blocks, const FfnTcTiling &t);

void schedule_mbconv_tc(MbconvTcFuncs &f, const MbconvTcGeometry &g, bool residual, const Halide::Target &target);
// MBConv with Squeeze-Excitation: `pool` the pooling instance (its tile sums one kernel, a thread block a tile), `sum`
// and se's reduce and gate each a small kernel after it (generators/mbconv_tc_algorithm.h mbconv_tc_se_mean).
void schedule_mbconv_tc_se(MbconvTcFuncs &pool, const MbconvTcGeometry &g, Halide::Func sum, const SEFuncs &se,
                           const Halide::Target &target);
// On CUDA schedules/mma_lowering.h for a pipeline's blocks (both accumulators per warp in registers); nothing
// elsewhere.
void add_mbconv_tc_lowering(Halide::Pipeline p, const Halide::Target &target, const std::string &kernel,
                            const std::vector<MbconvTcFuncs> &blocks);

}  // namespace blockfuse
