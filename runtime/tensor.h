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

// Whether a buffer holds data: host memory, or a device allocation (a caller's wrapped device pointer has no host).
inline bool has_storage(const halide_buffer_t *b) { return b && (b->host || b->device); }

// A tensor's extents, dimension by dimension (make_tensor's `dims`).
inline std::vector<int> shape_of(const Tensor &t) {
    std::vector<int> shape;
    for (int d = 0; d < t.dimensions(); ++d) shape.push_back(t.dim(d).extent());
    return shape;
}

// Another kernel's tensors for the same workload: every buffer of `t` shared (host memory; the
// inputs, weights and biases are read-only for every kernel) except `output`, which is its own,
// of the same shape, poisoned with NaN. Tensors: any struct with a Tensor `output`.
template <class Tensors>
Tensors with_own_output(const Tensors &t, DType dtype) {
    Tensors o = t;
    o.output = make_tensor(dtype, shape_of(t.output));
    poison(o.output, dtype);
    return o;
}

}  // namespace blockfuse
