// Fused blocks at run time: workload keys, tensors, running an AOT block kernel, the float64
// reference (layer by layer through runtime/reference), and the tensor-machine accounting.
//   mbconv:n=128,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16
//   fused_mbconv:...,e=4,k=3,act=silu   ffn:...,e=4,act=relu   convfirst:...,e=4 (k=3, ReLU)
//   convnext:...,e=4,k=7,act=gelu (depthwise kxk -> LayerNorm -> FFN -> residual)
//   mbconv:...,stride=1,blocks=3,...: a stage of 3 identical blocks (blocks 1-4; stride 1), each
//   block's input the previous block's output
#pragma once
#include "generators/block_spec.h"
#include "runtime/conv2d.h"
#include "runtime/cost.h"
#include "runtime/reference.h"
#include <random>
#include <string>
#include <vector>

namespace blockfuse {

struct BlockWorkload {
    BlockFamily family = BlockFamily::mbconv;
    int n = 0, c = 0, h = 0, w = 0, e = 0, k = 3, stride = 1;
    int blocks = 1;   // > 1: a stage
    bool se = false;  // mbconv with Squeeze-Excitation (se=1)
    Activation act = Activation::relu6;
    DType dtype = DType::f32;
    BlockSpec spec() const;
    // One block's layers as conv2d workloads (shapes, padding, groups, activation); a stage
    // repeats them `blocks` times.
    std::vector<Conv2dWorkload> layers() const;
    int out_h() const;
    int out_w() const;
};

bool is_block_key(const std::string &key);
// The block families (single blocks and stages) behind the Op interface (runtime/op.h).
std::unique_ptr<Op> block_op(const std::string &key);
BlockWorkload parse_block(const std::string &key);  // throws WorkloadError
// Whether strategy fused_tc builds this block: a single f16/bf16 FFN or ConvFirst block some fused_tc tiling fits.
bool fused_tc_serves(const BlockWorkload &w);
std::string to_key(const BlockWorkload &w);

struct BlockTensors {
    Tensor input, output;
    std::vector<Tensor> weights;  // layer i of block b at [b * layers + i]; then SE's reduce, expand
    std::vector<Halide::Runtime::Buffer<float>> biases;
    // [b * layers + i]: the weights of a dense f16/bf16 layer as layer_by_layer_tc's implicit GEMMs read them
    // (runtime/conv2d_tc.h), laid out by randomize(); empty for the other layers.
    std::vector<Halide::Runtime::Buffer<uint16_t>> weights_tc;
};
BlockTensors make_block_tensors(const BlockWorkload &w);
// Fresh random data (weights scaled by 1/sqrt(fan-in) so activations stay O(1) in f16), output
// poisoned with NaN; the tensor-core weight layout made from the weights.
void randomize(BlockTensors &t, const BlockWorkload &w, std::mt19937_64 &rng);

// The named variants (variant data) of this block's configuration on `device`, every strategy: the one
// the data marks default first, then in data order.
std::vector<const KernelVariant *> block_candidates(const BlockWorkload &w, Device device);
// A kernel generated for this block's configuration (channels, expansion, kernel size, stride, act, SE,
// blocks; the image size stays a run-time extent) with the given strategy and schedule.
struct ScheduleChoice;
KernelVariant block_kernel_for(const BlockWorkload &w, const std::string &strategy, Device device,
                               const ScheduleChoice &s);
// Throws KernelError naming the block, the strategy and the limit if a GPU launch would exceed
// the device's threads per block or shared memory per block. run_block calls it first.
void check_block_launch(const KernelVariant &v, const BlockWorkload &w);
// ...against given limits (tests: a GPU's limits on a machine without it).
void check_block_launch(const KernelVariant &v, const BlockWorkload &w, const LaunchLimits &limits);
void run_block(const KernelVariant &v, const BlockWorkload &w, BlockTensors &t);

// Float64 reference: layer by layer, block by block, hidden layers and the outputs of all blocks
// but the last rounded to the storage type as the kernels store them. Compares every output
// (tolerance in tests/README.md).
Comparison check_block(const BlockWorkload &w, BlockTensors &t);
// check_block in two halves, so that kernels run on the same inputs share one reference:
// the float64 output and its scale (sum of |terms|) from t's input, weights and biases...
struct BlockReference {
    std::vector<double> out, scale;
    // Per output, a bound on the error the kernel's hidden layers may carry into it: each hidden layer's f32
    // accumulation (gamma bound on its scale) and rounding to storage, propagated through the later layers by the
    // absolute weights (activations Lipschitz <= 1.2) and the residuals. A hidden layer that cancels keeps an error
    // relative to its terms, not to its small values, which the last layer's scale does not see.
    std::vector<double> carried;
};
BlockReference block_reference(const BlockWorkload &w, BlockTensors &t);
// ...and t's output compared with it.
Comparison compare_to_reference(const BlockWorkload &w, BlockTensors &t, const BlockReference &ref);

// Tensor-machine accounting of a strategy: per kernel as launched, ops (2 per MAC) and compulsory
// DRAM bytes (layer-by-layer: each layer reads its input and weights and writes its output;
// fused: per block, block input, its weights, block output once; depth_first: one kernel for the
// stage, stage input, all weights, stage output once; its halo recompute is not counted, the
// bench README reports it beside).
// tile_x, tile_y: the fused variant's output tile (the SE split keeps partial sums per tile); tc_grouped:
// layer_by_layer_tc's grouped layers on the tensor cores (knob tc_grouped); wgmma_layers: the layers (by index) whose
// tensor-core GEMM is built with wgmma (knobs tc<i>_wgmma).
std::vector<KernelCost> block_costs(const BlockWorkload &w, const std::string &strategy, int tile_x = 8, int tile_y = 4,
                                    bool tc_grouped = false, const std::vector<bool> &wgmma_layers = {});

}  // namespace blockfuse
