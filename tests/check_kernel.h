// One kernel on one workload against the float64 reference, through the workload's Op (runtime/op.h):
// fresh random inputs, a NaN-poisoned output, every output compared (the tests' shapes are small).
// Shared by the shape-table and property tests.
#pragma once
#include "runtime/op.h"
#include "runtime/workload.h"
#include <random>

namespace blockfuse::test {

inline Comparison check_kernel(const KernelVariant &v, const std::string &key, std::mt19937_64 &rng) {
    std::unique_ptr<OpData> d = parse_op(key)->data(rng);
    d->run(v);
    return d->check();
}

template <class Workload>
Comparison check_kernel(const KernelVariant &v, const Workload &w, std::mt19937_64 &rng) {
    return check_kernel(v, to_key(w), rng);
}

}  // namespace blockfuse::test
