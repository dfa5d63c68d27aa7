// Timing: CUDA events on the stream Halide launches on (device time) and the host clock around
// launch + synchronize (call latency as a caller feels it). Warm-up first; samples of several
// candidates are interleaved A/B/A/B so clock drift cancels; the L2 is flushed before every
// sample so no sample times the cache.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace blockfuse {

struct TimingOptions {
    int warmup = 3;
    int min_samples = 10;
    double min_seconds = 0.5;  // of samples, per candidate
    int max_samples = 200;
    bool flush_l2 = true;      // device only: memset a buffer of 2x L2 before each sample
};

struct TimingStats {
    std::vector<double> device_ms;  // per sample (empty on the CPU)
    std::vector<double> host_ms;    // per sample: launch + synchronize, host clock
    double median_ms = 0, min_ms = 0, max_ms = 0;  // of device_ms on GPU, host_ms on CPU
    double host_median_ms = 0;
};

double median(std::vector<double> v);

// Bytes written to evict the device's L2 (2x its size, at least 64 MiB), and a one-off flush.
size_t l2_flush_bytes();
void flush_device_l2_once();

// Times each candidate; `on_device` selects events + flush (CUDA) or the host clock (CPU,
// OpenCL). Each fn must be a complete call (it is synchronized by the timer).
std::vector<TimingStats> time_interleaved(const std::vector<std::function<void()>> &fns, bool on_device,
                                          const TimingOptions &opt);

}  // namespace blockfuse
