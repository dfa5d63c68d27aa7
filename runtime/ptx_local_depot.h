// Halide 21's CUDA backend stores vectors into a local array (a register Func it could not keep in registers: one
// indexed at run time, or a tile too large) with the vector's alignment, while LLVM aligns the function's local
// depot, where the array lives, for the element only: `.local .align 4 .b8 __local_depot0[448]` beside
// `st.local.v2.b64` (16 bytes). Where ptxas places that depot off a 16-byte boundary the kernel stops with
// CUDA_ERROR_MISALIGNED_ADDRESS (docs/halide-21.md). The module loader (runtime/cuda_driver.cpp) raises each
// function's depot to its widest local access, which aligns the arrays that start at a multiple of that width in the
// depot: every case seen, where the array is the depot's only object, at offset 0.
#pragma once
#include <string>

namespace blockfuse::ptx {

// Raises in place every `.local .align A .b8 __local_depotN[S]` whose function accesses local memory wider than A
// bytes (ld.local/st.local, vectors included) to that width; returns how many depots it raised.
int align_local_depots(std::string &ptx);

}  // namespace blockfuse::ptx
