// Correctness gate shared by tests and benchmarks: a kernel's output against the float64
// reference, every output checked for being written (finite), and the values compared at
// every point (small outputs) or at a random sample of points (large ones).
#pragma once
#include "runtime/conv2d.h"
#include "runtime/reference.h"
#include <functional>
#include <random>

namespace blockfuse {

// The convolutions' policy: every output compared where the float64 reference stays under ~2e8
// multiply-adds, else kSampledPoints outputs drawn at random (every output still scanned for being written).
constexpr double kFullCheckMacs = 2e8;
constexpr size_t kSampledPoints = 4096;

// `out` against a reference of single outputs (ref(o, &scale)): all of them if there are at most
// max_points, else max_points drawn at random, every output scanned for NaN / Inf either way.
Comparison compare_points(const std::vector<double> &out, size_t max_points, std::mt19937_64 &rng,
                          const std::function<double(size_t, double *)> &ref, long long reduction_length, DType dtype);

// `max_points`: compare all outputs if there are at most this many, else this many sampled.
Comparison check_conv2d(const Conv2dWorkload &w, Conv2dTensors &t, size_t max_points, std::mt19937_64 &rng);

}  // namespace blockfuse
