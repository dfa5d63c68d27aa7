#include "runtime/check.h"
#include <cmath>

namespace blockfuse {

Comparison check_conv2d(const Conv2dWorkload &w, Conv2dTensors &t, size_t max_points, std::mt19937_64 &rng) {
    std::vector<double> in = to_doubles(t.input, w.dtype), wt = to_doubles(t.weights, w.dtype);
    std::vector<double> bias(w.k);
    t.bias.copy_to_host();
    for (int k = 0; k < w.k; ++k) bias[k] = t.bias(k);
    std::vector<double> out = to_doubles(t.output, w.dtype);
    const long long L = 1LL * (w.c / w.groups) * w.r * w.s;
    const int OH = w.out_h(), OW = w.out_w();
    if (out.size() <= max_points) {
        std::vector<double> ref, scale;
        conv2d_reference(w, in, wt, bias, &ref, &scale);
        return compare(out, ref, scale, L, w.dtype);
    }
    // Sampled comparison, plus a full scan for unwritten (NaN-poisoned) outputs.
    std::vector<double> got, ref, scale;
    std::uniform_int_distribution<size_t> pick(0, out.size() - 1);
    for (size_t s = 0; s < max_points; ++s) {
        size_t o = pick(rng);
        int k = int(o % w.k), ox = int(o / w.k % OW), oy = int(o / w.k / OW % OH), n = int(o / w.k / OW / OH);
        double sc;
        ref.push_back(conv2d_reference_point(w, in, wt, bias, k, ox, oy, n, &sc));
        scale.push_back(sc);
        got.push_back(out[o]);
    }
    Comparison c = compare(got, ref, scale, L, w.dtype);
    c.elements = out.size();
    c.unwritten = 0;
    for (double v : out)
        if (!std::isfinite(v)) ++c.unwritten;
    return c;
}

}  // namespace blockfuse
