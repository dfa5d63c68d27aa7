"""What folds into a layer's weights at load time, in float64 numpy (the same algebra as
runtime/reference.h's fold_batchnorm and fold_layernorm_affine), and the weight layout the kernels take.

Weights here are PyTorch's: a convolution's (K, Cg, R, S), a linear layer's (K, C)."""
import numpy as np


def fold_batchnorm(w, b, gamma, beta, mean, var, eps):
    """Conv (w, b; b may be None) followed by BatchNorm in eval mode -> one conv:
    W'_k = W_k * gamma_k / sqrt(var_k + eps), b'_k = (b_k - mean_k) * gamma_k / sqrt(var_k + eps) + beta_k.
    gamma/beta None: BatchNorm without affine."""
    w = np.asarray(w, dtype=np.float64)
    k = w.shape[0]
    gamma = np.ones(k) if gamma is None else np.asarray(gamma, np.float64)
    beta = np.zeros(k) if beta is None else np.asarray(beta, np.float64)
    b = np.zeros(k) if b is None else np.asarray(b, np.float64)
    scale = gamma / np.sqrt(np.asarray(var, np.float64) + eps)
    return w * scale.reshape((k,) + (1,) * (w.ndim - 1)), (b - np.asarray(mean, np.float64)) * scale + beta


def fold_layernorm_affine(gamma, beta, w_next, b_next):
    """LayerNorm's affine over C channels folded into the next 1x1 layer (w_next (K, C) or (K, C, 1, 1)):
    W'(k, c) = W(k, c) gamma_c, b'_k = b_k + sum_c W(k, c) beta_c. The kernels normalize without an affine."""
    w = np.asarray(w_next, np.float64)
    w2 = w.reshape(w.shape[0], w.shape[1])
    c = w2.shape[1]
    gamma = np.ones(c) if gamma is None else np.asarray(gamma, np.float64)
    beta = np.zeros(c) if beta is None else np.asarray(beta, np.float64)
    b = np.zeros(w2.shape[0]) if b_next is None else np.asarray(b_next, np.float64)
    return (w2 * gamma[None, :]).reshape(w.shape), b + w2 @ beta


def fold_layer_scale(w, b, scale):
    """A per-channel scale after a layer (ConvNeXt's layer scale, gamma * block(x)) folded into it."""
    w = np.asarray(w, np.float64)
    s = np.asarray(scale, np.float64).reshape(-1)
    b = np.zeros(w.shape[0]) if b is None else np.asarray(b, np.float64)
    return w * s.reshape((-1,) + (1,) * (w.ndim - 1)), b * s


def conv_weight_layout(w):
    """PyTorch's (K, Cg, R, S) (or a linear layer's (K, C), a 1x1 conv) -> the kernels' dense (R, S, Cg, K):
    Halide's (k, cg, kx, ky) innermost first."""
    w = np.asarray(w)
    if w.ndim == 2:
        w = w[:, :, None, None]
    return np.ascontiguousarray(w.transpose(2, 3, 1, 0))
