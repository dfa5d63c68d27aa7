#include "runtime/ceilings.h"
#include "runtime/cuda_driver.h"
#include "runtime/timing.h"

namespace blockfuse {
namespace {
const char *kCeilingPtx =
#include "ceiling_kernels.ptx.inc"
    ;
const char *kWgmmaCeilingPtx =
#include "ceiling_wgmma.ptx.inc"
    ;
}  // namespace

Ceilings measure_ceilings() {
    Ceilings c;
    cuda::make_current();
    TimingOptions opt;
    opt.min_samples = 10;
    opt.min_seconds = 0;
    opt.max_samples = 10;
    opt.l2_flush = L2Flush::none;

    const size_t bytes = size_t(1) << 30;  // far beyond L2
    uintptr_t src = cuda::mem_alloc(bytes), dst = cuda::mem_alloc(bytes);
    cuda::memset_d8(src, 1, bytes);
    auto copy = time_interleaved({[&] { cuda::memcpy_dtod(dst, src, bytes); }}, true, opt);
    c.copy_gbps = 2.0 * bytes / (copy[0].median_ms * 1e-3) / 1e9;
    cuda::mem_free(src);
    cuda::mem_free(dst);

    cuda::Module mod(kCeilingPtx);
    const unsigned block = 256, grid = unsigned(cuda::device().sm_count) * 8;
    uintptr_t out = cuda::mem_alloc(size_t(grid) * block * sizeof(float));
    float b = 0.999f, cc = 1e-3f;
    int iters = 4096;
    void *args[] = {&out, &b, &cc, &iters};
    const double fmas = double(grid) * block * iters * 16 * 8;
    auto f32 = time_interleaved({[&] { mod.launch("ffma_f32", grid, block, args); }}, true, opt);
    auto f16 = time_interleaved({[&] { mod.launch("hfma2_f16", grid, block, args); }}, true, opt);
    c.ffma_f32_tflops = 2 * fmas / (f32[0].median_ms * 1e-3) / 1e12;
    c.hfma2_f16_tflops = 4 * fmas / (f16[0].median_ms * 1e-3) / 1e12;  // 2 lanes x 2 ops
    const int mma_iters = 256;                                         // ~0.1 s a launch at 600 TFLOP/s
    void *mma_args[] = {&out, &b, &cc, const_cast<int *>(&mma_iters)};
    const double mma_flops = double(grid) * (block / 32) * mma_iters * 8 * 4096;  // 8 chains, 16 x 8 x 16 x 2 each
    auto m16 = time_interleaved({[&] { mod.launch("mma_f16", grid, block, mma_args); }}, true, opt);
    auto mb16 = time_interleaved({[&] { mod.launch("mma_bf16", grid, block, mma_args); }}, true, opt);
    c.mma_f16_tflops = mma_flops / (m16[0].median_ms * 1e-3) / 1e12;
    c.mma_bf16_tflops = mma_flops / (mb16[0].median_ms * 1e-3) / 1e12;
    if (cuda::device().cc_major == 9 && cuda::device().cc_minor == 0) {  // sm_90a PTX loads nowhere else
        cuda::Module wg(kWgmmaCeilingPtx);
        // One warpgroup a block, 3 blocks an SM (154 registers a thread), 8 waves; 0.016 s a launch on an H100.
        const unsigned wg_grid = unsigned(cuda::device().sm_count) * 3 * 8;
        const int wg_iters = 2048;
        uintptr_t wg_out = cuda::mem_alloc(size_t(wg_grid) * 128 * sizeof(float));
        void *wg_args[] = {&wg_out, &b, &cc, const_cast<int *>(&wg_iters)};
        const double wg_flops = double(wg_grid) * wg_iters * 4 * (64.0 * 256 * 16 * 2);  // 4 m64n256k16 an iteration
        auto w16 = time_interleaved({[&] { wg.launch("wgmma_f16", wg_grid, 128, wg_args); }}, true, opt);
        auto wb16 = time_interleaved({[&] { wg.launch("wgmma_bf16", wg_grid, 128, wg_args); }}, true, opt);
        c.wgmma_f16_tflops = wg_flops / (w16[0].median_ms * 1e-3) / 1e12;
        c.wgmma_bf16_tflops = wg_flops / (wb16[0].median_ms * 1e-3) / 1e12;
        cuda::mem_free(wg_out);
    }
    cuda::mem_free(out);
    c.measured = true;
    return c;
}

struct L2ReadEvictor::Impl {
    cuda::Module mod{kCeilingPtx};
    size_t bytes = l2_flush_bytes();
    uintptr_t buf = cuda::mem_alloc(bytes);  // never written: the kernel only reads it
    uintptr_t out = cuda::mem_alloc(16);
    ~Impl() {
        cuda::mem_free(buf);
        cuda::mem_free(out);
    }
};

L2ReadEvictor::L2ReadEvictor() {
    cuda::make_current();
    impl_ = std::make_unique<Impl>();
}
L2ReadEvictor::~L2ReadEvictor() = default;

void L2ReadEvictor::enqueue_evict() {
    unsigned long long words = impl_->bytes / 16;
    void *args[] = {&impl_->buf, &words, &impl_->out};
    impl_->mod.launch("l2_evict_read", unsigned(cuda::device().sm_count) * 8, 256, args);
}

void L2ReadEvictor::evict() {
    enqueue_evict();
    cuda::synchronize();
}

}  // namespace blockfuse
