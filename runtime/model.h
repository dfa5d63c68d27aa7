// The performance model of A. Lavin, "On the Efficiency of Convolutional Neural Networks" (2024), as the
// harness prints it beside each measured time (bench/model.py holds the same equations for the reports).
#pragma once
#include "runtime/cost.h"
#include <algorithm>
#include <vector>

namespace blockfuse {

// Eq. 12, the waterline: T_min = sum_i n_i / min(R, B n_i / b_i) = sum_i max(n_i / R, b_i / B) for kernels
// run one after another (n: ops, 2 per MAC; b: compulsory DRAM bytes), R in FLOP/s, B in bytes/s; seconds.
// A kernel's compute roof is the unit it uses: R_tensor (> 0) for those on the tensor cores.
inline double waterline_seconds(const std::vector<KernelCost> &kernels, double R, double B, double R_tensor = 0) {
    double t = 0;
    for (const auto &k : kernels) t += std::max(k.flops / (k.tensor_cores && R_tensor > 0 ? R_tensor : R), k.bytes / B);
    return t;
}

}  // namespace blockfuse
