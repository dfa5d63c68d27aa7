// Microbenchmarks for the CUDA-core ceilings Halide code can reach (it emits no tensor-core
// instructions): FFMA fp32 and HFMA2 fp16. Compiled to PTX at build time, loaded through the
// driver API at run time. Eight independent chains per thread hide the FMA latency.
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
