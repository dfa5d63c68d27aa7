// The device's ceilings, measured at the start of a run: device-to-device copy bandwidth
// (bytes read + written), the CUDA-core FMA rates (FFMA fp32, HFMA2 fp16) and the tensor-core rate of
// mma.sync.m16n8k16 with f32 accumulation (f16 and bf16 inputs), the roof of the GEMM family; on compute
// capability 9.0 also wgmma.mma_async.m64n256k16's (runtime/ceiling_wgmma.cu), the roof of kernels built with wgmma.
#pragma once
#include <memory>

namespace blockfuse {

struct Ceilings {
    double copy_gbps = 0;
    double ffma_f32_tflops = 0;
    double hfma2_f16_tflops = 0;
    double mma_f16_tflops = 0, mma_bf16_tflops = 0;
    double wgmma_f16_tflops = 0, wgmma_bf16_tflops = 0;  // 0: not a compute capability 9.0 device
    bool measured = false;
};

// Requires a CUDA device; each figure is the median of 10 event-timed runs.
Ceilings measure_ceilings();
// The CPU's: a copy on every core and the f32 FMA rate of every core (runtime/cpu_ceilings.cpp);
// ffma_f32_tflops then holds the CPU's FMA f32 rate.
Ceilings measure_cpu_ceilings();

// A read-only L2 eviction for profilers: evict() runs the kernel `l2_evict_read` over a buffer of
// 2x the L2 (at least 64 MiB) and waits. The H200's L2 is write-back, so a kernel's output can
// still sit in it, dirty, when the kernel ends; those bytes reach DRAM during the next kernel.
// After evict() the L2 holds clean lines only, and under Nsight Compute (--cache-control none)
// the evict kernel's DRAM writes are the leftovers of the kernels before it. (A memset flush
// would leave its own dirty lines, written back during the next kernel profiled.)
class L2ReadEvictor {
public:
    L2ReadEvictor();  // requires a CUDA device
    ~L2ReadEvictor();
    L2ReadEvictor(const L2ReadEvictor &) = delete;
    L2ReadEvictor &operator=(const L2ReadEvictor &) = delete;
    void evict();          // runs the kernel and waits for it
    void enqueue_evict();  // queues it only (timing: the GPU stays busy while the host launches)

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace blockfuse
