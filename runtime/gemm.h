// The tensor-core GEMM at run time: C = act(A B^T + bias), f16 or bf16, f32 accumulation, e.g.
//   gemm:m=25088,n=1024,k=256,dtype=f16        gemm:m=4096,n=4096,k=4096,bias=1,act=gelu,dtype=bf16
// A is M x K (K innermost: NHWC activations, pixels x channels), B is the weights as N x K (K innermost,
// nn.Linear's layout), C is M x N. Every row starts on a 16-byte boundary: the tensors here are laid out
// with row strides rounded up to 8 elements, and A's and B's padding columns hold zeros (the kernels
// require both: generators/gemm_algorithm.h, GemmShape).
#pragma once
#include "runtime/conv2d.h"
#include "runtime/op.h"
#include "runtime/reference.h"
#include <random>
#include <string>
#include <vector>

namespace blockfuse {

struct GemmWorkload {
    int m = 0, n = 0, k = 0;
    bool bias = false;
    Activation act = Activation::none;
    DType dtype = DType::f16;
};

bool is_gemm_key(const std::string &key);
GemmWorkload parse_gemm(const std::string &key);  // throws WorkloadError naming the field and value
std::string to_key(const GemmWorkload &w);
// The gemm family behind the Op interface (runtime/op.h): one strategy, "direct".
std::unique_ptr<Op> gemm_op(const std::string &key);

// Bit patterns (uint16) of the workload's dtype; bias f32 (zeros without bias).
struct GemmTensors {
    Halide::Runtime::Buffer<uint16_t> a;       // (round_up(k, 8), m): columns k.. zero
    Halide::Runtime::Buffer<uint16_t> b;       // (round_up(k, 8), n): columns k.. zero
    Halide::Runtime::Buffer<float> bias;       // (n)
    Halide::Runtime::Buffer<uint16_t> output;  // (n, m), rows every round_up(n, 8) elements
};

// A (cols, rows) tensor whose rows start every round_up(cols, 8) elements (16 bytes), as the kernels
// need; `padded`: its extent is that row length too (A and B, which the kernels read in whole 8-element
// groups), else cols (C).
Halide::Runtime::Buffer<uint16_t> make_gemm_matrix(int cols, int rows, bool padded);
GemmTensors make_gemm_tensors(const GemmWorkload &w);
// Fresh uniform data in [-1, 1) rounded to the dtype (bias only with bias=1); output poisoned with NaN.
void randomize(GemmTensors &t, const GemmWorkload &w, std::mt19937_64 &rng);
// Small integers in [lo, hi] (A, B and bias): every product and sum exact, for bit-exact checks.
void randomize_integers(GemmTensors &t, const GemmWorkload &w, std::mt19937_64 &rng, int lo, int hi);
// The same inputs with an output of its own, poisoned with NaN (one per candidate kernel).
GemmTensors with_own_output(const GemmTensors &t, DType dtype);

// The named variants (schedules/variants/gemm.json) of the workload's dtype on `device`, the data's
// default first.
std::vector<const KernelVariant *> gemm_candidates(const GemmWorkload &w, Device device);
struct ScheduleChoice;
// A kernel with the given tiling (M, N and K stay run-time extents).
KernelVariant gemm_kernel_for(const GemmWorkload &w, Device device, const ScheduleChoice &s);

// Launch resources of a GPU tensor-core variant (the GEMM, the implicit-GEMM conv2d) for an M x N product:
// block and grid, shared panels, the register cap its JIT gets (runtime/mma_ptx.h raises tensor-core
// modules to at least mma_ptx::kMinRegisters).
struct GemmLaunch {
    LaunchShape shape;
    int registers = 0;  // per thread, the JIT cap
};
GemmLaunch tensor_core_launch(const KernelVariant &v, long long m, long long n, int a_windows = 1);
GemmLaunch gemm_launch(const KernelVariant &v, const GemmWorkload &w);
// What of such a launch the device cannot run ("" if it fits): the knobs' constraints, threads per block,
// shared memory, registers x threads per block, grid dimensions. `channels`: an implicit GEMM's input channels, whose
// A rows are whole 16-byte vectors only where they are a multiple of 8, as the cp.async ring (knob stages) needs
// (checked on every device, so the CPU emulation takes what CUDA builds); 0 for a plain GEMM (rows padded to 8).
// `a_windows`: a grouped convolution's A panels per block (one per window of output channels its tile touches).
std::string tensor_core_launch_error(const KernelVariant &v, long long m, long long n, const LaunchLimits &limits,
                                     int channels = 0, int a_windows = 1);
// Throws KernelError naming the kernel, the workload and the limit before a launch that would fail.
void check_gemm_launch(const KernelVariant &v, const GemmWorkload &w);

// Calls a tensor-core kernel with its arguments (the _argv ABI); throws KernelError with Halide's message, or the
// PTX rewrite's naming the kernel where its module was refused.
void call_tensor_core_kernel(const KernelVariant &v, void **args, const std::string &key);
// Runs one variant; throws KernelError (Halide's message, or the PTX rewrite's, naming the kernel).
void run_gemm(const KernelVariant &v, const GemmWorkload &w, GemmTensors &t);

// Float64 reference of every output (small workloads) or of max_points sampled ones, plus a scan of the
// whole output for unwritten (NaN) values. Tolerance: runtime/reference.h with L = K.
Comparison check_gemm(const GemmWorkload &w, GemmTensors &t, size_t max_points, std::mt19937_64 &rng);

// Tensor machine: 2 M N K flops on the tensor cores; compulsory bytes A, B and C once (2 bytes each) and the
// f32 bias.
double gemm_flops(const GemmWorkload &w);
double gemm_bytes(const GemmWorkload &w);

}  // namespace blockfuse
