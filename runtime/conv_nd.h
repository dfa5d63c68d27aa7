// Conv1dFwd and Conv3dFwd on the conv2d kernels (generators/conv2d_generator.cpp), channels innermost
// as conv2d's (NLC, NDHWC: PyTorch's channels_last order):
//   conv1d:n=1,c=80,l=3000,k=1280,kernel=3,stride=1,pad=0,groups=1,dtype=f16   [dil, bias=1]
//   conv3d:n=1,c=3,d=16,h=112,w=112,k=64,kernel=3,stride=1,pad=1,groups=1,dtype=f16
//     (kernel, stride, pad, dil symmetric or per axis: kernel_d/kernel_h/kernel_w ...)
// A conv1d is the conv2d of height 1 (its key maps onto one; data, kernels and checks are conv2d's). A
// conv3d is the conv2d over (W, H) whose input channels are (tap of the depth kernel, channel) and whose
// batch is (output depth, batch): the conv2d kernel reads its input through a decoding of that channel
// and batch (depth_* generator params), so its reduction covers C/groups x T x R x S, and the weights go
// to it as (k, t * C/groups + cg, kx, ky), packed from (k, cg, kx, ky, kz) at load time. A dense f16/bf16
// conv3d also runs on the tensor cores (strategy tensor_cores): the implicit GEMM of runtime/conv2d_tc.h with
// the depth taps in its reduction, its weights laid out taps (kz, ky, kx) x channels at load time.
#pragma once
#include "runtime/conv2d.h"
#include "runtime/conv2d_tc.h"
#include "runtime/op.h"
#include <array>
#include <memory>
#include <string>

namespace blockfuse {

struct Conv1dWorkload {
    int n = 0, c = 0, l = 0, k = 0, kernel = 0, stride = 1, pad = 0, dil = 1, groups = 1;
    bool bias = false;
    DType dtype = DType::f32;
    Conv2dWorkload as_conv2d() const;  // height 1
};

struct Conv3dWorkload {
    int n = 0, c = 0, k = 0, groups = 1;
    std::array<int, 3> in{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dil{1, 1, 1};  // (d, h, w)
    bool bias = false;
    DType dtype = DType::f32;
    int out(int axis) const;
    // The conv2d the CUDA-core kernel computes: channels T*C, batch out_d * N, the (h, w) window.
    Conv2dWorkload as_conv2d() const;
    // The tensor-core kernel's view (runtime/conv2d_tc.h): the conv2d of one depth plane (batch N, channels C,
    // the (h, w) window) and the depth axis.
    Conv2dWorkload plane() const;
    TcDepth depth() const;
    // Whether the tensor-core kernel serves it: its plane's conditions, and not a single plane padded in depth (its
    // generator takes one plane for a plain conv2d: the padding's output planes came out wrong).
    bool on_tensor_cores() const;
};

bool is_conv1d_key(const std::string &key);
bool is_conv3d_key(const std::string &key);
Conv1dWorkload parse_conv1d(const std::string &key);  // throws WorkloadError naming the field and the value
Conv3dWorkload parse_conv3d(const std::string &key);
std::string to_key(const Conv1dWorkload &w);
std::string to_key(const Conv3dWorkload &w);

struct Conv3dTensors : Conv2dTensors {  // input (c, x, y, z + D n), output (k, ox, oy, oz + OD n), weights packed
    Tensor weights5;                    // (k, cg, kx, ky, kz): what the reference reads
};                                      // (weights_tc: the tensor-core layout of weights5, where it applies)
Conv3dTensors make_conv3d_tensors(const Conv3dWorkload &w);
void randomize(Conv3dTensors &t, const Conv3dWorkload &w, std::mt19937_64 &rng);
void pack_conv3d_weights(Conv3dTensors &t, const Conv3dWorkload &w);  // weights5 -> weights (f32, weights_tc)
// Float64 reference of one output (k, ox, oy, oz, n) from the input and weights5; *scale = |bias| + sum |x w|.
double conv3d_reference_point(const Conv3dWorkload &w, const std::vector<double> &in, const std::vector<double> &wt5,
                              const std::vector<double> &bias, int k, int ox, int oy, int oz, int n, double *scale);

std::unique_ptr<Op> conv1d_op(const std::string &key);
std::unique_ptr<Op> conv3d_op(const std::string &key);

}  // namespace blockfuse
