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
    // One group of at most 4 channels packs 8 / c whole taps into each 8-element group of the reduction (a 3-channel
    // stem: 2 taps a group, a 1-channel conv1d: 8), so a 3x3x3 conv3d on 3 channels reduces over 112, not 27 x 8 =
    // 216: less gather and mma work, and the index arithmetic stays one per tap (a lane's tap is the group's first
    // plus a constant). Otherwise each tap's slice is its (window's) channels padded to 8, so an 8-element group
    // of A is one tap's channels (8 contiguous ones: one vector load).
    int taps_per_group() const { return groups == 1 && c <= 4 ? 8 / c : 1; }
    bool packed_taps() const { return taps_per_group() > 1; }
    // The GEMM's K for `taps` taps (a multiple of 8), the stride of a weight row.
    int reduction(int taps) const {
        const int g = taps_per_group();
        return packed_taps() ? (taps + g - 1) / g * 8 : taps * window_channels_padded();
    }
    // Where (tap, ch) sits in a reduction row (ch counted from the window's first channel).
    int reduction_index(int tap, int ch) const {
        const int g = taps_per_group();
        return packed_taps() ? tap / g * 8 + tap % g * c + ch : tap * window_channels_padded() + ch;
    }
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
