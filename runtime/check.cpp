#include "runtime/check.h"
#include <cmath>

namespace blockfuse {

Comparison compare_points(const std::vector<double> &out, size_t max_points, std::mt19937_64 &rng,
                          const std::function<double(size_t, double *)> &ref, long long reduction_length, DType dtype) {
    const bool all = out.size() <= max_points;
    std::vector<double> got, want, scale;
    std::uniform_int_distribution<size_t> pick(0, out.size() - 1);
    for (size_t i = 0; i < (all ? out.size() : max_points); ++i) {
        const size_t o = all ? i : pick(rng);
        double sc = 0;
        want.push_back(ref(o, &sc));
        scale.push_back(sc);
        got.push_back(out[o]);
    }
    Comparison c = compare(got, want, scale, reduction_length, dtype);
    if (all) return c;
    c.elements = out.size();
    c.unwritten = 0;
    for (double v : out)
        if (!std::isfinite(v)) ++c.unwritten;
    return c;
}

Comparison check_conv2d(const Conv2dWorkload &w, Conv2dTensors &t, size_t max_points, std::mt19937_64 &rng) {
    std::vector<double> in = to_doubles(t.input, w.dtype), wt = to_doubles(t.weights, w.dtype);
    std::vector<double> bias(w.k);
    t.bias.copy_to_host();
    for (int k = 0; k < w.k; ++k) bias[k] = t.bias(k);
    std::vector<double> out = to_doubles(t.output, w.dtype);
    const long long L = w.reduction_length();
    const int OH = w.out_h(), OW = w.out_w();
    if (out.size() <= max_points) {  // the whole reference at once (the same numbers, faster)
        std::vector<double> ref, scale;
        conv2d_reference(w, in, wt, bias, &ref, &scale);
        return compare(out, ref, scale, L, w.dtype);
    }
    return compare_points(
        out, max_points, rng,
        [&](size_t o, double *sc) {
            const int k = int(o % w.k), ox = int(o / w.k % OW), oy = int(o / w.k / OW % OH), n = int(o / w.k / OW / OH);
            return conv2d_reference_point(w, in, wt, bias, k, ox, oy, n, sc);
        },
        L, w.dtype);
}

}  // namespace blockfuse
