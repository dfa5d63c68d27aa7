// The conv2d shape table every device's test walks, and the check of one variant on one shape.
// Shapes are chosen to break naive code: odd sizes, C=3, K=1, 1x1 and 7x13 images, stride 2 on
// odd sizes, dilation 2 and 12, groups = C (with channel multiplier) and 32, group width 8,
// asymmetric padding, non-square kernels, channel counts not divisible by the vector width.
#pragma once
#include <algorithm>
#include <functional>
#include "runtime/check.h"
#include "runtime/conv2d.h"
#include "runtime/dispatch.h"
#include "tests/common/check_kernel.h"
#include <catch2/catch.hpp>
#include <random>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace blockfuse::test {

inline std::vector<std::string> conv2d_shapes() {
    return {
        // full
        "conv2d:n=1,c=3,h=7,w=13,k=1,r=3,s=3,stride=1,pad=1,groups=1,act=relu",
        "conv2d:n=2,c=5,h=9,w=11,k=7,r=3,s=3,stride=2,pad=1,groups=1,bias=1,act=silu",
        "conv2d:n=1,c=4,h=1,w=1,k=6,r=3,s=3,stride=1,pad=1,groups=1,bias=1",
        "conv2d:n=1,c=6,h=15,w=17,k=10,r=3,s=3,stride=1,pad=2,dil=2,groups=1,act=gelu",
        "conv2d:n=1,c=8,h=29,w=27,k=9,r=3,s=3,stride=1,pad=12,dil=12,groups=1,bias=1,act=relu6",
        "conv2d:n=1,c=7,h=11,w=9,k=5,r=5,s=5,stride=2,pad=2,groups=1,act=sigmoid",
        "conv2d:n=1,c=5,h=8,w=10,k=4,r=2,s=3,stride=1,pad_t=0,pad_b=2,pad_l=1,pad_r=0,groups=1,bias=1",
        "conv2d:n=1,c=6,h=9,w=7,k=6,r=3,s=3,stride_h=2,stride_w=1,pad=1,dil_h=1,dil_w=2,groups=1",
        // 3x3 stride 1 with C and K multiples of 8 (the staged-window variants): K below a block's
        // 64 channels, width not a multiple of the tiles, odd height, a 1x1 image, asymmetric padding
        "conv2d:n=2,c=16,h=9,w=13,k=24,r=3,s=3,stride=1,pad=1,groups=1,bias=1,act=relu",
        "conv2d:n=1,c=40,h=1,w=1,k=8,r=3,s=3,stride=1,pad=1,groups=1",
        "conv2d:n=1,c=8,h=7,w=6,k=16,r=3,s=3,stride=1,pad_t=0,pad_b=2,pad_l=2,pad_r=0,groups=1,act=silu",
        "conv2d:n=1,c=16,h=11,w=9,k=24,r=3,s=3,stride=2,pad=1,groups=1,bias=1",
        "conv2d:n=2,c=8,h=9,w=13,k=16,r=5,s=5,stride=2,pad=2,groups=1,act=relu",
        // grouped
        "conv2d:n=1,c=64,h=9,w=9,k=64,r=3,s=3,stride=1,pad=1,groups=32,bias=1,act=relu",
        "conv2d:n=2,c=16,h=7,w=13,k=24,r=3,s=3,stride=1,pad=1,groups=2,act=silu",
        "conv2d:n=1,c=24,h=9,w=11,k=12,r=3,s=3,stride=2,pad=1,groups=3",
        // pointwise
        "conv2d:n=1,c=3,h=7,w=13,k=1,r=1,s=1,stride=1,pad=0,groups=1",
        "conv2d:n=2,c=37,h=5,w=6,k=19,r=1,s=1,stride=1,pad=0,groups=1,bias=1,act=relu6",
        "conv2d:n=1,c=16,h=1,w=1,k=32,r=1,s=1,stride=1,pad=0,groups=1,act=gelu",
        "conv2d:n=1,c=8,h=9,w=9,k=16,r=1,s=1,stride=2,pad=0,groups=1,bias=1",
        // depthwise (groups = C), with multiplier, static-kernel shapes for the tuned variants
        "conv2d:n=1,c=9,h=7,w=13,k=9,r=3,s=3,stride=1,pad=1,groups=9,act=relu",
        "conv2d:n=2,c=6,h=5,w=7,k=12,r=3,s=3,stride=1,pad=1,groups=6,bias=1",
        "conv2d:n=1,c=10,h=11,w=9,k=10,r=5,s=5,stride=2,pad=2,groups=10,act=silu",
        "conv2d:n=1,c=12,h=13,w=13,k=12,r=3,s=3,stride=1,pad=2,dil=2,groups=12",
        "conv2d:n=1,c=8,h=1,w=1,k=8,r=3,s=3,stride=1,pad=1,groups=8,bias=1",
        "conv2d:n=1,c=7,h=9,w=11,k=7,r=3,s=3,stride=1,pad_t=1,pad_b=0,pad_l=0,pad_r=1,groups=7",
        "conv2d:n=2,c=144,h=9,w=11,k=144,r=3,s=3,stride=1,pad=1,groups=144,act=relu",
        "conv2d:n=1,c=240,h=7,w=9,k=240,r=5,s=5,stride=1,pad=2,groups=240,bias=1",
        "conv2d:n=1,c=150,h=7,w=7,k=150,r=3,s=3,stride=2,pad=1,groups=150",
        "conv2d:n=1,c=35,h=6,w=5,k=35,r=5,s=5,stride=1,pad=2,groups=35,act=gelu",
    };
}

// The kernels a shape-table test runs on one workload: every prebuilt named variant that serves it,
// and with `picks` the dispatcher's kernel of each strategy (generated where no named variant is the
// default; the GPU tests, whose kernels come from a cache filled where Halide is).
inline std::vector<const KernelVariant *> table_kernels(const std::string &key, Device device, bool picks) {
    std::vector<const KernelVariant *> out;
    for (const auto &s : strategies_of(key)) {
        if (picks) {
            try {
                out.push_back(dispatch(key, s, device, nullptr).variant);
            } catch (const WorkloadError &) {
                // a strategy that cannot serve this shape within its limits (the dispatcher says why)
            }
        }
        for (const KernelVariant *v : data_variants_for(key, s, device))
            if (v->prebuilt && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    }
    return out;
}

// Every prebuilt variant of `family` for `device` in one of `dtypes` must be in `ran`: a variant
// that no shape of a table reaches is a test gap, not a pass.
// BLOCKFUSE_TEST_VARIANTS="a,b": only the variants whose name contains one of these substrings run (and
// must run), e.g. to put a few new kernels under compute-sanitizer (VARIANTS=... bench/gpu_host.sh sanitize).
// Unset or empty: every variant.
inline bool selected_for_test(const std::string &name) {
    const char *env = std::getenv("BLOCKFUSE_TEST_VARIANTS");
    if (!env || !*env) return true;
    std::stringstream list(env);
    for (std::string part; std::getline(list, part, ',');)
        if (!part.empty() && name.find(part) != std::string::npos) return true;
    return false;
}

// Variants run against the reference in this process (all families). A narrowed run whose filter matches no
// variant must not pass: the test binary's main checks it (narrowed_run_matched_nothing).
inline int &variants_run_count() {
    static int n = 0;
    return n;
}
inline bool narrowed_run_matched_nothing() {
    const char *env = std::getenv("BLOCKFUSE_TEST_VARIANTS");
    return env && *env && variants_run_count() == 0;
}

inline void require_all_exercised(const std::string &family, Device device, const std::vector<DType> &dtypes,
                                  const std::set<std::string> &ran,
                                  const std::function<bool(const KernelVariant &)> &in_scope = nullptr) {
    for (const auto &v : data_variants()) {
        if (!v.prebuilt || v.family != family || v.device != device || (in_scope && !in_scope(v)) ||
            !selected_for_test(v.name))
            continue;
        bool wanted = false;
        for (DType d : dtypes) wanted |= v.dtype == d;
        if (wanted) {
            INFO(family << " variant never exercised by the shape table: " << v.name);
            CHECK(ran.count(v.name) == 1);
        }
    }
}

// Every kernel of every workload (each in every dtype) on `device` against the float64 reference
// (check_kernel: fresh random tensors, a poisoned output, every output compared). Then every prebuilt
// variant of `family` for that device and those dtypes (and in scope) must have run: a variant no
// shape reaches is a test gap.
template <typename Workload>
void check_every_variant(const std::string &family, Device device, const std::vector<DType> &dtypes,
                         const std::vector<Workload> &workloads, bool picks,
                         const std::function<bool(const KernelVariant &)> &in_scope = nullptr) {
    install_halide_error_handler();
    uint64_t seed = std::random_device{}();
    std::mt19937_64 rng(seed);
    INFO("seed " << seed);
    std::set<std::string> ran;
    for (DType d : dtypes)
        for (Workload w : workloads) {
            w.dtype = d;
            for (const KernelVariant *v : table_kernels(to_key(w), device, picks)) {
                if (!selected_for_test(v->name)) continue;
                INFO(v->name << " on " << to_key(w));
                Comparison c = check_kernel(*v, w, rng);
                INFO(c.summary());
                CHECK(c.unwritten == 0);
                CHECK(c.violations == 0);
                ran.insert(v->name);
                ++variants_run_count();
            }
        }
    if (const char *only = std::getenv("BLOCKFUSE_TEST_VARIANTS"); only && *only)  // a narrowed run says so
        WARN("BLOCKFUSE_TEST_VARIANTS=" << only << ": " << ran.size() << " " << family << " variants ran, not all");
    require_all_exercised(family, device, dtypes, ran, in_scope);
}

// The whole conv2d table on `device` for each dtype.
inline void check_all_variants(Device device, const std::vector<DType> &dtypes, bool picks = false) {
    std::vector<Conv2dWorkload> shapes;
    for (const auto &key : conv2d_shapes()) shapes.push_back(parse_conv2d(key));
    check_every_variant("conv2d", device, dtypes, shapes, picks);
}

}  // namespace blockfuse::test
