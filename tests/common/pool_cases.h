// Pooling workloads for the tests: the suite's workloads shrunk to sizes the float64 reference and a
// 2-core CI run check in seconds (every op and parameter combination kept, and what decides the edge
// windows: the input size modulo eight strides, so ceil-mode's last window and the vector alignment stay
// as in the suite), and random keys of every pooling family that break naive code (odd sizes, 1-wide
// inputs, stride > kernel, ceil-mode edges, padding of half the kernel, dilation, non-divisible adaptive
// sizes, ragged sequences with short tails). Drawn from one seed so that a failure reproduces.
#pragma once
#include "runtime/pool.h"
#include "tests/common/random_shapes.h"
#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace blockfuse::test {

inline std::string shrink_pool_key(const std::string &key) {
    if (is_mean_pooling_key(key)) {
        MeanPoolingWorkload w = parse_mean_pooling(key);
        w.b = std::min(w.b, 2), w.h = std::min(w.h, 2), w.d = std::min(w.d, 16);
        if (w.ragged()) {
            int s = 0;
            for (int &l : w.seq_lens) s += l = l % w.chunk + w.chunk;  // each sequence: one whole chunk and its tail
            w.s = s;
        } else {
            w.s = 2 * w.chunk + w.s % w.chunk;
        }
        return to_key(w);
    }
    PoolWorkload w = parse_pool(key);
    w.n = std::min(w.n, 2), w.c = std::min(w.c, 3);
    for (int a = 0; a < w.rank; ++a) {
        if (w.in[a] <= 24) continue;
        if (w.adaptive) {
            w.in[a] = 2 * w.out_size[a] + w.in[a] % w.out_size[a];
        } else {
            const int period = 8 * w.stride[a], full = w.in[a];
            w.in[a] = full % period + period;
            while (w.out(a) < 2 && w.in[a] + period <= full) w.in[a] += period;
            if (w.out(a) < 1) w.in[a] = full;  // a window wider than the shrunk input: keep the size
        }
    }
    return to_key(w);
}

// The same workload in f32 (PoCL's CPU device has no fp16 / bf16).
inline std::string as_f32(const std::string &key) {
    if (is_mean_pooling_key(key)) {
        MeanPoolingWorkload w = parse_mean_pooling(key);
        w.dtype = w.out_dtype = DType::f32;
        return to_key(w);
    }
    PoolWorkload w = parse_pool(key);
    w.dtype = DType::f32;
    return to_key(w);
}

// family: avgpool1d ... adaptive_maxpool2d, mean_pooling.
inline std::string random_pool_key(std::mt19937_64 &rng, const std::string &family,
                                   const std::vector<std::string> &dtypes) {
    for (;;) {  // draw until valid (an output size PyTorch would refuse is redrawn)
        const std::string dtype = one_of(rng, dtypes);
        std::string key;
        if (family == "mean_pooling") {
            const int chunk = one_of(rng, std::vector<int>{1, 3, 8, 16});
            key = "mean_pooling:b=" + std::to_string(uniform(rng, 1, 2)) + ",h=" + std::to_string(uniform(rng, 1, 3)) +
                  ",d=" + one_of<std::string>(rng, {"1", "5", "8", "16", "24"}) + ",chunk=" + std::to_string(chunk);
            int s = 0;
            std::string lens;
            const int sequences = uniform(rng, 0, 3);  // 0: uniform
            for (int i = 0; i < sequences; ++i) {
                const int l = uniform(rng, 1, 3 * chunk + 2);
                lens += (i ? "+" : "") + std::to_string(l);
                s += l;
            }
            if (!sequences) s = uniform(rng, 1, 4 * chunk + 3);
            key += ",s=" + std::to_string(s) + (sequences ? ",seq_lens=" + lens : "") + ",dtype=" + dtype +
                   ",out_dtype=" + (dtype == "f32" ? "f32" : one_of<std::string>(rng, {dtype, "f32"}));
        } else {
            const bool adaptive = family.rfind("adaptive", 0) == 0, avg = family.find("avg") != std::string::npos;
            const int rank = family.find("1d") != std::string::npos   ? 1
                             : family.find("3d") != std::string::npos ? 3
                                                                      : 2;
            const char *names[3][3] = {{"l"}, {"h", "w"}, {"d", "h", "w"}};
            key = family + ":";
            if (uniform(rng, 0, 4)) key += "n=" + std::to_string(uniform(rng, 1, 2)) + ",";  // else unbatched
            key += "c=" + std::to_string(uniform(rng, 1, 3));
            for (int a = 0; a < rank; ++a)
                key += std::string(",") + names[rank - 1][a] + "=" +
                       std::to_string(uniform(rng, 0, 5) ? uniform(rng, 1,
                                                                   rank == 1   ? 40
                                                                   : rank == 2 ? 19
                                                                               : 9)
                                                         : 1);
            auto axis = [&](const std::string &field, int lo, int hi) {
                if (rank == 1 || uniform(rng, 0, 2)) return "," + field + "=" + std::to_string(uniform(rng, lo, hi));
                std::string s;
                for (int a = 0; a < rank; ++a)
                    s += "," + field + "_" + names[rank - 1][a] + "=" + std::to_string(uniform(rng, lo, hi));
                return s;
            };
            if (adaptive) {
                key += axis("out", 1, 7);
            } else {
                const int k = uniform(rng, 1, 5);
                key += ",kernel=" + std::to_string(k) + axis("stride", 1, 3) +
                       ",pad=" + std::to_string(uniform(rng, 0, k / 2));
                if (!avg && uniform(rng, 0, 2) == 0) key += axis("dil", 1, 3);
                if (uniform(rng, 0, 1)) key += ",ceil=1";
                if (avg && uniform(rng, 0, 1)) key += ",count_include_pad=0";
                if (avg && rank > 1 && uniform(rng, 0, 3) == 0) key += ",divisor=" + std::to_string(uniform(rng, 1, 9));
            }
            if (!avg && uniform(rng, 0, 1)) key += ",return_indices=1";
            key += ",dtype=" + dtype;
        }
        try {
            return canonical_key(key);
        } catch (const WorkloadError &) {}
    }
}

inline const std::vector<std::string> &pool_families() {
    static const std::vector<std::string> f{"avgpool1d",          "avgpool2d",          "avgpool3d",
                                            "maxpool1d",          "maxpool2d",          "maxpool3d",
                                            "adaptive_avgpool2d", "adaptive_maxpool2d", "mean_pooling"};
    return f;
}

}  // namespace blockfuse::test
