// Host/device tensors on Halide::Runtime::Buffer, random fill, poisoning.
#pragma once
#include "runtime/dtype.h"
#include <HalideBuffer.h>
#include <random>
#include <vector>

namespace blockfuse {

using Tensor = Halide::Runtime::Buffer<void>;

// Dense buffer of `dtype`, dims innermost first (e.g. {c, x, y, n}).
Tensor make_tensor(DType dtype, const std::vector<int> &dims);
// Uniform in [lo, hi), rounded to the storage type. Marks host dirty.
void fill_uniform(Tensor &t, DType dtype, std::mt19937_64 &rng, double lo, double hi);
// Every element NaN. Marks host dirty (so a GPU kernel sees a poisoned device copy too).
void poison(Tensor &t, DType dtype);
// All elements as double (copies to host first if the device copy is newer).
std::vector<double> to_doubles(Tensor &t, DType dtype);

}  // namespace blockfuse
