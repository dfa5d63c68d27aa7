#include "runtime/tensor.h"
#include "runtime/errors.h"

namespace blockfuse {

Tensor make_tensor(DType dtype, const std::vector<int> &dims) {
    Tensor t(halide_type_of(dtype), dims);
    return t;
}

void fill_uniform(Tensor &t, DType dtype, std::mt19937_64 &rng, double lo, double hi) {
    std::uniform_real_distribution<double> dist(lo, hi);
    size_t n = t.number_of_elements();
    for (size_t i = 0; i < n; ++i) store_from_double(t.data(), dtype, i, dist(rng));
    t.set_host_dirty();
}

void poison(Tensor &t, DType dtype) {
    size_t n = t.number_of_elements();
    for (size_t i = 0; i < n; ++i) store_nan(t.data(), dtype, i);
    t.set_host_dirty();
}

std::vector<double> to_doubles(Tensor &t, DType dtype) {
    // A kernel that failed on the device (a launch is asynchronous) shows here first.
    clear_halide_error();
    if (int rc = t.copy_to_host())
        throw KernelError("copying a result from the device failed (a kernel before it failed there): " +
                          last_halide_error(rc));
    size_t n = t.number_of_elements();
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = load_as_double(t.data(), dtype, i);
    return out;
}

}  // namespace blockfuse
