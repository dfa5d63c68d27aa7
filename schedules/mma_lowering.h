// A custom lowering pass for CUDA kernels built from generators/mma.h, added to the pipeline by the
// schedule (Pipeline::add_custom_lowering_pass). Halide runs custom passes last, after unrolling,
// GPU thread-loop fusion, barrier insertion and warp-shuffle lowering, so the pass sees the kernel as
// it will be compiled, and does five small jobs there:
//
//  1. ldmatrix addresses. Each ldmatrix extern carries the shared-memory element its lane points at,
//     and the row's last element (for bounds inference). The pass checks both are loads of one
//     GPUShared allocation with the row contiguous (last - first = 7 elements of 16 bits) and the start
//     provably 16-byte aligned, and replaces them with the byte address (Halide puts shared memory at
//     address 0 of the shared window: CodeGen_PTX_Dev.cpp, visit(const Allocate *)).
//  2. Per-warp accumulators in registers. An accumulator computed at block level is striped across
//     lanes by Halide (LowerWarpShuffles) but still indexed by warp, which puts it in local memory
//     when a block has several warps. For each Func named in `warp_striped`, the pass proves every
//     access reads or writes its own warp's slice at a constant index (the slice is warp * S for a
//     slice size S, the same map for every access) and drops the warp term: each thread keeps S values.
//  3. Convergence. mma.sync, ldmatrix and wgmma need all 32 lanes (wgmma: of each of its 4 warps): every such call must sit in a gpu_lanes
//     loop of extent 32 with no enclosing condition that depends on a thread index.
//  4. Outputs on the device only. Halide asserts a non-null host pointer for an output whose pure definition
//     is undef, as these kernels' are (it sees the undef in host loops before removing it); the pass drops
//     that assertion for every output the lowered statement does not touch on the host, so that a caller
//     with device memory only (the C API, blockfuse.torch) can run the kernel.
//  5. wgmma operands. Each wgmma extern carries, for A and for B, its tile's panel elements at (k, row) = (0, 0),
//     (0, 1), (8, 0), (0, 8) and its last: the pass checks they are loads of one GPUShared allocation laid out in
//     core matrices (rows 8 elements apart, the offsets between core matrices along K and along the rows
//     constants, the last where those put it, the start 16-byte aligned) and replaces them with the tile's byte
//     address and the two offsets in bytes, from which the rewrite makes the matrix descriptor. In a kernel with
//     wgmma every barrier is preceded by fence.proxy.async (the panels' stores visible to the tensor cores).
//
// Anything else is a Halide::CompileError naming `kernel` and what failed: the kernel is never built
// in a form the PTX rewriter (runtime/mma_ptx.h) or the hardware would get wrong.
#pragma once
#include "Halide.h"
#include <string>
#include <vector>

namespace blockfuse {

Halide::Internal::IRMutator *make_mma_lowering_pass(const std::string &kernel, std::vector<std::string> warp_striped);

}  // namespace blockfuse
