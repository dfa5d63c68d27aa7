// Storage conversions, BatchNorm folding (against an unfolded conv + BN), the launch checker, and the
// timer's L2-flush choice.
#define CATCH_CONFIG_MAIN
#include "runtime/check.h"
#include "runtime/conv2d.h"
#include "runtime/reference.h"
#include "runtime/timing.h"
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "runtime/dispatch.h"

using namespace blockfuse;

TEST_CASE("f16 and bf16 conversions round to nearest even and keep specials", "[dtype]") {
    CHECK(f16_to_f32(f32_to_f16(1.0f)) == 1.0f);
    CHECK(f32_to_f16(65504.0f) == 0x7bff);               // largest finite
    CHECK(f32_to_f16(65520.0f) == 0x7c00);               // rounds to inf
    CHECK(f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
    CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));
    CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even (down)
    CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
    CHECK(std::isnan(f16_to_f32(f32_to_f16(std::nanf("")))));
    CHECK(std::isinf(f16_to_f32(f32_to_f16(-INFINITY))));
    CHECK(bf16_to_f32(f32_to_bf16(1.0f)) == 1.0f);
    CHECK(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);  // tie -> even
    CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
    std::mt19937 rng(std::random_device{}());
    std::uniform_real_distribution<float> d(-1000.f, 1000.f);
    for (int i = 0; i < 10000; ++i) {
        float x = d(rng);
        float h = f16_to_f32(f32_to_f16(x)), b = bf16_to_f32(f32_to_bf16(x));
        REQUIRE(std::fabs(h - x) <= std::ldexp(1.0f, -11) * std::fabs(x) + 1e-7f);
        REQUIRE(std::fabs(b - x) <= std::ldexp(1.0f, -8) * std::fabs(x));
    }
}

TEST_CASE("BatchNorm folded into weights and bias equals conv followed by BN", "[bn]") {
    install_halide_error_handler();
    std::mt19937_64 rng(std::random_device{}());
    std::uniform_real_distribution<double> u(-1, 1), pos(0.2, 2.0);
    for (const char *key : {"conv2d:n=2,c=6,h=7,w=9,k=5,r=3,s=3,stride=1,pad=1,groups=1,bias=1,act=relu,dtype=f32",
                            "conv2d:n=1,c=8,h=5,w=5,k=8,r=3,s=3,stride=2,pad=1,groups=8,bias=1,dtype=f32"}) {
        INFO(key);
        Conv2dWorkload w = parse_conv2d(key);
        Conv2dTensors t = make_conv2d_tensors(w);
        randomize(t, w, rng);
        std::vector<double> in = to_doubles(t.input, w.dtype), wt = to_doubles(t.weights, w.dtype), b(w.k);
        for (int k = 0; k < w.k; ++k) b[k] = t.bias(k);
        std::vector<double> gamma(w.k), beta(w.k), mean(w.k), var(w.k);
        for (int k = 0; k < w.k; ++k) gamma[k] = u(rng), beta[k] = u(rng), mean[k] = u(rng), var[k] = pos(rng);
        const double eps = 1e-5;

        // Unfolded: conv without activation, then BN, then the activation, all float64.
        Conv2dWorkload lin = w;
        lin.act = Activation::none;
        std::vector<double> ref, scale;
        conv2d_reference(lin, in, wt, b, &ref, &scale);
        for (size_t i = 0; i < ref.size(); ++i) {
            int k = int(i % w.k);
            ref[i] = activation_ref((ref[i] - mean[k]) / std::sqrt(var[k] + eps) * gamma[k] + beta[k], w.act);
            scale[i] = scale[i] * std::fabs(gamma[k]) / std::sqrt(var[k] + eps) + std::fabs(beta[k]) +
                       std::fabs(mean[k] * gamma[k]) / std::sqrt(var[k] + eps);
        }
        // Folded: weights and bias rewritten, then the ordinary kernel.
        fold_batchnorm(wt, b, gamma, beta, mean, var, eps);
        for (size_t i = 0; i < wt.size(); ++i) store_from_double(t.weights.data(), w.dtype, i, wt[i]);
        t.weights.set_host_dirty();
        widen_weights(t, w.dtype);
        for (int k = 0; k < w.k; ++k) t.bias(k) = float(b[k]);
        t.bias.set_host_dirty();
        run_conv2d(*dispatch(to_key(w), "direct", Device::cpu, nullptr).variant, w, t);
        Comparison c = compare(to_doubles(t.output, w.dtype), ref, scale, (w.c / w.groups) * w.r * w.s + 4, w.dtype);
        INFO(c.summary());
        CHECK(c.ok());
    }
    std::vector<double> wt(4), b(2), g(2, 1), be(2), m(2), v{1, -2};
    CHECK_THROWS_WITH(fold_batchnorm(wt, b, g, be, m, v, 1e-5), Catch::Contains("var + eps must be positive"));
}

TEST_CASE("launches beyond device limits are rejected before running, naming the limit", "[launch]") {
    Conv2dWorkload w = parse_conv2d("conv2d:n=70000,c=8,h=1,w=1,k=8,r=1,s=1,stride=1,pad=0,groups=1,dtype=f16");
    const KernelVariant &v = *dispatch(to_key(w), "direct", Device::cuda, nullptr).variant;
    CHECK_THROWS_WITH(check_launch(v, w), Catch::Contains("grid dimension z") && Catch::Contains("65535"));
    KernelVariant big = v;
    big.knobs["flat_threads"] = 0;  // the 2-D mapping: threads_k x threads_x
    big.knobs["threads_k"] = 64;
    big.knobs["threads_x"] = 32;
    Conv2dWorkload small = parse_conv2d("conv2d:n=1,c=8,h=4,w=4,k=8,r=1,s=1,dtype=f16");
    CHECK_THROWS_WITH(check_launch(big, small), Catch::Contains("2048 threads per block exceed"));
    CHECK_NOTHROW(check_launch(v, small));
    // A shared-memory staged tile too large for a block (36*8 ch x 66 x 10 px x 4 B = 760 KB).
    KernelVariant shared = v;
    shared.knobs = {{"stage_input", 2}, {"kernel_size", 3}, {"static_stride", 1}, {"static_dilation", 1}, {"vec_k", 8},
                    {"threads_k", 36},  {"threads_x", 16},  {"tile_x", 4},        {"tile_y", 8}};
    CHECK_THROWS_WITH(check_launch(shared, small), Catch::Contains("bytes of shared memory exceed"));
}

TEST_CASE("LayerNorm's affine folded into the next 1x1 layer equals LN with affine then the layer", "[ln]") {
    std::mt19937_64 rng(std::random_device{}());
    std::uniform_real_distribution<double> u(-1, 1);
    const int C = 7, K = 5;
    std::vector<double> x(C), g(C), be(C), w(size_t(K) * C), b(K);
    for (auto *v : {&x, &g, &be, &w, &b})
        for (double &e : *v) e = u(rng);
    // LN without affine (the kernels' form)
    double m = 0, q = 0;
    for (double e : x) m += e;
    m /= C;
    for (double e : x) q += (e - m) * (e - m);
    std::vector<double> nx(C);
    for (int c = 0; c < C; ++c) nx[c] = (x[c] - m) / std::sqrt(q / C + 1e-6);
    // unfolded: affine, then the layer; folded: the folded layer on nx
    std::vector<double> w2 = w, b2 = b;
    fold_layernorm_affine(w2, b2, g, be);
    for (int k = 0; k < K; ++k) {
        double ref = b[k], got = b2[k];
        for (int c = 0; c < C; ++c) {
            ref += w[size_t(c) * K + k] * (nx[c] * g[c] + be[c]);
            got += w2[size_t(c) * K + k] * nx[c];
        }
        CHECK(got == Approx(ref).epsilon(1e-12));
    }
    std::vector<double> bad(3);
    CHECK_THROWS_WITH(fold_layernorm_affine(bad, b, g, be), Catch::Contains("K x C"));
}

TEST_CASE("the L2-flush kinds round-trip through their names; anything else is rejected", "[timing]") {
    for (L2Flush f : {L2Flush::none, L2Flush::write, L2Flush::read}) {
        L2Flush back = L2Flush::none == f ? L2Flush::read : L2Flush::none;
        REQUIRE(parse_l2_flush(l2_flush_name(f), back));
        CHECK(back == f);
    }
    L2Flush untouched = L2Flush::write;
    for (const char *bad : {"", "Read", "memset", "read "}) {
        CHECK_FALSE(parse_l2_flush(bad, untouched));
        CHECK(untouched == L2Flush::write);
    }
}

TEST_CASE("host timing ignores the device L2 flush (no CUDA context is touched)", "[timing]") {
    for (L2Flush f : {L2Flush::write, L2Flush::read}) {
        TimingOptions opt;
        opt.l2_flush = f;
        opt.warmup = 1;
        opt.min_samples = 3;
        opt.min_seconds = 0;
        int calls = 0;
        auto st = time_interleaved({[&] { ++calls; }}, /*on_device=*/false, opt);
        CHECK(calls == 4);  // one warm-up, three samples
        CHECK(st[0].host_ms.size() == 3);
        CHECK(st[0].device_ms.empty());
        CHECK(st[0].samples() == 3);  // what the results' `samples` column reports
    }
    TimingStats gpu;  // on a GPU: every device sample, fewer host ones
    gpu.device_ms.assign(40, 1.0);
    gpu.host_ms.assign(14, 1.2);
    CHECK(gpu.samples() == 40);
}
