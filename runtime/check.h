// Correctness gate shared by tests and benchmarks: a kernel's output against the float64
// reference, every output checked for being written (finite), and the values compared at
// every point (small outputs) or at a random sample of points (large ones).
#pragma once
#include "runtime/conv2d.h"
#include "runtime/reference.h"
#include <random>

namespace blockfuse {

// `max_points`: compare all outputs if there are at most this many, else this many sampled.
Comparison check_conv2d(const Conv2dWorkload &w, Conv2dTensors &t, size_t max_points, std::mt19937_64 &rng);

}  // namespace blockfuse
