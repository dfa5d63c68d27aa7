// A custom lowering pass that pipelines a GEMM's K loop over its shared panels by one step, in registers
// (the GEMM knob `prefetch`). Halide stages each K step's A and B panels in shared memory at the top of the
// K loop, so every thread waits for its global loads before a single mma is issued:
//
//     for p:  panels <- global(p);  barrier;  mma(panels);  barrier
//
// The pass turns that into
//
//     panels <- global(0);  barrier
//     for p:  regs <- global(min(p + 1, last));  mma(panels);  barrier;  panels <- regs;  barrier
//
// so the loads of step p + 1 are in flight while step p's mma run (the last step reloads its own panel
// rather than branching: the loop body stays one basic block, which keeps the loads where they are). The
// registers hold what the thread stores into the panels: one slot per element it stores, counted
// statically (loops of constant extent, both arms of a condition), so a fully unrolled panel load keeps
// them in registers. Barriers and shared memory are as before; the cost is those registers.
//
// The same pass serves the CPU emulation, whose schedule stores the panels outside the K loop when
// prefetching, so CI tests the transformation itself against the float64 reference (OpenCL's emulation, which
// keeps fragments per panel, refuses the knob).
//
// Strict like schedules/mma_lowering.h: a named K loop that is not found, that does not start with its
// panels' loads, whose panels are allocated inside it, or (with barriers) whose body does not end with one,
// is a Halide::CompileError naming `kernel`.
#pragma once
#include "Halide.h"
#include <string>
#include <vector>

namespace blockfuse {

struct PanelLoop {
    std::string loop;                 // the K loop's name in the lowered code (acc.s1.<rk>$y)
    std::vector<std::string> panels;  // the Funcs its leading producers compute (a_panel, b_panel)
};

Halide::Internal::IRMutator *make_panel_prefetch_pass(const std::string &kernel, std::vector<PanelLoop> loops);

}  // namespace blockfuse
