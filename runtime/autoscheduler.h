// Halide's own autoschedulers as baselines beside blockfuse's schedules: the same algorithm (the
// conv2d or block generator), its schedule left to Mullapudi2016, Adams2019 or Li2018 on the CPU, or
// Anderson2021 on CUDA, through the kernel cache like every other kernel (the generator runs with
// -p <the wheel's plugin> autoscheduler=NAME, the machine's params and the workload's shape as estimates).
#pragma once
#include "runtime/op.h"
#include <string>
#include <vector>

namespace blockfuse {

// The autoschedulers of the Halide wheel the project builds with.
const std::vector<std::string> &autoscheduler_names();
// Throws WorkloadError unless `name` is one of them.
void check_autoscheduler_name(const std::string &name);
// Throws WorkloadError if that autoscheduler does not schedule kernels for `dev` here (its name checked too).
void check_autoscheduler_device(const std::string &name, Device dev);

// The kernel autoscheduler `name` makes for the op's workload on `dev`: the op's heuristic kernel (its
// static shape params; layer by layer for a block: one pipeline for the whole block) with the schedule
// replaced by the autoscheduler's. Throws WorkloadError naming the problem: an unknown name, a device
// the autoscheduler does not schedule, a family the autoschedulers are not wired for.
KernelVariant autoscheduled_kernel(const Op &op, const std::string &name, Device dev);

// Who scheduled a kernel: "blockfuse", or "halide-autoscheduler-<NAME>".
std::string kernel_provider(const KernelVariant &v);

}  // namespace blockfuse
