// The tensor-core ceiling of Hopper's warpgroup instruction (compute capability 9.0 only: sm_90a PTX), the roof of
// the kernels built with the GEMM knob `wgmma` (docs/tensor-cores.md). mma.sync cannot reach it (measured on an H200:
// cuBLAS's wgmma kernels run a 4096^3 f16 GEMM faster than the mma.sync ceiling), so a wgmma kernel's share is taken
// against this one. One warpgroup a block holds a 64 x 256 f32 accumulator (128 registers a thread) and chains
// wgmma.mma_async.m64n256k16 with A and B read from shared memory (core-matrix layout, no swizzle), four K steps
// a commit group and one group left in flight, as a GEMM's main loop does (CUTLASS's warpgroup_wait<1>).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// The accumulator's 128 registers a thread, as the instruction's operand list and as the asm's outputs.
#define WGMMA_ACC_LIST                                                                                                 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                                 \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                                 \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                                 \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                                 \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                                 \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                     \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA_ACC_OUTS(d)                                                                                              \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),        \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),         \
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),        \
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),        \
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),        \
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),        \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),        \
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]),        \
        "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]),        \
        "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]),        \
        "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]),        \
        "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]),        \
        "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]),   \
        "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),              \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]),              \
        "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]),              \
        "+f"(d[126]), "+f"(d[127])

namespace {

// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading and stride byte
// offsets, each >> 4; layout type 0 (no swizzle).
__device__ uint64_t smem_descriptor(const void *p, unsigned lbo, unsigned sbo) {
    const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(p));
    return uint64_t((addr & 0x3FFFF) >> 4) | uint64_t((lbo & 0x3FFFF) >> 4) << 16 |
           uint64_t((sbo & 0x3FFFF) >> 4) << 32;
}

// Values in [-0.5, 0.5): sums stay finite and the multipliers see data, not zeros.
__device__ float operand_value(unsigned i) { return float((i * 2654435761u) >> 22) / 1024.0f - 0.5f; }

template <bool bf16>
__device__ void wgmma_chains(float *out, int iters) {
    // A: 64 rows x 16 K, B: 256 columns x 16 K, each in 8 x 8 core matrices of 128 bytes: K's two core matrices 128
    // bytes apart (LBO), the next 8 rows or columns 256 bytes on (SBO).
    __shared__ __align__(128) uint16_t a[64 * 16], b[256 * 16];
    for (unsigned i = threadIdx.x; i < 64 * 16 + 256 * 16; i += blockDim.x) {
        const float v = operand_value(i + blockIdx.x);
        const uint16_t h = bf16 ? __bfloat16_as_ushort(__float2bfloat16(v)) : __half_as_ushort(__float2half(v));
        (i < 64 * 16 ? a[i] : b[i - 64 * 16]) = h;
    }
    __syncthreads();
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the generic proxy's stores, seen by wgmma's
    const uint64_t da = smem_descriptor(a, 128, 256), db = smem_descriptor(b, 128, 256);
    float d[128];
#pragma unroll
    for (int j = 0; j < 128; ++j) d[j] = 0.0f;
    for (int i = 0; i < iters; ++i) {
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if (bf16)
                asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {" WGMMA_ACC_LIST "}, %128, %129, "
                             "1, 1, 1, 0, 0;"
                             : WGMMA_ACC_OUTS(d)
                             : "l"(da), "l"(db));
            else
                asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {" WGMMA_ACC_LIST "}, %128, %129, "
                             "1, 1, 1, 0, 0;"
                             : WGMMA_ACC_OUTS(d)
                             : "l"(da), "l"(db));
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float s = 0;
#pragma unroll
    for (int j = 0; j < 128; ++j) s += d[j];
    if (s == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the chains alive
}

}  // namespace

// 64 x 256 x 16 x 2 = 524288 flops a wgmma, 4 a loop iteration, one warpgroup (128 threads) a block.
extern "C" __global__ void __launch_bounds__(128) wgmma_f16(float *out, float, float, int iters) {
    wgmma_chains<false>(out, iters);
}
extern "C" __global__ void __launch_bounds__(128) wgmma_bf16(float *out, float, float, int iters) {
    wgmma_chains<true>(out, iters);
}
