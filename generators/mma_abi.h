// The m16n8k16 tensor-core instruction as blockfuse's kernels use it, Halide-free: the names of the
// opaque extern calls that stand for mma.sync and ldmatrix in the emitted PTX (runtime/mma_ptx.cpp
// turns each group of them into one instruction at module load), and the fragment layouts of the
// PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type", "ldmatrix"). Every index
// map is a template, so the same table serves Halide Exprs (generators/mma.h) and plain ints (tests).
#pragma once

namespace blockfuse::mma {

constexpr int kTileM = 16, kTileN = 8, kTileK = 16, kWarp = 32;
constexpr int kARegs = 4, kBRegs = 2, kCRegs = 4;  // 32-bit registers per lane

// mma(q, a0, a1, a2, a3, b0, b1, c_q) -> d_q: register q of D = A*B + C, f32 accumulators. One call per
// output register (each carries only its own c_q); the four calls of one instruction share a and b.
constexpr const char *kMmaF16 = "blockfuse_mma_m16n8k16_f32_f16";
constexpr const char *kMmaBf16 = "blockfuse_mma_m16n8k16_f32_bf16";
// ldmatrix_xN(r, shared_byte_address) -> register r (of N) of ldmatrix.sync.aligned.m8n8.xN.shared.b16:
// matrix r, whose 8 rows of 16 bytes start at the addresses lanes 8r..8r+7 pass.
constexpr const char *kLdmatrixX4 = "blockfuse_ldmatrix_x4";
constexpr const char *kLdmatrixX2 = "blockfuse_ldmatrix_x2";
// The asynchronous copies of a multi-stage panel pipeline (schedules/panel_prefetch.h), one instruction each:
// cp_async_16(shared_byte_address, global_pointer, src_bytes) -> 0 is cp.async.cg.shared.global of 16 bytes, the
// bytes past src_bytes (0 or 16) zero-filled; cp_async_commit() -> 0 is cp.async.commit_group; cp_async_wait(n) -> 0
// is cp.async.wait_group n (n a constant).
constexpr const char *kCpAsync16 = "blockfuse_cp_async_16";
constexpr const char *kCpAsyncCommit = "blockfuse_cp_async_commit";
constexpr const char *kCpAsyncWait = "blockfuse_cp_async_wait";
// Hopper's warpgroup mma (sm_90a), operands from shared memory. wgmma(i, n, a_address, a_lbo, a_sbo, a_swizzle,
// b_address, b_lbo, b_sbo, b_swizzle, c_i) -> d_i: register i (of n / 2) of D = A * B + C of
// wgmma.mma_async.m64n{n}k16.f32, A the 64 x 16 K-major tile at a_address (a shared byte address), B the n x 16 K-major
// tile at b_address. Each operand is laid out as its matrix descriptor says: *_swizzle kWgmmaInterleave, core matrices
// of 8 rows x 16 bytes (128 contiguous bytes), *_lbo the bytes between core matrices adjacent along K, *_sbo along the
// rows; or kWgmmaSwizzle128, rows of 128 bytes (64 elements of K) in atoms of 8 rows, the 16-byte chunk c of row r
// stored at chunk c ^ r (the atom 1024-byte aligned), *_sbo the bytes between atoms along the rows, *_lbo unused (the
// descriptor's "leading" and "stride" byte offsets and its layout type). One call per register, like mma; the n / 2
// calls of one instruction share every operand but i and c. D's layout: warp w of the warpgroup holds rows 16 w to
// 16 w + 15, register i = 4 nt + q the C/D register q (c_row, c_col below) of the n-tile nt of 8 columns. The
// generator's calls carry panel elements instead of the addresses (see schedules/mma_lowering.h).
constexpr const char *kWgmmaF16 = "blockfuse_wgmma_m64k16_f32_f16";
constexpr const char *kWgmmaBf16 = "blockfuse_wgmma_m64k16_f32_bf16";
constexpr int kWgmmaM = 64, kWgmmaWarps = 4, kWgmmaMaxN = 256;
// The descriptor's layout type (bits 62-63): no swizzle, and the 128-byte swizzle of K steps of 64 16-bit elements.
constexpr int kWgmmaInterleave = 0, kWgmmaSwizzle128 = 1;
// fence_proxy_async() -> 0 is fence.proxy.async.shared::cta: shared memory written by ordinary stores made visible to
// wgmma, which reads it through the async proxy (before the barrier that hands the panels to the warpgroups).
constexpr const char *kFenceProxyAsync = "blockfuse_fence_proxy_async";
// cvt_bf16(x) -> bits is cvt.rn.bf16.f32: an f32 rounded to the nearest even bf16, as its 16 bits (Halide 21's CUDA
// backend crashes on native bf16 casts, generators/storage.h; the integer rounding takes about six instructions).
constexpr const char *kCvtBf16 = "blockfuse_cvt_bf16";
// Every extern of this family starts with this: the rewriter rejects one it does not know.
constexpr const char *kExternPrefix = "blockfuse_";

// Lane = 4 * groupID + threadID_in_group, as in the ISA tables.
template <class T>
T group_of(const T &lane) {
    return lane / 4;
}
template <class T>
T thread_in_group(const T &lane) {
    return lane % 4;
}

// A (16x16, row-major): register r of a lane holds A[row][col], A[row][col + 1] (low half first).
template <class T>
T a_row(const T &r, const T &lane) {
    return group_of(lane) + 8 * (r % 2);
}
template <class T>
T a_col(const T &r, const T &lane) {
    return 2 * thread_in_group(lane) + 8 * (r / 2);
}
// ...and which lane and register hold A[row][k] (half k % 2).
template <class T>
T a_lane_of(const T &row, const T &k) {
    return 4 * (row % 8) + (k % 8) / 2;
}
template <class T>
T a_reg_of(const T &row, const T &k) {
    return row / 8 + 2 * (k / 8);
}

// B (16x8, "col": k contiguous per column): register r of a lane holds B[k][col], B[k + 1][col].
template <class T>
T b_k(const T &r, const T &lane) {
    return 2 * thread_in_group(lane) + 8 * r;
}
template <class T>
T b_col(const T &lane) {
    return group_of(lane);
}
template <class T>
T b_lane_of(const T &k, const T &col) {
    return 4 * col + (k % 8) / 2;
}
template <class T>
T b_reg_of(const T &k) {
    return k / 8;
}

// C/D (16x8, f32): register q of a lane holds C[row][col].
template <class T>
T c_row(const T &q, const T &lane) {
    return group_of(lane) + 8 * (q / 2);
}
template <class T>
T c_col(const T &q, const T &lane) {
    return 2 * thread_in_group(lane) + q % 2;
}
template <class T>
T c_lane_of(const T &row, const T &col) {
    return 4 * (row % 8) + col / 2;
}
template <class T>
T c_reg_of(const T &row, const T &col) {
    return 2 * (row / 8) + col % 2;
}

// ldmatrix: lane i's register r holds row i / 4, b16 elements 2 * (i % 4) and + 1, of matrix r.
template <class T>
T ldmatrix_source_lane(const T &r, const T &lane) {
    return 8 * r + lane / 4;
}
template <class T>
T ldmatrix_element(const T &lane) {
    return 2 * (lane % 4);
}

// Row addresses for a whole A fragment with one ldmatrix.x4 (matrix r = A register r): the lane gives
// row ldsm_a_row of the 16-row tile, starting at k offset ldsm_a_k.
template <class T>
T ldsm_a_row(const T &lane) {
    return lane % 8 + 8 * ((lane / 8) % 2);
}
template <class T>
T ldsm_a_k(const T &lane) {
    return 8 * (lane / 16);
}
// B fragments of two adjacent n-tiles with one ldmatrix.x4 (matrix j = register j % 2 of n-tile j / 2),
// or of one n-tile with x2 (lanes 0-15 give the addresses): column ldsm_b_col, k offset ldsm_b_k.
template <class T>
T ldsm_b_col(const T &lane) {
    return lane % 8 + 8 * (lane / 16);
}
template <class T>
T ldsm_b_k(const T &lane) {
    return 8 * ((lane / 8) % 2);
}

}  // namespace blockfuse::mma
