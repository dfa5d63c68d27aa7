// Random workload keys for the property tests: shapes that break naive code (odd sizes, 1x1 images,
// channel counts no tile divides, any expansion, k = 3/5/7, stride 2, dilation, asymmetric padding,
// Squeeze-Excitation, stages, N=1), every family. Drawn from one seed so that a failure reproduces.
#pragma once
#include "runtime/dispatch.h"
#include <random>
#include <string>
#include <vector>

namespace blockfuse::test {

inline int uniform(std::mt19937_64 &rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
template <class T>
const T &one_of(std::mt19937_64 &rng, const std::vector<T> &v) {
    return v[size_t(uniform(rng, 0, int(v.size()) - 1))];
}

inline std::string random_conv2d_key(std::mt19937_64 &rng, const std::vector<std::string> &dtypes) {
    for (;;) {  // draw until the key is valid (a window larger than the padded image is not)
        const std::string kind = one_of<std::string>(rng, {"general", "pointwise", "depthwise", "grouped"});
        int c = uniform(rng, 1, 40), k = uniform(rng, 1, 40), groups = 1;
        int r = one_of(rng, std::vector<int>{1, 3, 5}),
            s = uniform(rng, 0, 3) ? r : one_of(rng, std::vector<int>{1, 3});
        if (kind == "pointwise") r = s = 1;
        if (kind == "depthwise") {
            groups = c = uniform(rng, 2, 48);
            k = c * one_of(rng, std::vector<int>{1, 1, 1, 2});
            r = s = one_of(rng, std::vector<int>{3, 5, 7});
        }
        if (kind == "grouped") {
            groups = one_of(rng, std::vector<int>{2, 3, 4});
            c = groups * uniform(rng, 1, 8);
            k = groups * uniform(rng, 1, 8);
            if (r == 1) r = s = 3;
        }
        const int stride = uniform(rng, 0, 2) ? 1 : 2, dil = kind != "pointwise" && uniform(rng, 0, 4) == 0 ? 2 : 1;
        std::string key = "conv2d:n=" + std::to_string(uniform(rng, 1, 2)) + ",c=" + std::to_string(c) +
                          ",h=" + std::to_string(uniform(rng, 1, 13)) + ",w=" + std::to_string(uniform(rng, 1, 13)) +
                          ",k=" + std::to_string(k) + ",r=" + std::to_string(r) + ",s=" + std::to_string(s) +
                          ",stride=" + std::to_string(stride) + ",dil=" + std::to_string(dil);
        if (uniform(rng, 0, 3) == 0) {
            key += ",pad_t=" + std::to_string(uniform(rng, 0, 2)) + ",pad_b=" + std::to_string(uniform(rng, 0, 2)) +
                   ",pad_l=" + std::to_string(uniform(rng, 0, 2)) + ",pad_r=" + std::to_string(uniform(rng, 0, 2));
        } else {
            key += ",pad=" + std::to_string(dil * (r / 2));
        }
        key += ",groups=" + std::to_string(groups) + ",bias=" + std::to_string(uniform(rng, 0, 1)) +
               ",act=" + one_of<std::string>(rng, {"none", "relu", "relu6", "silu", "gelu", "sigmoid"}) +
               ",dtype=" + one_of(rng, dtypes);
        try {
            return canonical_key(key);
        } catch (const WorkloadError &) {}
    }
}

// family: mbconv | fused_mbconv | ffn | convfirst | convnext; stage: a stage of 2-3 blocks (stride 1).
inline std::string random_block_key(std::mt19937_64 &rng, const std::string &family, bool stage,
                                    const std::vector<std::string> &dtypes) {
    for (;;) {
        const int c = family == "convfirst" ? 8 * uniform(rng, 1, 5) : uniform(rng, 1, 40);
        std::string key = family + ":n=" + std::to_string(uniform(rng, 1, 2)) + ",c=" + std::to_string(c) +
                          ",h=" + std::to_string(uniform(rng, 1, 15)) + ",w=" + std::to_string(uniform(rng, 1, 15)) +
                          ",e=" + std::to_string(uniform(rng, 1, 6));
        if (family != "ffn")
            key += ",k=" + std::to_string(one_of(rng, std::vector<int>{3, 5, 7})) +
                   ",stride=" + std::to_string(stage || uniform(rng, 0, 2) ? 1 : 2);
        if (stage) key += ",blocks=" + std::to_string(uniform(rng, 2, 3));
        if (family == "mbconv" && !stage && uniform(rng, 0, 2) == 0) key += ",se=1";
        key +=
            ",act=" + (family == "convfirst" ? std::string("relu")
                                             : one_of<std::string>(rng, {"relu", "relu6", "silu", "gelu", "sigmoid"}));
        key += ",dtype=" + one_of(rng, dtypes);
        try {
            return canonical_key(key);
        } catch (const WorkloadError &) {}
    }
}

inline std::string random_stem_key(std::mt19937_64 &rng, const std::vector<std::string> &dtypes) {
    return canonical_key("stem:n=" + std::to_string(uniform(rng, 1, 2)) + ",h=" + std::to_string(uniform(rng, 1, 30)) +
                         ",w=" + std::to_string(uniform(rng, 1, 30)) + ",c=" + std::to_string(uniform(rng, 1, 4)) +
                         ",k=" + std::to_string(one_of(rng, std::vector<int>{8, 12, 24, 64})) +
                         ",dtype=" + one_of(rng, dtypes));
}

}  // namespace blockfuse::test
