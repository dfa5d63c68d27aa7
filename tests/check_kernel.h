// One kernel on one workload key against the float64 reference: fresh random inputs, a NaN-poisoned
// output, every output compared (runtime/reference.h). Shared by the shape-table and property tests.
#pragma once
#include "runtime/check.h"
#include "runtime/block.h"
#include "runtime/stem.h"
#include <random>

namespace blockfuse::test {

inline Comparison check_kernel(const KernelVariant &v, const Conv2dWorkload &w, std::mt19937_64 &rng) {
    Conv2dTensors t = make_conv2d_tensors(w);
    randomize(t, w, rng);
    run_conv2d(v, w, t);
    return check_conv2d(w, t, size_t(1) << 30, rng);
}

inline Comparison check_kernel(const KernelVariant &v, const BlockWorkload &w, std::mt19937_64 &rng) {
    BlockTensors t = make_block_tensors(w);
    randomize(t, w, rng);
    run_block(v, w, t);
    return check_block(w, t);
}

inline Comparison check_kernel(const KernelVariant &v, const StemWorkload &w, std::mt19937_64 &rng) {
    StemTensors t = make_stem_tensors(w);
    randomize(t, w, rng);
    run_stem(v, w, t);
    return check_stem(w, t);
}

inline Comparison check_kernel(const KernelVariant &v, const std::string &key, std::mt19937_64 &rng) {
    if (is_block_key(key)) return check_kernel(v, parse_block(key), rng);
    if (is_stem_key(key)) return check_kernel(v, parse_stem(key), rng);
    return check_kernel(v, parse_conv2d(key), rng);
}

}  // namespace blockfuse::test
