// Independent float64 references and the comparison used by tests and by the benchmark's
// correctness gate. Plain loops over plain arrays: nothing shared with the Halide algorithm.
#pragma once
#include "runtime/workload.h"
#include <string>
#include <vector>

namespace blockfuse {

double activation_ref(double x, Activation a);

// One output element (k, ox, oy, n); *scale = |bias| + sum |x*w|.
double conv2d_reference_point(const Conv2dWorkload &w, const std::vector<double> &input,
                              const std::vector<double> &weights, const std::vector<double> &bias, int k, int ox,
                              int oy, int n, double *scale);

// input (c,x,y,n), weights (k,cg,kx,ky), bias (k) -> output (k,ox,oy,n), all as double.
// `scale` gets sum |terms| per output (|bias| + sum |x*w|): the error bound's scale.
void conv2d_reference(const Conv2dWorkload &w, const std::vector<double> &input, const std::vector<double> &weights,
                      const std::vector<double> &bias, std::vector<double> *out, std::vector<double> *scale);

struct Comparison {
    size_t elements = 0, unwritten = 0, violations = 0;
    double max_err_over_tol = 0;  // worst |out-ref| / tol
    double rel_l2 = 0;            // ||out-ref|| / ||ref||
    size_t worst = 0;
    double worst_out = 0, worst_ref = 0;
    std::string note;  // what was compared where not every output of the workload as given
    bool ok() const { return unwritten == 0 && violations == 0; }
    std::string summary() const;
};

// Tolerance per element, documented in tests/README.md:
//   tol = 1.2 * 4 * (L + 2) * u_f32 * scale      (f32 accumulation over L terms, Higham's
//                                                 gamma_L bound, activation Lipschitz <= 1.2)
//       + 2 * u_out * |ref| + 16 * u_f32 * |ref|  (rounding to the storage type; f32
//                                                 transcendental error of silu/gelu/sigmoid)
//       + 1e-30
// where u_out is the storage type's unit roundoff. NaN or Inf in the output never passes.
// extra_rel: an additional extra_rel * scale term (blocks: hidden layers rounded to storage).
constexpr double kActivationLipschitz = 1.2;
// The first term of the tolerance per unit of scale: an f32 sum of L terms through an activation.
double accumulation_bound(long long reduction_length);
// carried: an additional absolute term per element (blocks: the bound on the error the hidden layers' accumulation
// and rounding carry into the output, propagated through the later layers; see block_reference).
Comparison compare(const std::vector<double> &out, const std::vector<double> &ref, const std::vector<double> &scale,
                   long long reduction_length, DType out_dtype, double extra_rel = 0,
                   const std::vector<double> *carried = nullptr);

// BatchNorm folded into the preceding conv's weights and bias (inference):
//   s_k = gamma_k / sqrt(var_k + eps); w'_k = w_k * s_k; b'_k = (b_k - mean_k) * s_k + beta_k.
// weights laid out (k, cg, kx, ky) with k innermost, K = bias.size().
void fold_batchnorm(std::vector<double> &weights, std::vector<double> &bias, const std::vector<double> &gamma,
                    const std::vector<double> &beta, const std::vector<double> &mean, const std::vector<double> &var,
                    double eps);

// LayerNorm's affine (gamma, beta over C channels) folded into the following 1x1 layer
// (weights (k, c) with k innermost, K = bias.size()): W'(k,c) = W(k,c) * gamma_c,
// b'_k = b_k + sum_c W(k,c) * beta_c. The kernels then normalize without an affine.
void fold_layernorm_affine(std::vector<double> &weights, std::vector<double> &bias, const std::vector<double> &gamma,
                           const std::vector<double> &beta);

}  // namespace blockfuse
