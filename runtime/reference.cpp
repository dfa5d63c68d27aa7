#include "runtime/reference.h"
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace blockfuse {

double activation_ref(double x, Activation a) {
    switch (a) {
    case Activation::none: return x;
    case Activation::relu: return x > 0 ? x : 0;
    case Activation::relu6: return x < 0 ? 0 : (x > 6 ? 6 : x);
    case Activation::silu: return x / (1 + std::exp(-x));
    case Activation::gelu: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::sigmoid: return 1 / (1 + std::exp(-x));
    case Activation::gelu_erf: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    }
    return x;
}

double conv2d_reference_point(const Conv2dWorkload &w, const std::vector<double> &in, const std::vector<double> &wt,
                              const std::vector<double> &bias, int k, int ox, int oy, int n, double *scale) {
    const int Cg = w.c / w.groups, Kg = w.k / w.groups, g = k / Kg;
    double acc = bias[k], sc = std::fabs(bias[k]);
    for (int ky = 0; ky < w.r; ++ky) {
        const int iy = oy * w.stride_h + ky * w.dil_h - w.pad_t;
        if (iy < 0 || iy >= w.h) continue;
        for (int kx = 0; kx < w.s; ++kx) {
            const int ix = ox * w.stride_w + kx * w.dil_w - w.pad_l;
            if (ix < 0 || ix >= w.w) continue;
            for (int cg = 0; cg < Cg; ++cg) {
                const int c = g * Cg + cg;
                double x = in[((size_t(n) * w.h + iy) * w.w + ix) * w.c + c];
                double ww = wt[((size_t(ky) * w.s + kx) * Cg + cg) * w.k + k];
                acc += x * ww;
                sc += std::fabs(x * ww);
            }
        }
    }
    *scale = sc;
    return activation_ref(acc, w.act);
}

void conv2d_reference(const Conv2dWorkload &w, const std::vector<double> &in, const std::vector<double> &wt,
                      const std::vector<double> &bias, std::vector<double> *out, std::vector<double> *scale) {
    const int OH = w.out_h(), OW = w.out_w();
    out->assign(size_t(w.n) * w.k * OH * OW, 0.0);
    scale->assign(out->size(), 0.0);
    for (int n = 0; n < w.n; ++n)
        for (int oy = 0; oy < OH; ++oy)
            for (int ox = 0; ox < OW; ++ox)
                for (int k = 0; k < w.k; ++k) {
                    size_t o = ((size_t(n) * OH + oy) * OW + ox) * w.k + k;
                    (*out)[o] = conv2d_reference_point(w, in, wt, bias, k, ox, oy, n, &(*scale)[o]);
                }
}

std::string Comparison::summary() const {
    std::ostringstream s;
    s << elements << " elements, " << unwritten << " unwritten/non-finite, " << violations
      << " beyond tolerance, worst err/tol " << max_err_over_tol << " (out " << worst_out << " vs ref " << worst_ref
      << " at " << worst << "), rel L2 " << rel_l2;
    if (!note.empty()) s << "; " << note;
    return s.str();
}

double accumulation_bound(long long L) { return kActivationLipschitz * 4.0 * double(L + 2) * std::ldexp(1.0, -24); }

Comparison compare(const std::vector<double> &out, const std::vector<double> &ref, const std::vector<double> &scale,
                   long long L, DType out_dtype, double extra_rel, const std::vector<double> *carried) {
    if (out.size() != ref.size() || (carried && carried->size() != ref.size()))
        throw std::logic_error("compare: size mismatch");
    Comparison c;
    c.elements = out.size();
    const double u32 = std::ldexp(1.0, -24), uo = dtype_unit_roundoff(out_dtype);
    // Below f16's smallest normal (2^-14) its values are 2^-24 apart: rounding there errs by up to 2^-25 absolute,
    // which no relative term covers (a 1x1 layer of one channel a group rounds w x to a subnormal exactly so).
    const double subnormal = out_dtype == DType::f16 ? 2 * std::ldexp(1.0, -25) : 0.0;
    double num = 0, den = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        if (!std::isfinite(out[i])) {
            ++c.unwritten;
            continue;
        }
        double err = std::fabs(out[i] - ref[i]);
        double tol = accumulation_bound(L) * scale[i] + 2 * uo * std::fabs(ref[i]) + 16 * u32 * std::fabs(ref[i]) +
                     extra_rel * scale[i] + subnormal + 1e-30 + (carried ? (*carried)[i] : 0.0);
        double ratio = err / tol;
        if (ratio > 1) ++c.violations;
        if (ratio > c.max_err_over_tol) {
            c.max_err_over_tol = ratio;
            c.worst = i;
            c.worst_out = out[i];
            c.worst_ref = ref[i];
        }
        num += err * err;
        den += ref[i] * ref[i];
    }
    c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    return c;
}

void fold_batchnorm(std::vector<double> &weights, std::vector<double> &bias, const std::vector<double> &gamma,
                    const std::vector<double> &beta, const std::vector<double> &mean, const std::vector<double> &var,
                    double eps) {
    const size_t K = bias.size();
    if (gamma.size() != K || beta.size() != K || mean.size() != K || var.size() != K || weights.size() % K)
        throw std::invalid_argument("fold_batchnorm: parameter sizes do not match the channel count");
    std::vector<double> s(K);
    for (size_t k = 0; k < K; ++k) {
        if (!(var[k] + eps > 0)) throw std::invalid_argument("fold_batchnorm: var + eps must be positive");
        s[k] = gamma[k] / std::sqrt(var[k] + eps);
        bias[k] = (bias[k] - mean[k]) * s[k] + beta[k];
    }
    for (size_t i = 0; i < weights.size(); ++i) weights[i] *= s[i % K];
}

void fold_layernorm_affine(std::vector<double> &weights, std::vector<double> &bias, const std::vector<double> &gamma,
                           const std::vector<double> &beta) {
    const size_t K = bias.size(), C = gamma.size();
    if (beta.size() != C || weights.size() != K * C)
        throw std::invalid_argument("fold_layernorm_affine: weights must be K x C with K = bias size, C = gamma size");
    for (size_t c = 0; c < C; ++c)
        for (size_t k = 0; k < K; ++k) {
            bias[k] += weights[c * K + k] * beta[c];
            weights[c * K + k] *= gamma[c];
        }
}

}  // namespace blockfuse
