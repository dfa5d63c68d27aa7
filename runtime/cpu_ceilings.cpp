// The CPU's ceilings, measured like the GPU's (runtime/ceilings.h): a multi-threaded copy far beyond
// the caches (bytes read + written), and the f32 FMA rate of independent vector chains on every core
// (AVX-512 where the CPU has it, else AVX2 + FMA), the two roofs the CPU kernels' waterline uses.
#include "runtime/ceilings.h"
#include "runtime/timing.h"
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <immintrin.h>
#include <vector>

namespace blockfuse {
namespace {

// 12 independent chains hide the FMA latency (4 cycles on 2 ports: 8 must be in flight).
__attribute__((target("avx512f"), noinline)) float fma_avx512(long iters, float bf, float cf) {
    __m512 b = _mm512_set1_ps(bf), c = _mm512_set1_ps(cf), a[12];
    for (int j = 0; j < 12; ++j) a[j] = _mm512_set1_ps(float(j));
    for (long i = 0; i < iters; ++i)
#pragma GCC unroll 12
        for (int j = 0; j < 12; ++j) a[j] = _mm512_fmadd_ps(a[j], b, c);
    __m512 s = a[0];
    for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, a[j]);
    // summed through memory: GCC 12's _mm512_reduce_add_ps reads an undefined vector (-Wuninitialized)
    float v[16];
    _mm512_storeu_ps(v, s);
    float sum = 0;
    for (float x : v) sum += x;
    return sum;
}
__attribute__((target("avx2,fma"), noinline)) float fma_avx2(long iters, float bf, float cf) {
    __m256 b = _mm256_set1_ps(bf), c = _mm256_set1_ps(cf), a[12];
    for (int j = 0; j < 12; ++j) a[j] = _mm256_set1_ps(float(j));
    for (long i = 0; i < iters; ++i)
#pragma GCC unroll 12
        for (int j = 0; j < 12; ++j) a[j] = _mm256_fmadd_ps(a[j], b, c);
    __m256 s = a[0];
    for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, a[j]);
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}

template <class F>
double seconds_on_all_cores(F f) {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    std::vector<double> samples;
    for (int rep = 0; rep < 5; ++rep) {
        std::vector<std::thread> pool;
        const auto t0 = std::chrono::steady_clock::now();
        for (unsigned t = 0; t < n; ++t) pool.emplace_back([&f, t, n] { f(t, n); });
        for (auto &th : pool) th.join();
        samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return median(samples);
}

}  // namespace

Ceilings measure_cpu_ceilings() {
    Ceilings c;
    const size_t bytes = size_t(256) << 20;  // far beyond the last-level cache
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    const double copy_s = seconds_on_all_cores([&](unsigned t, unsigned n) {
        const size_t part = bytes / n;
        std::memcpy(dst.data() + t * part, src.data() + t * part, part);
    });
    c.copy_gbps = 2.0 * double(bytes) / copy_s / 1e9;
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const int lanes = avx512 ? 16 : 8;
    volatile long iters = 20'000'000;  // volatile: the loop's length is not a constant to fold
    volatile float sink = 0;
    const double fma_s = seconds_on_all_cores([&](unsigned, unsigned) {
        sink = sink + (avx512 ? fma_avx512(iters, 0.999f, 1e-3f) : fma_avx2(iters, 0.999f, 1e-3f));
    });
    c.ffma_f32_tflops = 2.0 * iters * 12 * lanes * std::max(1u, std::thread::hardware_concurrency()) / fma_s / 1e12;
    c.measured = true;
    return c;
}

}  // namespace blockfuse
