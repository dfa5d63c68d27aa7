// The conv2d schedules' knobs, declared once (schedules/knobs.h). Halide-free: the generator,
// the schedule, the runtime's launch checker and dispatcher, the heuristics and the tuner read it.
#pragma once
#include "schedules/knobs.h"
#include <string>

// GPU (CUDA, OpenCL): each thread owns a register tile of vec_k output channels x tile_x x tile_y
// pixels; a block is threads_k x threads_x threads, or flat_threads in the flat mapping.
#define BLOCKFUSE_CONV2D_GPU_KNOBS(X)                                                                                  \
    X(vec_k, 4, (1, 4, 8),                                                                                             \
      "output channels per thread, one vector (f16: 4 or 8; 2-wide f16 vectors were wrong through Halide 21's "        \
      "PTX backend on the H200)")                                                                                      \
    X(threads_k, 32, (4, 8, 9, 15, 16, 18, 30, 32, 36, 60, 64, 72),                                                    \
      "threads along the output channel vectors (2-D mapping)")                                                        \
    X(threads_x, 4, (1, 2, 4, 8, 16), "threads along x (2-D mapping)")                                                 \
    X(tile_x, 2, (1, 2, 4, 7, 8), "output pixels per thread along x (an unrolled register tile)")                      \
    X(tile_y, 2, (1, 2, 4, 7, 8), "output pixels per thread along y")                                                  \
    X(unroll_reduction, 1, (0, 1), "unroll the kernel window loops (static kernel size)")                              \
    X(unroll_channels, 1, (1, 2, 4, 8), "input channels per step of the reduction, the step unrolled")                 \
    X(stage_channels, 0, (0, 1),                                                                                       \
      "each step's input channels x the thread's tile (+ halo) loaded into registers as channel vectors first")        \
    X(stage_input, 0, (0, 1, 2),                                                                                       \
      "the input window once per thread: 1 in registers, 2 the block's tile + halo in shared memory")                  \
    X(flat_threads, 0, (0, 32, 64, 128, 256),                                                                          \
      "> 0: flat mapping, a row of (channel vector, x tile) pairs cut into blocks of this many threads")

// CPU: each task of the parallel loop owns rows of output; a register tile of cpu_vec_k vectors of
// cpu_lanes output channels x cpu_tile_x x cpu_tile_y pixels accumulates over the input channels and
// the kernel window (the f32 lanes: 16 fill one AVX-512 register, 8 one AVX2 register).
#define BLOCKFUSE_CONV2D_CPU_KNOBS(X)                                                                                  \
    X(cpu_lanes, 8, (8, 16), "f32 lanes per vector along the output channels")                                         \
    X(cpu_vec_k, 1, (1, 2, 3, 4), "vectors of output channels per register tile")                                      \
    X(cpu_tile_x, 4, (1, 2, 3, 4, 5, 6, 7, 8, 12, 14), "output pixels per register tile along x")                      \
    X(cpu_tile_y, 1, (1, 2, 3, 4), "output pixels per register tile along y")                                          \
    X(cpu_unroll_c, 1, (1, 2, 4), "input channels per unrolled step of the reduction")                                 \
    X(cpu_window_inner, 0, (0, 1),                                                                                     \
      "1: the kernel window innermost in the reduction (channels outside it); 0: the input channels innermost")        \
    X(cpu_rows, 1, (1, 2, 4, 8), "tile rows per task of the parallel loop over rows and images")                       \
    X(cpu_stage_input, 1, (0, 1),                                                                                      \
      "1: the zero-padded input rows a task reads copied once into a buffer (no bounds selects in the reduction)")     \
    X(cpu_trim_window, 0, (0, 1),                                                                                      \
      "1: each register tile's window loops bounded to the taps inside the image, the zero padding's skipped "         \
      "(the algorithm's reduction predicated, Halide making the predicate the loops' bounds); 0: every tap")

namespace blockfuse {

enum class ConvKind { general, pointwise, depthwise };

// Device limits every GPU schedule must respect; checked when a kernel is made and again against the
// actual device before any launch (runtime/conv2d.cpp check_launch).
constexpr int kMaxThreadsPerBlock = 1024;

struct Conv2dGpuKnobs {
    BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_KNOB_FIELD)
    int threads_per_block() const { return flat_threads > 0 ? flat_threads : threads_k * threads_x; }
    // Output channels a block of the 2-D mapping covers: threads_k vectors of vec_k, or threads_k channels where
    // vec_k does not divide the layer's out_channels (the schedule's fallback to one channel a thread).
    int block_channels(int out_channels) const {
        return threads_k * (vec_k > 0 && out_channels % vec_k == 0 ? vec_k : 1);
    }
};

struct Conv2dCpuKnobs {
    BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_KNOB_FIELD)
};

inline const KnobTable &conv2d_gpu_knobs() {
    static const KnobTable t{{BLOCKFUSE_CONV2D_GPU_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}
inline const KnobTable &conv2d_cpu_knobs() {
    static const KnobTable t{{BLOCKFUSE_CONV2D_CPU_KNOBS(BLOCKFUSE_KNOB_DECL)}};
    return t;
}

// Knob structs from knob sets: conv2d_gpu_knobs_from(set, prefix), conv2d_cpu_knobs_from(set, prefix).
BLOCKFUSE_DEFINE_KNOBS_FROM(conv2d_gpu_knobs_from, Conv2dGpuKnobs, BLOCKFUSE_CONV2D_GPU_KNOBS)
BLOCKFUSE_DEFINE_KNOBS_FROM(conv2d_cpu_knobs_from, Conv2dCpuKnobs, BLOCKFUSE_CONV2D_CPU_KNOBS)

// Why these knobs cannot schedule a conv2d layer on the GPU ("" if they can): the schedule's own
// constraints, which schedule_conv2d_gpu raises as a CompileError and the tuner checks before it builds a
// candidate. static_window: kernel size, stride and dilation are constants; in_per_group: the input
// channels per group, out_channels and groups the layer's (0: not known when the kernel is made).
inline std::string conv2d_gpu_knobs_error(const Conv2dGpuKnobs &kn, ConvKind kind, bool static_window, int in_per_group,
                                          int out_channels = 0, int groups = 1) {
    if (kn.threads_per_block() > kMaxThreadsPerBlock)
        return "threads_k*threads_x (or flat_threads) = " + std::to_string(kn.threads_per_block()) + " exceeds " +
               std::to_string(kMaxThreadsPerBlock) + " threads per block";
    if (kn.stage_input && !static_window) return "stage_input needs a static kernel size, stride and dilation";
    if (kn.stage_input == 2 && kn.flat_threads > 0)
        return "stage_input=2 (a block's shared tile) needs the 2-D mapping";
    // A grouped or depthwise layer's shared tile holds the input channels of the block's output-channel tile
    // (threads_k x vec_k channels, threads_k where vec_k does not divide them): a last, partial tile's window reaches
    // past the input's channels, which Halide's bounds check refuses at launch ("accessed at 119, beyond the max
    // (63)", ConvFirst c=64 with threads_k 9 on the H200).
    if (kn.stage_input == 2 && groups > 1 && out_channels > 0) {
        const int tile = kn.block_channels(out_channels);
        if (tile < out_channels && out_channels % tile)
            return "stage_input=2 on a grouped layer needs its channel tile (threads_k x vec_k = " +
                   std::to_string(tile) + ") to divide its " + std::to_string(out_channels) +
                   " output channels or cover them";
    }
    if (kn.stage_channels) {
        const bool general_ok = kind == ConvKind::general && static_window && kn.stage_input != 1;
        const bool pointwise_ok = kind == ConvKind::pointwise && !kn.stage_input;
        if (kn.unroll_channels < 2 || !(general_ok || pointwise_ok) ||
            (in_per_group > 0 && in_per_group % kn.unroll_channels))
            return "stage_channels needs unroll_channels (> 1) dividing the input channels per group, and either a "
                   "pointwise layer without stage_input or a general one with a static kernel and stage_input 0 or 2";
    }
    return "";
}

// Why these knobs cannot schedule a conv2d layer on the CPU ("" if they can), raised by
// schedule_conv2d_cpu and checked by the tuner. The register tile's accumulators are bounded by the 32
// vector registers of AVX-512 (16 on AVX2): a tile of more spills every accumulator on every step,
// and its fully unrolled body takes LLVM minutes to compile.
constexpr int kMaxCpuTileVectors = 32;
inline std::string conv2d_cpu_knobs_error(const Conv2dCpuKnobs &kn) {
    for (auto [name, v] : {std::pair<const char *, int>{"cpu_lanes", kn.cpu_lanes},
                           {"cpu_vec_k", kn.cpu_vec_k},
                           {"cpu_tile_x", kn.cpu_tile_x},
                           {"cpu_tile_y", kn.cpu_tile_y},
                           {"cpu_unroll_c", kn.cpu_unroll_c},
                           {"cpu_rows", kn.cpu_rows}})
        if (v < 1) return std::string(name) + " = " + std::to_string(v) + " must be at least 1";
    if (kn.cpu_lanes % 4) return "cpu_lanes = " + std::to_string(kn.cpu_lanes) + " must be a multiple of 4";
    if (kn.cpu_window_inner != 0 && kn.cpu_window_inner != 1) return "cpu_window_inner must be 0 or 1";
    if (kn.cpu_stage_input != 0 && kn.cpu_stage_input != 1) return "cpu_stage_input must be 0 or 1";
    if (kn.cpu_trim_window != 0 && kn.cpu_trim_window != 1) return "cpu_trim_window must be 0 or 1";
    const int vectors = kn.cpu_vec_k * kn.cpu_tile_x * kn.cpu_tile_y;
    if (vectors > kMaxCpuTileVectors)
        return "cpu_vec_k*cpu_tile_x*cpu_tile_y = " + std::to_string(vectors) + " accumulator vectors exceed " +
               std::to_string(kMaxCpuTileVectors);
    return "";
}
// The CPU knobs a layer of this kind reads: a depthwise layer reduces over the window only, so the
// input-channel knobs (cpu_unroll_c, cpu_window_inner) change nothing there.
// cpu_trim_window is the stand-alone kernel's (the conv2d generator predicates its reduction); a block's layers and a
// 1x1 layer, which has no window, keep every tap.
inline bool conv2d_cpu_knob_applies(const std::string &name, ConvKind kind, bool block_layer = false) {
    if (name == "cpu_trim_window" && (block_layer || kind == ConvKind::pointwise)) return false;
    return kind != ConvKind::depthwise || (name != "cpu_unroll_c" && name != "cpu_window_inner");
}

}  // namespace blockfuse
