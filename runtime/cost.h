// One kernel's cost in the tensor machine (A. Lavin's model): its ops and compulsory DRAM bytes.
#pragma once
#include <string>
#include <vector>

namespace blockfuse {

struct KernelCost {
    std::string name;
    double flops = 0, bytes = 0;
    // Tensors counted in `bytes` that an earlier kernel of the same run wrote or read (their sizes,
    // each read once). The tensor machine charges them to DRAM; on a GPU whose L2 still holds such
    // a tensor they come from the L2 (bench/ncu_compare.py's L2-aware column).
    std::vector<double> rereads;
    // The flops the kernel executes, recomputation included (< 0: the same as `flops`; NaN: not
    // modelled). The tensor machine counts each op once (`flops`); a fused tile recomputes its hidden
    // layers on the halo the later layers need, and a split at Squeeze-Excitation recomputes the
    // layers before it.
    double executed_flops = -1;
    // Its ops run on the tensor cores: its compute roof is the tensor-core ceiling, not the FFMA one; wgmma's where it
    // was built with wgmma (knob wgmma, a block layer's tc<i>_wgmma), else mma.sync's.
    bool tensor_cores = false;
    bool wgmma = false;
    double executed() const { return executed_flops < 0 ? flops : executed_flops; }
};

}  // namespace blockfuse
