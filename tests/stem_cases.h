// Stem test table (3x3 s2 conv 3->64 + ReLU, 3x3 s2 max pool): both strategies against the
// float64 reference on odd sizes, 1x1 and 2x3 images, and sizes whose pool tiles have partial halos.
#pragma once
#include "runtime/stem.h"
#include "tests/conv2d_cases.h"

namespace blockfuse::test {

inline void check_all_stem_variants(Device device, const std::vector<DType> &dtypes) {
    install_halide_error_handler();
    uint64_t seed = std::random_device{}();
    std::mt19937_64 rng(seed);
    INFO("seed " << seed);
    std::set<std::string> ran;
    for (DType d : dtypes)
        for (const char *key : {"stem:n=2,h=13,w=11,c=3,k=64", "stem:n=1,h=1,w=1,c=3,k=64", "stem:n=1,h=2,w=3,c=3,k=64",
                                "stem:n=1,h=37,w=29,c=3,k=64", "stem:n=3,h=16,w=16,c=3,k=64"}) {
            StemWorkload w = parse_stem(key);
            w.dtype = d;
            for (const KernelVariant *v : stem_candidates(w, device)) {
                INFO(v->name << " on " << to_key(w));
                StemTensors t = make_stem_tensors(w);
                randomize(t, w, rng);
                run_stem(*v, w, t);
                Comparison c = check_stem(w, t);
                INFO(c.summary());
                CHECK(c.unwritten == 0);
                CHECK(c.violations == 0);
                ran.insert(v->name);
            }
        }
    require_all_exercised("stem", device, dtypes, ran);
}

}  // namespace blockfuse::test
