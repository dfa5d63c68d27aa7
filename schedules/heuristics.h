// The schedules' default knobs as functions of the shape: what a kernel generated for a workload gets
// when no tuning record applies and no hand-written variant is the default for it. Every choice is
// derived from the workload (channel counts, image sizes, kernel size, stride, dtype) within the
// limits of the target class below, never looked up by configuration. The knobs they return are valid
// for the generators (the property tests build and check them on random shapes).
#pragma once
#include "runtime/block.h"
#include "runtime/conv2d_tc.h"
#include "runtime/gemm.h"
#include "runtime/pool.h"
#include "runtime/stem.h"
#include <map>
#include <string>

namespace blockfuse {

// What a heuristic decides: the schedule knobs (only those it sets; the rest keep their declared
// defaults), the CUDA JIT register cap (0: the register policy's rule) and one line saying why.
struct ScheduleChoice {
    std::map<std::string, int> knobs;
    int max_registers = 0;
    std::string why;
};

// Kernels are generated where no GPU may be present and the cache is carried to the GPU, so the
// heuristics never ask the device: GPU kernels stay within what every CUDA GPU of compute capability
// 8.0 or later grants a block with the opt-in (99 KB of shared memory), and at most 512 threads.
constexpr long long kHeuristicSharedBytes = 99 * 1024;
constexpr long long kOpenClSharedBytes = 48 * 1024;  // OpenCL: no opt-in (what the launch checker allows there)
constexpr int kHeuristicMaxThreads = 512;

// Depth-first on the GPU: Halide 21 refuses to build the kernel (an explicit-bounds assertion it proves to fail)
// where a hidden layer of a block before the last has exactly one point per thread: (chunk / hidden_vec) times its
// region's pixels (the tile grown by the halos after it) equal to the thread block's threads. Names that layer, or
// "" where no layer does.
std::string depth_first_one_point_per_thread(const BlockSpec &spec, int blocks, int tile_x, int tile_y, int vec_k,
                                             int chunk, int hidden_vec);
ScheduleChoice conv2d_heuristic(const Conv2dWorkload &w, Device device);
// strategy: layer_by_layer, fused, depth_first. Throws WorkloadError naming the limit if the strategy
// cannot serve the workload within it (e.g. a depth-first stage whose tiles do not fit in shared memory).
ScheduleChoice block_heuristic(const BlockWorkload &w, const std::string &strategy, Device device);
ScheduleChoice stem_heuristic(const StemWorkload &w, const std::string &strategy, Device device);
// The tensor-core GEMM's tiling as a function of M, N and K (schedules/gemm_knobs.h).
ScheduleChoice gemm_heuristic(const GemmWorkload &w, Device device);
// The same tiling for the implicit GEMM of a dense convolution on the tensor cores (runtime/conv2d_tc.h); z: a
// conv3d's depth.
ScheduleChoice conv2d_tc_heuristic(const Conv2dWorkload &w, Device device, const TcDepth &z = {});
// schedules/pool_heuristics.cpp
ScheduleChoice pool_heuristic(const PoolWorkload &w, Device device);
ScheduleChoice pool_heuristic(const MeanPoolingWorkload &w, Device device);

}  // namespace blockfuse
