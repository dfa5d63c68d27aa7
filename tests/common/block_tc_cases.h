// Layer by layer on the tensor cores (layer_by_layer_tc: the dense layers as implicit GEMMs of mma.sync
// fragments), every device: the block table's shapes (odd sizes, 1x1 images, stride 2 on odd sizes, SE, LayerNorm,
// grouped and depthwise layers beside the GEMMs, stages), f16 and bf16 in turn.
#pragma once
#include "runtime/dispatch.h"
#include "schedules/block_knobs.h"
#include "tests/common/block_cases.h"
#include "tests/common/check_kernel.h"
#include <catch2/catch.hpp>
#include <map>
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

// The opt-in shared memory per block of the smallest GPU the tensor-core kernels are for (sm_80's 163 KB, the CUDA C
// Programming Guide's technical specifications): a random fused_tc tiling is shrunk under it (the chunk to 16, then
// the tile, the warp's rows, the warps; a step that would break the tiling's other rules is not taken), so that every
// drawn case launches on any of them; the launch check that refuses the rest has its own tests.
constexpr long long kFusedTcTestSharedBytes = 163 * 1024;
inline void fit_fused_tc_shared(const BlockSpec &spec, std::map<std::string, int> &knobs) {
    auto bytes = [&] { return fused_tc_shared_bytes(spec, block_knobs_from(knobs)); };
    const std::vector<std::pair<std::string, int>> order{
        {"chunk", 16}, {"tile_y", 1}, {"tile_x", 1}, {"tc_warp_m", 16}, {"tc_warps", 1}};
    for (const auto &[name, least] : order)
        while (knobs.count(name) && knobs[name] > least && bytes() > kFusedTcTestSharedBytes) {
            const int before = knobs[name];
            knobs[name] = name == "chunk" ? least : std::max(least, before / 2);
            if (!fused_tc_error(spec, block_knobs_from(knobs)).empty()) {
                knobs[name] = before;
                break;
            }
        }
}

// Every random case a fused_tc case generator `cases(seed, count)` draws after its chosen ones, over many seeds (and
// the one that once drew a 311 KB thread block): a valid tiling within kFusedTcTestSharedBytes.
template <class Cases>
void require_fused_tc_cases_fit(Cases cases) {
    constexpr int count = 6;
    std::vector<uint64_t> seeds{20261207};
    for (uint64_t s = 1; s <= 400; ++s) seeds.push_back(s);
    for (uint64_t seed : seeds) {
        const std::vector<KnobCase> all = cases(seed, count);
        for (auto c = all.end() - count; c != all.end(); ++c) {
            const BlockSpec spec = parse_block(c->key).spec();
            const BlockKnobs kn = block_knobs_from(c->knobs);
            INFO("seed " << seed << ": " << c->key);
            REQUIRE(fused_tc_error(spec, kn).empty());
            REQUIRE(fused_tc_shared_bytes(spec, kn) <= kFusedTcTestSharedBytes);
        }
    }
}

}  // namespace blockfuse::test
