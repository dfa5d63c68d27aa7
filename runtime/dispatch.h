// Which kernel runs a workload. One policy for every command: per strategy of the workload's family,
//   1. the fastest applicable tuning record (this device, this Halide version): its knobs rebuild it;
//   2. else the variant data's default for the workload's configuration (schedules/variants/*.json);
//   3. else a kernel generated for the workload from the schedules' shape heuristics.
// Each pick says which of the three it is; kernels not yet built are generated into the cache when
// they are loaded (runtime/kernel_cache.h).
#pragma once
#include "runtime/kernel_registry.h"
#include "runtime/tuning_records.h"
#include <string>
#include <vector>

namespace blockfuse {

// Workload keys of any family (conv2d, the block families, stem): canonical form, dtype, generator.
// Throw WorkloadError naming the field if the key is invalid.
std::string canonical_key(const std::string &key);
DType workload_dtype(const std::string &key);
std::string workload_family(const std::string &key);  // conv2d | block | stem

// The strategies of a workload's family: conv2d "direct" (and "tensor_cores" for dense f16/bf16 ones); a block
// layer_by_layer and fused, a stage also depth_first, f16/bf16 blocks also layer_by_layer_tc (FFN, ConvFirst
// and ConvNeXt blocks whose channels are whole mma tiles, MBConv blocks without SE whose channels are whole 16-byte
// rows, also fused_tc); the stem layer_by_layer and depth_first. The first is the default where no record says which is
// fastest.
std::vector<std::string> strategies_of(const std::string &key);

struct Pick {
    const KernelVariant *variant = nullptr;
    std::string strategy;
    std::string source;  // "tuning record", "variant data", "heuristic"
    const TuningRecord *record = nullptr;
};

// The dispatcher's kernel for one strategy. Throws WorkloadError if the strategy cannot serve the key
// (naming the limit). heuristics_only: neither records nor the variant data's defaults, the heuristic's
// kernel (how a shape no one tuned is served; bench --heuristics compares it with the hand-tuned ones).
Pick dispatch(const std::string &key, const std::string &strategy, Device device, const TuningRecords *records,
              bool heuristics_only = false);
// Whether a record measured the kernel its knobs build now on its target's device (its kernel name, which carries the
// sources' hash, is the one dispatch would load; a record without a name counts as one): TuningRecords::best's
// `current`, by which dispatch puts this build's records first.
bool measured_this_build(const TuningRecord &r);
// The strategy to run by default: the one with the fastest applicable record, else strategies_of()[0].
std::string default_strategy(const std::string &key, Device device, const TuningRecords *records);

// A kernel for the workload and strategy with the heuristic's knobs overridden by `knobs` (and the
// register cap, if > 0): ./run generate --knob, the tuner's candidates, a record's rebuild. Throws
// WorkloadError naming a knob the schedule does not declare.
const KernelVariant *kernel_with_knobs(const std::string &key, const std::string &strategy, Device device,
                                       const std::map<std::string, int> &knobs, int max_registers,
                                       const std::string &why);

// The named variants of the variant data that serve the workload with this strategy, in data order.
std::vector<const KernelVariant *> data_variants_for(const std::string &key, const std::string &strategy,
                                                     Device device);

// The strategy a variant implements ("direct" for conv2d).
std::string strategy_of(const KernelVariant &v);

}  // namespace blockfuse
