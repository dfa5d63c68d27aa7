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
    int stages = 1;                   // make_panel_pipeline_pass: the panels' copies (at least 2)
};

Halide::Internal::IRMutator *make_panel_prefetch_pass(const std::string &kernel, std::vector<PanelLoop> loops);

// The multi-stage pipeline (the GEMM knob `stages`): the panels' shared allocations hold S copies (a ring), step p's
// loads go to copy p % S, S - 1 steps ahead of the step that reads them, each a 16-byte cp.async (Ampere's
// asynchronous copy: global to shared without registers, the bytes past the source zero-filled) on CUDA:
//
//     copies(0); commit; ...; copies(S - 2); commit
//     for p:  wait_group(S - 2); barrier; copies(p + S - 1); commit; mma(copy p % S)
//     wait_group(0)
//
// wait_group(S - 2) leaves at most the S - 2 newest groups in flight, so step p's copies have landed; the barrier
// then makes every thread's copies visible and guarantees that step p - 1's copy, which copies(p + S - 1)
// overwrites, has been read (one barrier a step instead of two). Steps past the last copy zeros and read nothing
// (their addresses are the last step's): the loop body stays one basic block. Each panel store must be one
// 16-byte row of a global input, under a condition uniform over the row (`select(c, row, 0)`: zero padding, rows
// past M) — the implicit GEMM's gather with channels a multiple of 8 — and provably 16-byte aligned on both sides;
// anything else is a CompileError naming the kernel. With `async` false (the CPU emulation) the copies are plain
// stores, zeros past the last step, with the same ring, order and offsets, so CI checks the ring's indexing against
// the float64 reference; the CPU schedule stores the panels outside the K loop, folded to one K step.
Halide::Internal::IRMutator *make_panel_pipeline_pass(const std::string &kernel, std::vector<PanelLoop> loops,
                                                      bool async);

}  // namespace blockfuse
