// Hand-written device kernels of the harness, compiled to PTX at build time and loaded through the
// driver API at run time: the microbenchmarks for the CUDA-core ceilings Halide code can reach (it
// emits no tensor-core instructions), FFMA fp32 and HFMA2 fp16 (eight independent chains per
// thread hide the FMA latency), mma.sync for the tensor-core kernels, and the read-only L2 eviction used
// under a profiler.
// On the H200 HFMA2 measured the FFMA FLOP rate (66.8 against 65.2 TFLOP/s), half the FFMA
// instruction rate; ptxas puts 640 of the loop's 644 on the FMA pipe (HFMA2, 4 HFMA2.MMA), see
// bench/results/h200/report/README.md.
#include <cuda_fp16.h>

extern "C" __global__ void ffma_f32(float *out, float b, float c, int iters) {
    float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
            a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
        }
    }
    float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    if (s == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the chains alive
}

extern "C" __global__ void hfma2_f16(float *out, float bf, float cf, int iters) {
    __half2 b = __float2half2_rn(bf), c = __float2half2_rn(cf);
    __half2 a0 = __float2half2_rn(threadIdx.x * 1e-3f), a1 = __hadd2(a0, c), a2 = __hadd2(a1, c), a3 = __hadd2(a2, c),
            a4 = __hadd2(a3, c), a5 = __hadd2(a4, c), a6 = __hadd2(a5, c), a7 = __hadd2(a6, c);
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            a0 = __hfma2(a0, b, c); a1 = __hfma2(a1, b, c); a2 = __hfma2(a2, b, c); a3 = __hfma2(a3, b, c);
            a4 = __hfma2(a4, b, c); a5 = __hfma2(a5, b, c); a6 = __hfma2(a6, b, c); a7 = __hfma2(a7, b, c);
        }
    }
    __half2 s = __hadd2(__hadd2(__hadd2(a0, a1), __hadd2(a2, a3)), __hadd2(__hadd2(a4, a5), __hadd2(a6, a7)));
    float f = __low2float(s) + __high2float(s);
    if (f == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = f;
}

// The tensor-core ceiling of the kernels built from generators/mma.h: mma.sync.aligned.m16n8k16 with
// f32 accumulators (4096 flops per warp instruction), eight independent accumulator chains per warp so
// the instruction's latency is hidden; A and B stay in registers.
template <bool bf16>
__device__ void mma_chains(float *out, int iters) {
    unsigned a0 = threadIdx.x * 0x00010001u, a1 = a0 ^ 0x3c003c00u, a2 = a0 + 1, a3 = a1 + 1, b0 = a0 ^ 0x00ff00ffu,
             b1 = b0 + 1;
    float c[8][4];
#pragma unroll
    for (int j = 0; j < 8; ++j)
        for (int q = 0; q < 4; ++q) c[j][q] = 0.0f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if (bf16)
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                             "{%0,%1,%2,%3};"
                             : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                             : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            else
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                             "{%0,%1,%2,%3};"
                             : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
                             : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
        }
    }
    float s = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
    if (s == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the chains alive
}
extern "C" __global__ void mma_f16(float *out, float, float, int iters) { mma_chains<false>(out, iters); }
extern "C" __global__ void mma_bf16(float *out, float, float, int iters) { mma_chains<true>(out, iters); }

// Reads n 16-byte words (a buffer of 2x the L2) and writes at most 4 bytes (only if the XOR of a
// thread's words hits the constant; the store keeps the loads alive). The L2 ends up holding
// clean lines of this buffer, so the lines the kernels before it left dirty are written back
// during it: under Nsight Compute its DRAM writes are those leftovers (bench --single-run,
// runtime/ceilings.h). Integer XOR, so whatever the memory holds is harmless.
extern "C" __global__ void l2_evict_read(const uint4 *buf, unsigned long long n, unsigned *out) {
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = __ldcg(buf + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u) out[0] = acc;
}
