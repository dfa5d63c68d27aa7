#include "runtime/timing.h"
#include "runtime/ceilings.h"
#include "runtime/cuda_driver.h"
#include <algorithm>
#include <chrono>
#include <memory>

namespace blockfuse {

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

size_t l2_flush_bytes() { return std::max<size_t>(size_t(2) * cuda::device().l2_bytes, size_t(64) << 20); }

void flush_device_l2_once() {
    uintptr_t p = cuda::mem_alloc(l2_flush_bytes());
    cuda::memset_d8(p, 0, l2_flush_bytes());
    cuda::synchronize();
    cuda::mem_free(p);
}

const char *l2_flush_name(L2Flush f) {
    switch (f) {
    case L2Flush::none: return "none";
    case L2Flush::write: return "write";
    case L2Flush::read: return "read";
    }
    return "?";
}

bool parse_l2_flush(const std::string &s, L2Flush &out) {
    for (L2Flush f : {L2Flush::none, L2Flush::write, L2Flush::read})
        if (s == l2_flush_name(f)) {
            out = f;
            return true;
        }
    return false;
}

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// write: a memset of 2x the L2 (leaves it dirty); read: the read-only eviction (runtime/ceilings.h).
// flush() only queues the work: the GPU is still flushing when the timed call starts.
struct L2Flusher {
    uintptr_t buf = 0;
    size_t bytes = 0;
    std::unique_ptr<L2ReadEvictor> evictor;
    explicit L2Flusher(L2Flush kind) {
        if (kind == L2Flush::write) {
            bytes = l2_flush_bytes();
            buf = cuda::mem_alloc(bytes);
        } else if (kind == L2Flush::read) {
            evictor = std::make_unique<L2ReadEvictor>();
        }
    }
    ~L2Flusher() {
        if (buf) cuda::mem_free(buf);
    }
    void flush() {
        if (buf) cuda::memset_d8(buf, 0, bytes);  // device memory: asynchronous to the host
        if (evictor) evictor->enqueue_evict();
    }
};
}  // namespace

std::vector<TimingStats> time_interleaved(const std::vector<std::function<void()>> &fns, bool on_device,
                                          const TimingOptions &opt) {
    std::vector<TimingStats> st(fns.size());
    if (fns.empty()) return st;
    L2Flusher flusher(on_device ? opt.l2_flush : L2Flush::none);
    std::unique_ptr<cuda::EventPair> ev;
    if (on_device) ev = std::make_unique<cuda::EventPair>();
    for (auto &f : fns) {
        const auto t0 = Clock::now();
        for (int i = 0; i < opt.warmup || (on_device && i < 10000 && ms_since(t0) < opt.warmup_seconds * 1e3); ++i) {
            f();
            if (on_device) cuda::synchronize();
        }
    }
    std::vector<double> total(fns.size(), 0.0);
    auto enough = [&](size_t i) {
        const auto &v = on_device ? st[i].device_ms : st[i].host_ms;
        return int(v.size()) >= opt.min_samples && total[i] >= opt.min_seconds * 1e3 &&
               int(st[i].host_ms.size()) >= opt.min_samples;
    };
    for (int s = 0; s < opt.max_samples; ++s) {
        bool done = true;
        for (size_t i = 0; i < fns.size(); ++i) done = done && enough(i);
        if (done) break;
        for (size_t i = 0; i < fns.size(); ++i) {
            if (on_device) {
                // Device time: the flush is queued, not waited for, so the GPU is busy while the host
                // runs the call's launch path (Halide's argument checks, context, cuLaunchKernel) and
                // the start event fires when the flush ends. Waiting for the flush first left the GPU
                // idle during the launch path, and the events counted it as kernel time.
                flusher.flush();
                ev->record_start();
                fns[i]();
                ev->record_stop();
                const double d = ev->elapsed_ms();  // synchronizes on the stop event
                st[i].device_ms.push_back(d);
                total[i] += d;
                // Call latency as a caller feels it (launch path + kernel + synchronize, host clock,
                // after its own flush on an idle GPU): every sample until min_samples, then every 8th.
                if (int(st[i].host_ms.size()) < opt.min_samples || s % 8 == 0) {
                    flusher.flush();
                    cuda::synchronize();
                    const auto t0 = Clock::now();
                    fns[i]();
                    cuda::synchronize();
                    st[i].host_ms.push_back(ms_since(t0));
                }
            } else {
                auto t0 = Clock::now();
                fns[i]();
                double h = ms_since(t0);
                st[i].host_ms.push_back(h);
                total[i] += h;
            }
        }
    }
    for (auto &t : st) {
        const auto &v = on_device ? t.device_ms : t.host_ms;
        t.median_ms = median(v);
        t.min_ms = *std::min_element(v.begin(), v.end());
        t.max_ms = *std::max_element(v.begin(), v.end());
        t.host_median_ms = median(t.host_ms);
    }
    return st;
}

}  // namespace blockfuse
