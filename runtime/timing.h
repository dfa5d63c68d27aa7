// Timing: CUDA events on the stream Halide launches on (device time: the flush before each sample
// is still running when the call is made, so the host's launch path is not counted; with no flush,
// as for the ceilings' millisecond-long runs, it is, a few µs) and, in
// separate samples, the host clock around launch + synchronize on an idle GPU (call latency as a
// caller feels it). Warm-up first; samples of several
// candidates are interleaved A/B/A/B so clock drift cancels; the L2 is flushed before every
// sample so no sample times the cache.
//
// Two flushes. `write` (a memset of 2x the L2, what triton.testing.do_bench and nvbench do) leaves
// the L2 full of the memset's dirty lines: the H200's L2 is write-back, so the timed kernel writes
// them back (up to one L2, 60 MB) as it evicts them, on top of its own bytes. `read` (the kernel
// l2_evict_read over a never-written buffer, runtime/ceilings.h) leaves clean lines only, so the
// timed kernel moves its own bytes. Compare with PyTorch under the same flush
// (bench/pytorch_baseline.py --l2-flush).
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace blockfuse {

enum class L2Flush { none, write, read };
const char *l2_flush_name(L2Flush f);  // "none" | "write" | "read"
bool parse_l2_flush(const std::string &s, L2Flush &out);

struct TimingOptions {
    // Warm-up calls per candidate before its samples: at least `warmup`, and on a device for at least
    // warmup_seconds (host clock): a GPU idle for a moment (loading kernels, checking them) runs at its idle
    // clocks, and a few calls of a short kernel end before they ramp up.
    int warmup = 3;
    double warmup_seconds = 0.05;
    int min_samples = 10;
    double min_seconds = 0.5;  // of samples, per candidate
    int max_samples = 200;
    L2Flush l2_flush = L2Flush::write;  // device only: before each sample
};

struct TimingStats {
    std::vector<double> device_ms;  // per sample (empty on the CPU)
    std::vector<double> host_ms;    // per host sample: launch + synchronize, host clock (GPU: separate samples)
    double median_ms = 0, min_ms = 0, max_ms = 0;  // of device_ms on GPU, host_ms on CPU
    double host_median_ms = 0;
    // Samples behind median_ms (on a GPU the host samples are fewer: runtime/timing.cpp).
    int samples() const { return int(device_ms.empty() ? host_ms.size() : device_ms.size()); }
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
