// The tensor-core GEMM's schedule knobs (schedules/knobs.h convention: one declaration per knob). The
// implicit-GEMM convolutions (generators/implicit_gemm.h) take the same tiling.
#pragma once
#include "schedules/knobs.h"

// name, default, the values the search may take, meaning
#define BLOCKFUSE_GEMM_KNOBS(X)                                                                              \
    X(warp_m, 64, (32, 64), "rows of C per warp, a multiple of 16 (16-row instruction tiles)")             \
    X(warp_n, 64, (32, 64), "columns of C per warp, a multiple of 8 (8-column instruction tiles)")         \
    X(warps_m, 2, (1, 2, 4), "warps per thread block along M")                                              \
    X(warps_n, 2, (1, 2, 4), "warps per thread block along N")                                              \
    X(k_step, 32, (16, 32, 64), "K per shared-memory panel (one barrier-separated step), a multiple of 16") \
    X(pad, 8, (0, 8), "b16 elements of padding per panel row: 8 makes ldmatrix rows conflict-free")

namespace blockfuse {
struct GemmKnobs {
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_FIELD)
    int threads_per_block() const { return 32 * warps_m * warps_n; }
};
inline const KnobTable &gemm_knob_table() {
    static const KnobTable t{{BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}
// A knob struct from a knob set (missing names keep their defaults); `prefix` as conv2d_gpu_knobs_from.
inline GemmKnobs gemm_knobs_from(const std::map<std::string, int> &set, const std::string &prefix = "") {
    GemmKnobs k;
    auto get = [&](const char *name, int &field) {
        if (auto it = set.find(prefix + name); it != set.end()) field = it->second;
    };
#define BLOCKFUSE_KNOB_FROM_SET(name, dflt, values, meaning) get(#name, k.name);
    BLOCKFUSE_GEMM_KNOBS(BLOCKFUSE_KNOB_FROM_SET)
#undef BLOCKFUSE_KNOB_FROM_SET
    return k;
}
}  // namespace blockfuse
