// The GEMM shape table every device's test walks, and the checks of one kernel on one shape.
// Shapes are chosen to break naive tiling against the named tilings (128 x 128 block tiles, K steps of
// 32 and 64, 40-column warp tiles): M, N and K of 1, odd sizes, sizes one past and one short of a tile,
// K not a multiple of 8 (the scalar panel path) or of the K step, and whole-tile shapes (the exact path).
#pragma once
#include "runtime/gemm.h"
#include "tests/common/conv2d_cases.h"
#include <catch2/catch.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace blockfuse::test {

inline std::vector<std::string> gemm_shapes() {
    return {
        "gemm:m=1,n=1,k=1",
        "gemm:m=1,n=40,k=16",
        "gemm:m=3,n=1,k=24",
        "gemm:m=17,n=9,k=13,bias=1",
        "gemm:m=129,n=127,k=40,act=relu",
        "gemm:m=128,n=128,k=32",                  // whole tiles
        "gemm:m=256,n=256,k=64,bias=1,act=gelu",  // whole tiles, two per axis, two K steps of 32
        "gemm:m=65,n=200,k=72,bias=1,act=silu",   // K a multiple of 8, not of the K step
        "gemm:m=130,n=41,k=100,act=sigmoid",
        "gemm:m=40,n=257,k=8,bias=1,act=relu6",
    };
}

// |sum| <= 4 * 48 + 2 = 194: an exact integer in bf16 (up to 256) and f16 (up to 2048).
inline std::string gemm_bit_exact_shape() { return "gemm:m=131,n=45,k=48,bias=1,act=relu"; }

inline GemmWorkload gemm_case(const std::string &shape, DType dtype) {
    return parse_gemm(shape + ",dtype=" + dtype_name(dtype));
}

// One kernel on one workload: fresh random data (the seed is in the failure message), NaN-poisoned
// output, every output against the float64 reference.
inline Comparison run_gemm_case(const KernelVariant &v, const GemmWorkload &w, uint64_t seed) {
    install_halide_error_handler();  // Halide errors become KernelErrors, not aborts
    std::mt19937_64 rng(seed);
    GemmTensors t = make_gemm_tensors(w);
    randomize(t, w, rng);
    run_gemm(v, w, t);
    return check_gemm(w, t, size_t(1) << 40, rng);
}

// Small integers: every product and partial sum is exact in f32 and the results fit the storage type,
// so the output must equal the reference bit for bit (whatever the order of the accumulation).
inline void require_bit_exact(const KernelVariant &v, const GemmWorkload &w, uint64_t seed) {
    install_halide_error_handler();
    std::mt19937_64 rng(seed);
    GemmTensors t = make_gemm_tensors(w);
    randomize_integers(t, w, rng, -2, 2);
    run_gemm(v, w, t);
    t.output.copy_to_host();
    for (int m = 0; m < w.m; ++m)
        for (int n = 0; n < w.n; ++n) {
            double ref = t.bias(n);
            for (int k = 0; k < w.k; ++k) {
                const uint16_t a = t.a(k, m), b = t.b(k, n);
                ref += load_as_double(&a, w.dtype, 0) * load_as_double(&b, w.dtype, 0);
            }
            ref = activation_ref(ref, w.act);
            const uint16_t o = t.output(n, m);
            const double got = load_as_double(&o, w.dtype, 0);
            if (got != ref)
                FAIL(v.name << " on " << to_key(w) << " (seed " << seed << "): C[" << m << "][" << n << "] = " << got
                            << ", exactly " << ref);
        }
}

// The gemm kernels a device's test runs: the named variants of `device` in `dtypes` (only the prebuilt ones
// where `prebuilt_only`: the CPU and PoCL tests, which generate nothing but the mutant), and the
// dispatcher's pick for every table shape (generated where it is no named variant: the GPU test's cache is
// filled where Halide is).
inline std::vector<const KernelVariant *> gemm_test_kernels(Device device, const std::vector<DType> &dtypes,
                                                            bool prebuilt_only) {
    std::vector<const KernelVariant *> out;
    auto add = [&out](const KernelVariant *v) {
        for (const KernelVariant *o : out)
            if (o->request().hash() == v->request().hash()) return;
        if (selected_for_test(v->name)) out.push_back(v);
    };
    for (const auto &v : data_variants())
        if (v.family == "gemm" && v.device == device && (v.prebuilt || !prebuilt_only) &&
            std::find(dtypes.begin(), dtypes.end(), v.dtype) != dtypes.end())
            add(&v);
    if (!prebuilt_only)
        for (DType d : dtypes)
            for (const auto &shape : gemm_shapes())
                add(dispatch(to_key(gemm_case(shape, d)), "direct", device, nullptr).variant);
    return out;
}

// Every kernel against the table and the bit-exact check; each must run on at least one shape.
inline void check_gemm_kernels(const std::vector<const KernelVariant *> &kernels) {
    const uint64_t seed = std::random_device{}();
    for (const KernelVariant *v : kernels) {
        for (const auto &shape : gemm_shapes()) {
            const GemmWorkload w = gemm_case(shape, v->dtype);
            INFO(v->name << " [" << v->knob_summary() << "] on " << to_key(w) << ", seed " << seed);
            const Comparison c = run_gemm_case(*v, w, seed);
            INFO(c.summary());
            REQUIRE(c.ok());
        }
        require_bit_exact(*v, gemm_case(gemm_bit_exact_shape(), v->dtype), seed);
        ++variants_run_count();
    }
    if (!std::getenv("BLOCKFUSE_TEST_VARIANTS") || !*std::getenv("BLOCKFUSE_TEST_VARIANTS")) REQUIRE(!kernels.empty());
}

}  // namespace blockfuse::test
