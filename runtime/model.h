// The performance model of A. Lavin, "On the Efficiency of Convolutional Neural Networks" (2024), as the
// harness prints it beside each measured time (bench/model.py holds the same equations for the reports).
#pragma once
#include "runtime/cost.h"
#include <algorithm>
#include <vector>

namespace blockfuse {

// Eq. 12, the waterline: T_min = sum_i n_i / min(R, B n_i / b_i) = sum_i max(n_i / R, b_i / B) for kernels
// run one after another (n: ops, 2 per MAC; b: compulsory DRAM bytes), R in FLOP/s, B in bytes/s; seconds.
// A kernel's compute roof is the unit it uses: R (FFMA), or for a tensor-core kernel R_wgmma where it runs wgmma and
// that ceiling is known (> 0), else R_tensor (mma.sync) where known.
inline double kernel_roof(const KernelCost &k, double R, double R_tensor, double R_wgmma) {
    if (!k.tensor_cores) return R;
    if (k.wgmma && R_wgmma > 0) return R_wgmma;
    return R_tensor > 0 ? R_tensor : R;
}
inline double waterline_seconds(const std::vector<KernelCost> &kernels, double R, double B, double R_tensor = 0,
                                double R_wgmma = 0) {
    double t = 0;
    for (const auto &k : kernels) t += std::max(k.flops / kernel_roof(k, R, R_tensor, R_wgmma), k.bytes / B);
    return t;
}

}  // namespace blockfuse
