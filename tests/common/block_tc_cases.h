// Layer by layer on the tensor cores (layer_by_layer_tc: the dense layers as implicit GEMMs of mma.sync
// fragments), every device: the block table's shapes (odd sizes, 1x1 images, stride 2 on odd sizes, SE, LayerNorm,
// grouped and depthwise layers beside the GEMMs, stages), f16 and bf16 in turn.
#pragma once
#include "runtime/dispatch.h"
#include "schedules/block_knobs.h"
#include "tests/common/block_cases.h"
#include "tests/common/check_kernel.h"
#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

namespace blockfuse::test {

inline std::vector<std::string> block_tc_shapes() {
    std::vector<std::string> out;
    for (const auto &key : block_shapes()) out.push_back(key + (out.size() % 2 ? ",dtype=bf16" : ",dtype=f16"));
    return out;
}

// The strategy's kernel for a shape on a device: the heuristic's tilings (generated into the kernel cache).
inline const KernelVariant *block_tc_kernel(const std::string &key, Device d) {
    return dispatch(key, kLayerByLayerTc, d, nullptr).variant;
}

inline void check_block_tc_shapes(Device d) {
    install_halide_error_handler();
    const uint64_t seed = std::random_device{}();
    for (const auto &key : block_tc_shapes()) {
        const KernelVariant *v = block_tc_kernel(key, d);
        INFO(v->name << " [" << v->knob_summary() << "] on " << key << ", seed " << seed);
        std::mt19937_64 rng(seed);
        const Comparison c = check_kernel(*v, key, rng);
        INFO(c.summary());
        REQUIRE(c.ok());
    }
}

}  // namespace blockfuse::test
