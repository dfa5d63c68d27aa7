// The load-time rewrite that gives Halide kernels tensor-core instructions: Halide 21 cannot emit
// mma.sync or ldmatrix, so kernels built from generators/mma.h call opaque externs instead, one call per
// result register (generators/mma_abi.h). In the PTX each call is a `{ // callseq N ... }` block;
// rewrite() replaces each group of them by the one instruction they stand for:
//
//   4 x blockfuse_mma_m16n8k16_f32_{f16,bf16}(q, a0..a3, b0, b1, c_q) -> d_q   (q = 0..3, same a and b)
//     => mma.sync.aligned.m16n8k16.row.col.f32.{f16.f16|bf16.bf16}.f32 {d0..d3}, {a0..a3}, {b0, b1}, {c0..c3};
//   N x blockfuse_ldmatrix_xN(r, address) -> register r   (r = 0..N-1, same address; N = 4 or 2)
//     => ldmatrix.sync.aligned.m8n8.xN.shared.b16 {r0..}, [address];
//   blockfuse_cp_async_16(shared_address, global_address, src_bytes)
//     => cp.async.cg.shared.global [shared_address], [global_address], 16, src_bytes;
//   blockfuse_cp_async_commit() => cp.async.commit_group;   blockfuse_cp_async_wait(n) => cp.async.wait_group n;
//   n / 2 x blockfuse_wgmma_m64k16_f32_{f16,bf16}(i, n, a_address, a_lbo, a_sbo, b_address, b_lbo, b_sbo, c_i) -> d_i
//     => the matrix descriptors, D = C, then wgmma.fence; wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{f16.f16|
//        bf16.bf16} {d0..}, a_desc, b_desc, 1, 1, 1, 0, 0; wgmma.commit_group; wgmma.wait_group 0;
//   blockfuse_fence_proxy_async() => fence.proxy.async.shared::cta;
//   blockfuse_cvt_bf16(x) -> bits => cvt.rn.bf16.f32 of x, zero-extended into the result;
//
// (the copies of schedules/panel_prefetch.h's multi-stage pipeline, the fence and the conversion, one instruction
// each; the copies' and the fence's results, if read, are 0; a module with wgmma or the fence is raised to PTX ISA 8.0 and .target sm_90a), and drops the externs' declarations. It is strict: a group split by a label, branch, barrier or store,
// a missing or duplicated member, a non-constant register index, operands it cannot order around the
// fused instruction, any other blockfuse_ extern, or a call left over is an error naming the kernel (the
// PTX .entry), never a module loaded with calls ptxas would reject or a silent fallback. Members need
// not be adjacent: the instructions between them are kept, those the fused instruction needs moved
// before it and the rest after it, in their order.
//
// The text contract (the callseq shape) is that of the NVPTX backend of LLVM 21.1 in the Halide 21.0.0
// wheel; tests/data/ holds a fixture of it.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace blockfuse::mma_ptx {

struct RewriteError : std::runtime_error {
    RewriteError(std::string kernel, const std::string &what)
        : std::runtime_error("PTX rewrite of kernel " + kernel + ": " + what), kernel(std::move(kernel)) {}
    std::string kernel;
};

struct Stats {
    int mma = 0, ldmatrix_x4 = 0, ldmatrix_x2 = 0, cp_async = 0, wgmma = 0, cvt_bf16 = 0;
    std::vector<std::string> kernels;  // entries that had at least one group
};

// The module calls or declares a blockfuse_ extern (so it must be rewritten before loading).
bool needs_rewrite(std::string_view ptx);

// The rewritten module; throws RewriteError.
std::string rewrite(std::string_view ptx, Stats *stats = nullptr);

// The widest tensor-core tilings (64 x 64 warp tiles) spill below this many registers per thread (ptxas,
// sm_90): the least a rewritten module's default cap is (Halide's own default is 64; runtime/kernel_registry.cpp's
// rule for a block size). A cap set on purpose (a variant's or record's max_registers, the policy, the
// environment) is the module's as it is: a small tiling fits fewer registers and gains occupancy.
constexpr int kMinRegisters = 168;
inline int register_cap(int requested) { return requested >= kMinRegisters ? requested : kMinRegisters; }

// The kernel families built on the rewrite (their schedules: the GEMM's, schedules/gemm_knobs.h).
inline bool tensor_core_family(const std::string &family) { return family == "gemm" || family == "conv2d_tc"; }

}  // namespace blockfuse::mma_ptx
