// The convolutions the tensor-core strategy (runtime/conv2d_tc.h) is tested on, every device: 1x1 and k x k
// windows, strides, dilation, asymmetric padding, channel counts not a multiple of 8 (the stem's 3), output
// channels and pixel counts that break the tiles, one whole-tile shape (the unguarded path), every epilogue, and
// grouped ones of every window form.
#pragma once
#include "runtime/conv2d_tc.h"
#include "runtime/dispatch.h"
#include "tests/common/check_kernel.h"
#include "tests/common/conv2d_cases.h"
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

namespace blockfuse::test {

inline std::vector<std::string> conv2d_tc_shapes() {
    return {
        "conv2d:n=2,c=16,h=5,w=7,k=24,r=1,s=1,dtype=f16",           // pointwise, M = 70
        "conv2d:n=2,c=32,h=8,w=8,k=128,r=1,s=1,bias=1,dtype=bf16",  // whole tiles
        "conv2d:n=1,c=8,h=9,w=7,k=40,r=3,s=3,pad=1,bias=1,act=relu,dtype=f16",
        "conv2d:n=2,c=16,h=11,w=10,k=16,r=3,s=3,stride=2,pad=1,act=silu,dtype=bf16",
        "conv2d:n=1,c=16,h=13,w=13,k=8,r=3,s=3,pad=2,dil=2,bias=1,act=gelu,dtype=f16",       // dilated (ASPP)
        "conv2d:n=1,c=3,h=15,w=17,k=16,r=3,s=3,stride=2,pad=1,bias=1,act=relu6,dtype=bf16",  // the stem's C = 3
        // 4 taps to each 8 of the reduction (C = 2), the last group a quarter full; C = 20: each tap padded to 24
        "conv2d:n=2,c=2,h=6,w=7,k=24,r=3,s=3,stride=2,pad=1,act=relu,dtype=f16",
        "conv2d:n=1,c=20,h=5,w=6,k=16,r=3,s=3,pad=1,dtype=bf16",
        "conv2d:n=1,c=8,h=8,w=9,k=9,r=5,s=5,pad_t=2,pad_b=1,pad_l=1,pad_r=2,act=sigmoid,dtype=f16",
        // Grouped (generators/conv_windows.h): ConvFirst's group width 8 (windows of one group, whole vectors); 4
        // input channels a group (half a vector, zero-padded); 4 output channels a group (two groups a window, the
        // last window half past the 12 channels); 16 a group (a window of two n-tiles), whole tiles; 2 a group over
        // 3 input channels (12 a window, padded to 16), dilated.
        "conv2d:n=2,c=32,h=7,w=9,k=32,r=3,s=3,pad=1,groups=4,bias=1,act=relu,dtype=f16",
        "conv2d:n=1,c=16,h=9,w=7,k=32,r=3,s=3,stride=2,pad=1,groups=4,dtype=bf16",
        "conv2d:n=1,c=12,h=6,w=5,k=12,r=3,s=3,pad=1,groups=3,act=silu,dtype=f16",
        "conv2d:n=2,c=32,h=8,w=8,k=32,r=1,s=1,groups=2,bias=1,dtype=bf16",
        "conv2d:n=1,c=9,h=7,w=6,k=6,r=3,s=3,pad=2,dil=2,groups=3,act=relu6,dtype=f16",
    };
}

// The strategy's kernel for a shape on a device: the heuristic's tiling (generated into the kernel cache).
inline const KernelVariant *conv2d_tc_kernel(const std::string &key, Device d) {
    return dispatch(key, kTensorCores, d, nullptr).variant;
}

// One kernel on its shape against the float64 reference (fresh data, a NaN-poisoned output).
inline Comparison run_conv2d_tc_case(const KernelVariant &v, const std::string &key, uint64_t seed) {
    install_halide_error_handler();
    std::mt19937_64 rng(seed);
    return check_kernel(v, key, rng);
}

inline void check_conv2d_tc_shapes(Device d) {
    const uint64_t seed = std::random_device{}();
    for (const auto &key : conv2d_tc_shapes()) {
        const KernelVariant *v = conv2d_tc_kernel(key, d);
        INFO(v->name << " [" << v->knob_summary() << "] on " << key << ", seed " << seed);
        const Comparison c = run_conv2d_tc_case(*v, key, seed);
        INFO(c.summary());
        REQUIRE(c.ok());
    }
}

}  // namespace blockfuse::test
