// A convolution's channels as the tensor-core implicit GEMM reduces over them (generators/conv2d_tc_algorithm.h).
// One group: the reduction is taps x all input channels. Grouped: a block-diagonal GEMM, the output channels in
// windows of window_n() (a group of a multiple of 8 channels, or 8 channels holding 8 / (k / groups) whole groups),
// each window's reduction the taps x the window_channels() input channels its groups read. Halide-free: the
// generator, the runtime's weight layout and its launch checks read it.
#pragma once
#include <string>

namespace blockfuse {

struct ConvWindows {
    int c = 0, k = 0, groups = 1;
    int out_per_group() const { return k / groups; }
    // Output channels per window (0: one group, no windows).
    int window_n() const { return groups == 1 ? 0 : out_per_group() % 8 == 0 ? out_per_group() : 8; }
    // Input channels a window reads, and the same rounded up to 8 (a tap's slice of the reduction).
    int window_channels() const {
        return groups == 1 ? c : out_per_group() % 8 == 0 ? c / groups : c / groups * (8 / out_per_group());
    }
    int window_channels_padded() const { return (window_channels() + 7) / 8 * 8; }
    // Why the grouping cannot be served ("" if it can).
    std::string error() const {
        if (groups < 1 || c % groups || k % groups)
            return "groups = " + std::to_string(groups) + " must divide the channels (" + std::to_string(c) +
                   ") and the output channels (" + std::to_string(k) + ")";
        if (groups > 1 && out_per_group() % 8 && 8 % out_per_group())
            return "the output channels per group (" + std::to_string(out_per_group()) +
                   ") must be a multiple of 8 or divide 8 (the mma's 8-column tiles)";
        return "";
    }
};

}  // namespace blockfuse
