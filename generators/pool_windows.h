// Adaptive pooling's windows (PyTorch's start = floor(o * in / out), end = ceil((o + 1) * in / out)),
// shared by the algorithm, the runtime and the float64 reference. Halide-free.
#pragma once
#include <algorithm>

namespace blockfuse {

inline int adaptive_start(int o, int in, int out) { return int((long long)o * in / out); }
inline int adaptive_end(int o, int in, int out) { return int((((long long)o + 1) * in + out - 1) / out); }
// The widest window: the taps a kernel unrolls (narrower windows mask the rest).
inline int adaptive_kernel(int in, int out) {
    int k = 1;
    for (int o = 0; o < out; ++o) k = std::max(k, adaptive_end(o, in, out) - adaptive_start(o, in, out));
    return k;
}

}  // namespace blockfuse
