// Pooling at run time: workload keys, tensors, running a pooling kernel, the float64 reference (PyTorch's
// loops, written out), the comparison and the tensor-machine accounting. Layouts are PyTorch's contiguous
// NCL / NCHW / NCDHW (layout=ncl|nchw|ncdhw in the key); a key without `n` is an unbatched input.
//   avgpool1d:n=4,c=128,l=4096,kernel=3,stride=2,pad=1,layout=ncl,dtype=f16
//   avgpool2d:n=3,c=96,h=55,w=57,kernel_h=3,kernel_w=5,stride=2,pad_h=1,pad_w=2,ceil=1,count_include_pad=0,divisor=7,...
//   maxpool3d:n=2,c=64,d=32,h=112,w=112,kernel=3,stride=2,pad=1,ceil=1,return_indices=1,layout=ncdhw,dtype=bf16
//   maxpool1d:...,kernel=5,stride=2,pad=2,dil=2,ceil=1,...    (dilation: max pooling only, as in PyTorch)
//   adaptive_avgpool2d:c=2048,h=7,w=7,out=1,layout=nchw,dtype=f16   (out or out_h/out_w; unbatched here)
//   mean_pooling:b=1,s=1000,h=64,d=128,chunk=32,seq_lens=100+200+300+400,dtype=f16,out_dtype=f32
// Symmetric fields (kernel, stride, pad, dil, out) and their per-axis forms (kernel_d/_h/_w ...) are
// exclusive; stride defaults to the kernel (PyTorch's stride=None). The canonical form prints the
// symmetric form where every axis agrees.
#pragma once
#include "runtime/kernel_registry.h"
#include "runtime/op.h"
#include "runtime/reference.h"
#include "runtime/tensor.h"
#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace blockfuse {

enum class PoolKind { avg, max };

// Windowed and adaptive pooling. Per-axis arrays hold the spatial axes outermost first, as PyTorch
// orders them ((d,) (h,) w); entry rank-1 is the innermost axis (x in the kernels).
struct PoolWorkload {
    PoolKind kind = PoolKind::max;
    int rank = 2;
    bool adaptive = false;
    bool indices = false;  // max: return_indices
    bool batched = true;   // false: the input has no batch dimension (n = 1 in the kernels)
    int n = 1, c = 0;
    std::array<int, 3> in{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};
    std::array<int, 3> out_size{1, 1, 1};  // adaptive: the requested output size
    bool ceil = false, count_include_pad = true;
    int divisor = 0;  // avg: divisor_override (0: none)
    DType dtype = DType::f32;

    std::string family() const;   // avgpool2d, adaptive_maxpool2d, ...
    std::string op_name() const;  // as the reference table names it: MaxPool2dIndicesFwd, ...
    int out(int axis) const;      // output extent of a spatial axis (PyTorch's formulas)
    long long in_plane() const;   // input elements per (n, c)
    long long out_plane() const;
    long long outputs() const { return 1LL * n * c * out_plane(); }
    int taps() const;  // kernel elements (adaptive: the widest window)
};

struct MeanPoolingWorkload {
    int b = 0, s = 0, h = 0, d = 0, chunk = 0;
    std::vector<int> seq_lens;  // ragged: the sequences of each batch row (sum s); empty: uniform
    DType dtype = DType::f32, out_dtype = DType::f32;
    bool ragged() const { return !seq_lens.empty(); }
    int chunks() const;                          // chunk outputs per batch row
    std::vector<int32_t> offsets() const;        // FLA's cu_seqlens: 0, then the running sums
    std::vector<int32_t> chunk_indices() const;  // (sequence, chunk) pairs, FLA's prepare_chunk_indices
};

bool is_pool_key(const std::string &key);  // any pooling family, mean pooling included
bool is_mean_pooling_key(const std::string &key);
PoolWorkload parse_pool(const std::string &key);  // throws WorkloadError naming the field and the value
MeanPoolingWorkload parse_mean_pooling(const std::string &key);
std::string to_key(const PoolWorkload &w);
std::string to_key(const MeanPoolingWorkload &w);
// The pooling families behind the Op interface (runtime/op.h).
std::unique_ptr<Op> pool_op(const std::string &key);

struct PoolTensors {
    Tensor input, output;                      // (x, [y, [z,]] c, n), PyTorch's contiguous layout
    Halide::Runtime::Buffer<int64_t> indices;  // max with return_indices: the argmax, else empty
};
PoolTensors make_pool_tensors(const PoolWorkload &w);
// Uniform random input in [-1, 1); output NaN, indices -1: what a kernel does not write stays visible.
void randomize(PoolTensors &t, const PoolWorkload &w, std::mt19937_64 &rng);
void poison_outputs(PoolTensors &t, DType dtype);

struct MeanPoolingTensors {
    Tensor input, output;                                   // x (d, h, s, b); output (d, h, chunk, b) in out_dtype
    Halide::Runtime::Buffer<int32_t> offsets, chunk_index;  // ragged only: (NS + 1), (2, NC)
};
MeanPoolingTensors make_mean_pooling_tensors(const MeanPoolingWorkload &w);
void randomize(MeanPoolingTensors &t, const MeanPoolingWorkload &w, std::mt19937_64 &rng);

struct ScheduleChoice;
KernelVariant pool_kernel_for(const PoolWorkload &w, Device device, const ScheduleChoice &s);
KernelVariant pool_kernel_for(const MeanPoolingWorkload &w, Device device, const ScheduleChoice &s);
// Why kernel v cannot run on w within `limits` ("" if it can): threads per block, the grid, and the
// output tile against the output (edge tiles shift inwards). The run functions throw KernelError with
// it before launching; the tuner skips such candidates.
struct LaunchLimits;
// GPU, windowed: whether every x tile of tile_x outputs (the last shifted inwards where tile_x does not divide
// the output, or with guard_x computed whole past it) starts its input window at the same lane of a vec-element
// vector, so that the staged window is a constant register window (schedules/pool_schedule.cpp).
bool pool_window_lane_constant(const PoolWorkload &w, int tile_x, int vec, bool guard_x = false);
std::string pool_launch_error(const KernelVariant &v, const PoolWorkload &w, const LaunchLimits &limits);
std::string pool_launch_error(const KernelVariant &v, const MeanPoolingWorkload &w, const LaunchLimits &limits);
void run_pool(const KernelVariant &v, const PoolWorkload &w, PoolTensors &t);
void run_mean_pooling(const KernelVariant &v, const MeanPoolingWorkload &w, MeanPoolingTensors &t);

// Float64 reference written from PyTorch's loops (max: `if (val > maxval || isnan(val))` over the valid
// taps in scan order, the argmax starting at the first valid tap; avg: the sum over the window clipped
// to the input, divided by divisor_override, the window clipped to the padded input, or the clipped
// window), compared: avg within the tolerance of tests/README.md, max values and indices exactly (NaN
// equal to NaN).
Comparison check_pool(const PoolWorkload &w, PoolTensors &t);
Comparison check_mean_pooling(const MeanPoolingWorkload &w, MeanPoolingTensors &t);

// Ops: avg one add per tap and one division per output, max one comparison per tap (padded taps
// counted, as the reference table does); bytes: the input, the output and the int64 indices once.
KernelCost pool_cost(const PoolWorkload &w, const std::string &name);
KernelCost pool_cost(const MeanPoolingWorkload &w, const std::string &name);

}  // namespace blockfuse
