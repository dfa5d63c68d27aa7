"""Performance model of A. Lavin, "On the Efficiency of Convolutional Neural Networks" (2024).

Section 3.1 (efficiency gap, Eq. 1, 3, 7-9) and Section 4 (roofline, waterline, Eq. 10-14;
mediant operational intensity, Eq. 29). Pure functions on plain floats, SI units:
n = operations (2 per multiply-accumulate), b = DRAM bytes, R = peak arithmetic throughput
(ops/s), B = peak DRAM bandwidth (bytes/s), times in seconds. A sequence of kernels is an
iterable of kernels, each (n, b), at the scalar peak R, or (n, b, R_k), at its own peak R_k.

Per-kernel peaks generalise the paper's single R to kernels on different units (CUDA cores at the FFMA
rate, tensor cores at the mma.sync rate): kernel k's floor is t_min = max(n_k/R_k, b_k/B) (Eq. 11), the
ideal latency of a sequence t_i = sum n_k/R_k (Eq. 1 summed, N/R for one R), so C = t_i/t_a (Eq. 8),
C_max = t_i/T_min (Eq. 13) and the mediant roofline max(sum n_k/R_k, sum b_k/B) (Eq. 29) keep their meaning.

Zero is allowed where it has a meaning: a kernel with no bytes is never memory bound (its
operational intensity is infinite), a kernel with no ops is a pure data move. Negative or
non-finite inputs raise ValueError; peak rates and measured latencies must be positive.
"""
import math

OPS_PER_MAC = 2  # Section 3.1: one multiply-accumulate counts as 2 ops


def _nonneg(name, x):
    """x as a float if it is finite and >= 0, else ValueError naming the quantity."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {x!r}") from None
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be finite and non-negative, got {x!r}")
    return v


def _pos(name, x):
    """x as a float if it is finite and > 0 (rates and measured latencies divide)."""
    v = _nonneg(name, x)
    if v == 0:
        raise ValueError(f"{name} must be positive, got {x!r}")
    return v


def ops_from_macs(macs):
    """Operation count n of `macs` multiply-accumulates (2 ops each, Section 3.1)."""
    return OPS_PER_MAC * _nonneg("MACs", macs)


def operational_intensity(n, b):
    """n/b in ops per byte (Section 4). No bytes: inf (0 ops and 0 bytes: 0, nothing to do)."""
    n, b = _nonneg("ops n", n), _nonneg("bytes b", b)
    if b == 0:
        return math.inf if n > 0 else 0.0
    return n / b


def op_byte_ratio(R, B):
    """Machine op:byte ratio R/B (Section 4): the waterline a kernel's n/b must exceed."""
    return _pos("peak throughput R", R) / _pos("bandwidth B", B)


def attainable_throughput(n, b, R, B):
    """Eq. 10: R_max = min(R, B * n/b), the roofline bound on a kernel's ops/s."""
    R, B = _pos("peak throughput R", R), _pos("bandwidth B", B)
    return min(R, B * operational_intensity(n, b))


def min_latency(n, b, R, B):
    """Eq. 11: t_min = n / min(R, B * n/b).

    Computed as max(n/R, b/B), which equals Eq. 11 for n, b > 0 and stays defined at the
    edges: no bytes gives n/R, no ops gives b/B (a pure copy still takes time).
    """
    n, b = _nonneg("ops n", n), _nonneg("bytes b", b)
    return max(n / _pos("peak throughput R", R), b / _pos("bandwidth B", B))


def is_memory_bound(n, b, R, B):
    """True when the kernel is 'underwater' (Section 4): n/b < R/B, so the bandwidth floor binds."""
    return operational_intensity(n, b) < op_byte_ratio(R, B)


def _with_peaks(kernels, R):
    """[(n, b, R_k)] of (n, b) pairs (R_k = R) or (n, b, R_k) triples; values are checked where they are used."""
    out = []
    for k in kernels:
        if len(k) not in (2, 3):
            raise ValueError(f"a kernel is (n, b) or (n, b, R_k), got {k!r}")
        out.append((k[0], k[1], k[2] if len(k) == 3 else R))
    return out


def total_ops(kernels):
    """Eq. 14: N = sum_i n_i."""
    return sum(_nonneg("ops n", k[0]) for k in kernels)


def _total_bytes(kernels):
    return sum(_nonneg("bytes b", k[1]) for k in kernels)


def waterline_latency(kernels, R, B):
    """Eq. 12: T_min = sum_i n_i / min(R_i, B * n_i/b_i), kernels run one after another."""
    return sum(min_latency(n, b, Rk, B) for n, b, Rk in _with_peaks(kernels, R))


def _one_peak(ks, R):
    """True when every kernel of [(n, b, R_k)] runs at the scalar R: the paper's own formulas apply as written
    (and give the same floats as before per-kernel peaks)."""
    return all(Rk == R for _, _, Rk in ks)


def sequence_ideal_latency(kernels, R):
    """Eq. 1 summed over a sequence: t_i = sum_k n_k / R_k; N/R where every kernel runs at the one R."""
    ks = _with_peaks(kernels, R)
    if _one_peak(ks, R):
        return ideal_latency(total_ops(ks), R)
    return sum(ideal_latency(n, Rk) for n, _, Rk in ks)


def sequence_efficiency(kernels, t, R):
    """Eq. 8 for a sequence: C = t_i / t (t_i of sequence_ideal_latency), = N / (t * R) for one R."""
    ks = _with_peaks(kernels, R)
    if _one_peak(ks, R):
        return computational_efficiency(total_ops(ks), t, R)
    return sequence_ideal_latency(ks, R) / _pos("measured latency t_a", t)


def max_efficiency(kernels, R, B):
    """Eq. 13: C_max = t_i / T_min (= N / (T_min * R) for one R), the best efficiency the sequence can reach."""
    kernels = list(kernels)
    return _efficiency_at(kernels, waterline_latency(kernels, R, B), R)


def _efficiency_at(kernels, t, R):
    """t_i / t for a sequence whose attainable latency is t (Eq. 13's form)."""
    if t == 0:
        raise ValueError("C_max is undefined for a sequence with no ops and no bytes")
    ks = _with_peaks(kernels, R)
    if _one_peak(ks, R):
        return total_ops(ks) / (t * _pos("peak throughput R", R))  # Eq. 13 as written
    return sequence_ideal_latency(ks, R) / t


def mediant_intensity(kernels):
    """Eq. 29: sum_i n_i / sum_i b_i, the whole sequence treated as one kernel."""
    kernels = list(kernels)
    return operational_intensity(total_ops(kernels), _total_bytes(kernels))


def roofline_latency(kernels, R, B):
    """Roofline latency of a sequence from its mediant intensity (Eq. 29 in Eq. 11):
    max(sum n_i/R_i, sum b_i / B) = N / min(R, B * mediant) for one R.

    A sum of maxima is >= the maximum of the sums, so this is never above the waterline
    (Eq. 12); it is lower (over-promises) when memory- and compute-bound kernels are mixed.
    """
    kernels = list(kernels)
    return max(sequence_ideal_latency(kernels, R), _total_bytes(kernels) / _pos("bandwidth B", B))


def roofline_max_efficiency(kernels, R, B):
    """Eq. 13 with the roofline latency of Eq. 29 in place of T_min."""
    kernels = list(kernels)
    return _efficiency_at(kernels, roofline_latency(kernels, R, B), R)


def ideal_latency(n, R_i):
    """Eq. 1: t_i = n / R_i, the latency at peak arithmetic throughput (used in Eq. 8)."""
    return _nonneg("ops n", n) / _pos("peak throughput R_i", R_i)


def actual_throughput(n, t_a):
    """Eq. 3: R_a = n / t_a for a measured latency t_a."""
    return _nonneg("ops n", n) / _pos("measured latency t_a", t_a)


def computational_efficiency(n, t_a, R_i):
    """Eq. 7 / Eq. 8: C = R_a / R_i = t_i / t_a."""
    return actual_throughput(n, t_a) / _pos("peak throughput R_i", R_i)


def efficiency_gap(n, t_a, R_i):
    """Eq. 9: log10(t_a) - log10(t_i) = -log10(C), the width of the efficiency gap on a log
    latency axis, in decades (1.0 = ten times slower than ideal). inf when n = 0."""
    c = computational_efficiency(n, t_a, R_i)
    return math.inf if c == 0 else -math.log10(c)
