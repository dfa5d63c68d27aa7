// The three strategies for fused blocks, as schedules of the same algorithm
// (generators/block_algorithm.h). Their knobs: schedules/block_knobs.h.
#pragma once
#include "generators/block_algorithm.h"
#include "schedules/block_knobs.h"
#include "schedules/conv2d_schedule.h"
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

// depth_first: a stage of blocks in one kernel, the earlier blocks computed per tile of the last
// with overlapping halos (their outputs never reach memory).
// layer_by_layer_tc: layer by layer with the dense layers as implicit GEMMs on the tensor cores
// (BlockFuncs::tensor_core; schedules/gemm_schedule.h).
// fused_tc: an FFN block in one kernel on the tensor cores (generators/ffn_tc_algorithm.h,
// schedules/fused_tc_schedule.h), scheduled by its own schedule, not schedule_stage.
enum class BlockStrategy { layer_by_layer, fused, depth_first, layer_by_layer_tc, fused_tc };
const char *block_strategy_name(BlockStrategy s);

// target: CUDA/OpenCL schedules, else CPU. out_channels etc. are static in the spec. A stage is a
// chain of identical blocks (one block: a stage of one); layer_by_layer and fused put every
// block's output in memory, depth_first computes the stage in one kernel. The tensor-core layers'
// lowering pass is the generator's to add (add_gemm_lowering), once for all of them.
void schedule_stage(const std::vector<BlockFuncs> &stage, const BlockSpec &spec, BlockStrategy s, const BlockKnobs &kn,
                    const Halide::Target &target);

}  // namespace blockfuse
