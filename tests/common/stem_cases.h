// Stem test table (3x3 s2 conv 3->64 + ReLU, 3x3 s2 max pool): both strategies against the
// float64 reference on odd sizes, 1x1 and 2x3 images, and sizes whose pool tiles have partial halos.
#pragma once
#include "runtime/stem.h"
#include "tests/common/conv2d_cases.h"

namespace blockfuse::test {

inline void check_all_stem_variants(Device device, const std::vector<DType> &dtypes, bool picks = false) {
    std::vector<StemWorkload> shapes;
    for (const char *key : {"stem:n=2,h=13,w=11,c=3,k=64", "stem:n=1,h=1,w=1,c=3,k=64", "stem:n=1,h=2,w=3,c=3,k=64",
                            "stem:n=1,h=37,w=29,c=3,k=64", "stem:n=3,h=16,w=16,c=3,k=64"})
        shapes.push_back(parse_stem(key));
    check_every_variant("stem", device, dtypes, shapes, picks);
}

}  // namespace blockfuse::test
