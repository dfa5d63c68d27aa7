// The stem at run time: `stem:n=128,h=224,w=224,c=3,k=64,dtype=f16` = 3x3 stride-2 conv (+ folded BN,
// ReLU) then 3x3 stride-2 max pool, padding 1 for both.
#pragma once
#include "runtime/block.h"

namespace blockfuse {

struct StemWorkload {
    int n = 0, h = 0, w = 0, c = 3, k = 64;
    DType dtype = DType::f32;
    Conv2dWorkload conv() const;  // the conv layer as a conv2d workload
    int out_h() const { return (conv().out_h() - 1) / 2 + 1; }
    int out_w() const { return (conv().out_w() - 1) / 2 + 1; }
};

bool is_stem_key(const std::string &key);
// The stem behind the Op interface (runtime/op.h).
std::unique_ptr<Op> stem_op(const std::string &key);
StemWorkload parse_stem(const std::string &key);  // throws WorkloadError
std::string to_key(const StemWorkload &w);

struct StemTensors {
    Tensor input, weights, output;
    Halide::Runtime::Buffer<float> bias;
};
StemTensors make_stem_tensors(const StemWorkload &w);
void randomize(StemTensors &t, const StemWorkload &w, std::mt19937_64 &rng);
// The named variants (variant data) of the stem's channels on `device`, the data's default first.
std::vector<const KernelVariant *> stem_candidates(const StemWorkload &w, Device device);
// A kernel generated for the stem's channels with the given strategy and schedule.
struct ScheduleChoice;
KernelVariant stem_kernel_for(const StemWorkload &w, const std::string &strategy, Device device,
                              const ScheduleChoice &s);
// Threads per block and the depth-first conv tile in shared memory against the device's limits;
// run_stem calls it first. Throws KernelError naming the stem, the strategy and the limit.
void check_stem_launch(const KernelVariant &v, const StemWorkload &w);
std::string stem_launch_error(const KernelVariant &v, const StemWorkload &w, const LaunchLimits &limits);
void run_stem(const KernelVariant &v, const StemWorkload &w, StemTensors &t);
// Float64 reference: conv (runtime/reference), rounded to storage, then the max pool.
Comparison check_stem(const StemWorkload &w, StemTensors &t);
// layer_by_layer: conv kernel + pool kernel (the 112x112 intermediate written and read);
// depth_first: one kernel, input + weights + output once.
std::vector<KernelCost> stem_costs(const StemWorkload &w, const std::string &strategy);

}  // namespace blockfuse
