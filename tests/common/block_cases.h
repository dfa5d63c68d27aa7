// Fused-block test table: every strategy of every block against the float64 reference, on
// shapes with odd sizes, 1x1 images, stride 2 on odd sizes, and hidden widths that the chunk
// (8) does not divide (30, 16+, 48). Every block variant of a device must run at least once.
#pragma once
#include "runtime/block.h"
#include "tests/common/conv2d_cases.h"
#include <catch2/catch.hpp>
#include <random>
#include <set>

namespace blockfuse::test {

inline std::vector<std::string> block_shapes() {
    return {
        "mbconv:n=2,c=10,h=9,w=7,e=3,k=3,stride=1,act=relu6",
        "mbconv:n=1,c=10,h=1,w=1,e=3,k=3,stride=1,act=relu6",
        "mbconv:n=1,c=10,h=13,w=11,e=3,k=3,stride=1,act=relu6",
        "mbconv:n=1,c=8,h=9,w=11,e=2,k=5,stride=2,act=silu",
        "mbconv:n=2,c=8,h=7,w=7,e=2,k=5,stride=2,act=silu",
        "mbconv:n=1,c=8,h=17,w=19,e=2,k=5,stride=2,act=silu",  // outputs of at least one flat 1x1 tile (7)
        "fused_mbconv:n=2,c=8,h=7,w=9,e=2,k=3,stride=1,act=silu",
        "fused_mbconv:n=1,c=8,h=1,w=1,e=2,k=3,stride=1,act=silu",
        "ffn:n=1,c=12,h=5,w=7,e=4,act=relu",
        "ffn:n=3,c=12,h=1,w=9,e=4,act=relu",
        "convfirst:n=1,c=16,h=9,w=7,e=2,k=3,stride=1,act=relu",
        "convfirst:n=2,c=16,h=5,w=5,e=2,k=3,stride=1,act=relu",
        "convnext:n=1,c=16,h=9,w=11,e=4,k=7,stride=1,act=gelu",
        "convnext:n=2,c=16,h=1,w=1,e=4,k=7,stride=1,act=gelu",
        "convnext:n=1,c=16,h=15,w=13,e=4,k=7,stride=1,act=gelu",
        "convnext:n=1,c=16,h=9,w=7,e=4,k=7,stride=1,act=gelu_erf",  // torchvision's exact GELU
        "mbconv:n=1,c=24,h=11,w=9,e=6,k=3,stride=1,act=relu6",
        "mbconv:n=2,c=24,h=7,w=13,e=6,k=3,stride=1,act=relu6",
        // The blocks suite's channel counts (CUDA f16 kernels only): odd sizes, tiles that do
        // not divide them.
        "mbconv:n=1,c=16,h=9,w=7,e=6,k=3,stride=1,act=relu6",
        "mbconv:n=2,c=40,h=7,w=5,e=6,k=5,stride=1,act=relu6",
        "mbconv:n=1,c=80,h=5,w=9,e=6,k=3,stride=1,act=relu6",
        "fused_mbconv:n=1,c=48,h=7,w=5,e=4,k=3,stride=1,act=silu",
        "convfirst:n=1,c=64,h=5,w=7,e=4,k=3,stride=1,act=relu",
        "convfirst:n=1,c=128,h=5,w=3,e=4,k=3,stride=1,act=relu",
        "convfirst:n=2,c=256,h=3,w=5,e=4,k=3,stride=1,act=relu",
        "ffn:n=1,c=256,h=3,w=5,e=4,act=relu",
        // widths of at least one flat tile (7), so the "sf"/"sg" 1x1 mappings run too
        "fused_mbconv:n=1,c=48,h=3,w=9,e=4,k=3,stride=1,act=silu",
        "convfirst:n=1,c=128,h=2,w=9,e=4,k=3,stride=1,act=relu",
        "convfirst:n=1,c=256,h=3,w=7,e=4,k=3,stride=1,act=relu",
        "ffn:n=1,c=256,h=2,w=11,e=4,act=relu",
        "convnext:n=1,c=96,h=9,w=7,e=4,k=7,stride=1,act=gelu",
        // several tiles of the fused MBConv mappings (32x8, 16x16, 14x14, 14x7), the last ones partial
        "mbconv:n=1,c=16,h=19,w=35,e=6,k=3,stride=1,act=relu6",
        "mbconv:n=1,c=24,h=19,w=35,e=6,k=3,stride=1,act=relu6",
        "mbconv:n=1,c=40,h=17,w=15,e=6,k=5,stride=1,act=relu6",
        "mbconv:n=1,c=80,h=9,w=15,e=6,k=3,stride=1,act=relu6",
        // Squeeze-Excitation (the mean over odd sizes and a 1x1 image; tiles the image does not fill).
        "mbconv:n=2,c=8,h=9,w=7,e=2,k=3,stride=1,se=1,act=silu",
        "mbconv:n=1,c=8,h=1,w=1,e=2,k=3,stride=1,se=1,act=silu",
        "mbconv:n=1,c=8,h=19,w=11,e=2,k=3,stride=1,se=1,act=silu",
        "mbconv:n=1,c=24,h=11,w=9,e=6,k=3,stride=1,se=1,act=relu6",
        // Stages (each block's input the previous one's output): every strategy, odd sizes,
        // tiles the image does not fill, 1x1 images.
        "mbconv:n=2,c=10,h=9,w=7,e=3,k=3,stride=1,blocks=3,act=relu6",
        "mbconv:n=1,c=10,h=1,w=1,e=3,k=3,stride=1,blocks=3,act=relu6",
        "mbconv:n=1,c=10,h=19,w=13,e=3,k=3,stride=1,blocks=3,act=relu6",
        "convfirst:n=1,c=16,h=9,w=11,e=2,k=3,stride=1,blocks=2,act=relu",
        "convfirst:n=2,c=16,h=3,w=2,e=2,k=3,stride=1,blocks=2,act=relu",
        "mbconv:n=1,c=24,h=11,w=9,e=6,k=3,stride=1,blocks=3,act=relu6",
    };
}

// stages = false: the single blocks of the table; true: the stages (blocks > 1), in every strategy.
inline void check_all_block_variants(Device device, const std::vector<DType> &dtypes, bool stages = false,
                                     bool picks = false) {
    std::vector<BlockWorkload> shapes;
    for (const auto &key : block_shapes())
        if (BlockWorkload w = parse_block(key); (w.blocks > 1) == stages) shapes.push_back(w);
    check_every_variant("block", device, dtypes, shapes, picks,
                        [stages](const KernelVariant &v) { return (v.knob("blocks", 1) > 1) == stages; });
}

}  // namespace blockfuse::test
