// Conv1d and conv3d on the conv2d kernels: keys, and the kernel the dispatcher generates for every workload
// of workloads/conv1d.txt and conv3d.txt (shrunk: channels, lengths and sizes cut, every kernel, stride,
// padding, dilation, groups and bias kept) and for random shapes (odd sizes, groups, stride and dilation
// per axis, kernels wider than the input with padding, bias), each against the float64 reference with a
// poisoned output. The conv3d reference reads the weights as (k, cg, kx, ky, kz), so the packing of the
// depth taps into the conv2d's channels is checked too. Dense f16 / bf16 ones also on the tensor-core strategy
// (the implicit GEMM, its mma.sync emulated on the CPU). Devices, seed and fill-only runs as test_pool.
#define CATCH_CONFIG_RUNNER
#include "runtime/conv_nd.h"
#include "runtime/dispatch.h"
#include "schedules/heuristics.h"
#include "tests/common/check_kernel.h"
#include "tests/common/random_shapes.h"
#include "tests/common/test_env.h"
#include <algorithm>
#include <catch2/catch.hpp>
#include <iostream>

using namespace blockfuse;

#ifndef BLOCKFUSE_SOURCE_DIR
#define BLOCKFUSE_SOURCE_DIR "."
#endif

namespace {

std::mt19937_64 &rng() {
    static std::mt19937_64 r(test::test_seed());
    return r;
}

// Channels per group cut to at most 2 (at least one group of 16 where there is one group, so that
// aligned channel vectors stay as in the suite), the batch to 1, the sizes to a few outputs.
int shrink_channels(int c, int groups) { return groups == 1 ? std::min(c, 16) : groups * std::min(c / groups, 2); }
int shrink_size(int in, int k, int s, int p, int d) {
    const int span = d * (k - 1) + 1;
    return std::min(in, std::max(span - 2 * p, 0) + 3 * s + 2);
}

std::string shrink_key(const std::string &key) {
    if (is_conv1d_key(key)) {
        Conv1dWorkload w = parse_conv1d(key);
        w.n = 1, w.c = shrink_channels(w.c, w.groups), w.k = shrink_channels(w.k, w.groups);
        w.l = shrink_size(w.l, w.kernel, w.stride, w.pad, w.dil) + w.l % 7;
        return to_key(w);
    }
    Conv3dWorkload w = parse_conv3d(key);
    w.n = 1, w.c = shrink_channels(w.c, w.groups), w.k = shrink_channels(w.k, w.groups);
    for (int a = 0; a < 3; ++a) w.in[a] = shrink_size(w.in[a], w.kernel[a], w.stride[a], w.pad[a], w.dil[a]);
    return to_key(w);
}

std::string as_f32(std::string key) {
    const auto at = key.rfind(",dtype=");
    return key.substr(0, at) + ",dtype=f32";
}

std::string random_key(std::mt19937_64 &r, bool three_d, const std::vector<std::string> &dtypes) {
    using test::one_of;
    using test::uniform;
    for (;;) {
        const int groups = one_of(r, std::vector<int>{1, 1, 2, 3});
        const int c = groups * uniform(r, 1, 5), k = groups * uniform(r, 1, 5);
        std::string key = std::string(three_d ? "conv3d" : "conv1d") + ":n=" + std::to_string(uniform(r, 1, 2)) +
                          ",c=" + std::to_string(c);
        auto axis = [&](const std::string &field, int lo, int hi) {
            if (!three_d) return "," + field + "=" + std::to_string(uniform(r, lo, hi));
            if (uniform(r, 0, 1)) return "," + field + "=" + std::to_string(uniform(r, lo, hi));
            std::string s;
            for (const char *a : {"d", "h", "w"}) s += "," + field + "_" + a + "=" + std::to_string(uniform(r, lo, hi));
            return s;
        };
        if (three_d)
            for (const char *a : {"d", "h", "w"}) key += std::string(",") + a + "=" + std::to_string(uniform(r, 1, 7));
        else key += ",l=" + std::to_string(uniform(r, 1, 40));
        key +=
            ",k=" + std::to_string(k) + axis("kernel", 1, three_d ? 3 : 7) + axis("stride", 1, 3) + axis("pad", 0, 2);
        if (uniform(r, 0, 2) == 0) key += axis("dil", 1, 2);
        key +=
            ",groups=" + std::to_string(groups) + (uniform(r, 0, 1) ? ",bias=1" : "") + ",dtype=" + one_of(r, dtypes);
        try {
            return canonical_key(key);
        } catch (const WorkloadError &) {}
    }
}

void check_all(std::vector<std::string> keys) {
    for (Device d : test::test_devices()) {
        std::vector<std::string> ks = keys;
        if (d == Device::opencl)  // PoCL's CPU device has no fp16
            for (auto &k : ks) k = as_f32(k);
        std::sort(ks.begin(), ks.end());
        ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
        test::for_each_kernel(d, ks, [](const std::string &key, const KernelVariant &v) {
            test::require_match(test::check_kernel(v, key, rng()));
        });
        // The implicit GEMM on mma.sync (emulated on the CPU) wherever it applies: f16 / bf16, dense or grouped.
        if (d == Device::opencl) continue;
        std::vector<std::string> tc;
        for (const auto &k : ks)
            if (const auto s = strategies_of(k); std::find(s.begin(), s.end(), kTensorCores) != s.end())
                tc.push_back(k);
        test::for_each_kernel(
            d, tc,
            [](const std::string &key, const KernelVariant &v) {
                test::require_match(test::check_kernel(v, key, rng()));
            },
            kTensorCores);
    }
}

}  // namespace

TEST_CASE("conv1d and conv3d keys round-trip and map onto conv2d", "[conv_nd][keys]") {
    for (const char *key : {
             "conv1d:n=1,c=80,l=3000,k=1280,kernel=3,stride=1,pad=0,groups=1,dtype=f16",
             "conv1d:n=1,c=1,l=16000,k=512,kernel=10,stride=5,pad=0,groups=1,bias=1,dtype=bf16",
             "conv1d:n=2,c=8,l=33,k=4,kernel=3,stride=2,pad=2,dil=2,groups=2,dtype=f32",
             "conv3d:n=1,c=256,d=8,h=16,w=16,k=256,kernel=3,stride=1,pad=6,dil=6,groups=1,dtype=f16",
             "conv3d:n=1,c=64,d=8,h=28,w=28,k=128,kernel=3,stride=1,pad=1,groups=32,bias=1,dtype=f16",
             "conv3d:n=2,c=4,d=5,h=6,w=7,k=6,kernel_d=1,kernel_h=3,kernel_w=2,stride_d=2,stride_h=1,stride_w=3,pad=0,"
             "groups=2,dtype=bf16",
         }) {
        INFO(key);
        CHECK(canonical_key(key) == key);
    }
    const Conv3dWorkload w =
        parse_conv3d("conv3d:n=2,c=6,d=9,h=10,w=11,k=4,kernel_d=3,kernel_h=3,kernel_w=1,stride_d=2,pad_d=1,groups=2");
    CHECK(w.out(0) == 5);
    CHECK(to_key(w.as_conv2d()) == "conv2d:n=10,c=18,h=10,w=11,k=4,r=3,s=1,stride=1,pad=0,groups=2,dtype=f32");
    CHECK(to_key(parse_conv1d("conv1d:n=1,c=4,l=9,k=2,kernel=3,stride=2").as_conv2d()) ==
          "conv2d:n=1,c=4,h=1,w=9,k=2,r=1,s=3,stride=2,pad=0,groups=1,dtype=f32");
}

TEST_CASE("bad conv1d and conv3d keys get one message naming the field and the value", "[conv_nd][keys]") {
    const std::vector<std::pair<const char *, const char *>> cases = {
        {"conv1d:n=1,c=4,l=9,k=2", "missing field 'kernel'"},
        {"conv1d:n=1,c=4,l=9,k=2,kernel=0", "field 'kernel' = 0 must be positive"},
        {"conv1d:n=1,c=4,l=2,k=2,kernel=5", "empty output: padded length 2 is smaller than the dilated kernel 5"},
        {"conv1d:n=1,c=4,l=9,k=3,kernel=3,groups=2", "field 'groups' = 2 does not divide k = 3"},
        {"conv1d:n=1,c=4,l=9,k=2,kernel=3,kernel_h=3", "unknown field 'kernel_h'"},
        {"conv1d:n=1,c=4,l=9,k=2,kernel=3,bias=2", "field 'bias' = 2 must be 0 or 1"},
        {"conv3d:n=1,c=4,d=4,h=4,w=4,k=2", "missing field 'kernel'"},
        {"conv3d:n=1,c=4,d=4,h=4,w=4,k=2,kernel=3,kernel_d=1", "fields 'kernel' and 'kernel_d' are both given"},
        {"conv3d:n=1,c=4,d=1,h=4,w=4,k=2,kernel=3", "empty output along d"},
        {"conv3d:n=1,c=3,d=4,h=4,w=4,k=3,kernel=3,pad=1,groups=2", "field 'groups' = 2 does not divide c = 3"},
        {"conv3d:n=1,c=4,d=4,h=4,w=4,k=2,kernel=3,stride_h=0", "field 'stride_h' = 0 must be positive"},
        {"conv3d:n=1,c=4,d=4,h=4,w=4,k=2,kernel=3,dtype=f64", "field 'dtype' = 'f64' is not supported"},
    };
    test::require_key_errors(cases);
}

TEST_CASE("every workload of the conv1d and conv3d suites, shrunk, matches the float64 reference", "[conv_nd][suite]") {
    std::vector<std::string> keys;
    for (const char *suite : {"conv1d", "conv3d"})
        for (const auto &k : test::suite_keys(BLOCKFUSE_SOURCE_DIR, suite)) keys.push_back(shrink_key(k));
    check_all(keys);
}

TEST_CASE("random conv1d and conv3d shapes match the float64 reference", "[conv_nd][random]") {
    std::cout << "BLOCKFUSE_TEST_SEED=" << test::test_seed() << " (set it to reproduce this run)\n";
    INFO("BLOCKFUSE_TEST_SEED=" << test::test_seed());
    const int per_rank = std::stoi(test::env("BLOCKFUSE_TEST_SHAPES", "3"));
    // The shapes from a generator of their own: a fill-only run (which checks nothing, so draws no data) and the
    // run that checks make the same keys.
    std::mt19937_64 shapes(test::test_seed());
    std::vector<std::string> keys;
    for (bool three_d : {false, true})
        for (int i = 0; i < per_rank; ++i) keys.push_back(random_key(shapes, three_d, {"f32", "f16", "bf16"}));
    check_all(keys);
}

TEST_CASE("the conv3d check fails on misplaced depth taps", "[conv_nd][compare]") {
    const std::string key = "conv3d:n=1,c=2,d=4,h=5,w=5,k=3,kernel=3,stride=1,pad=1,groups=1,dtype=f32";
    for (Device dev : test::test_devices())
        test::for_each_kernel(dev, {key}, [](const std::string &k, const KernelVariant &v) {
            auto d = parse_op(k)->data(rng());
            d->run(v);
            CHECK(d->check().ok());
            // The same kernel on weights whose depth taps were packed in reverse order: the reference disagrees.
            const Conv3dWorkload w = parse_conv3d(k);
            Conv3dTensors t = make_conv3d_tensors(w);
            randomize(t, w, rng());
            Conv3dTensors swapped = t;
            swapped.weights5 = make_tensor(w.dtype, shape_of(t.weights5));
            const std::vector<double> v5 = to_doubles(t.weights5, w.dtype);
            const size_t per_tap = v5.size() / size_t(w.kernel[0]);
            for (size_t i = 0; i < v5.size(); ++i)
                store_from_double(swapped.weights5.data(), w.dtype, i,
                                  v5[(w.kernel[0] - 1 - i / per_tap) * per_tap + i % per_tap]);
            pack_conv3d_weights(swapped, w);
            run_conv2d(v, w.as_conv2d(), swapped);
            std::vector<double> in = to_doubles(t.input, w.dtype), out = to_doubles(swapped.output, w.dtype);
            std::vector<double> bias(size_t(w.k), 0.0);
            size_t bad = 0;
            for (size_t o = 0; o < out.size(); ++o) {
                double sc;
                const int K = w.k, OW = w.out(2), OH = w.out(1);
                const double ref = conv3d_reference_point(w, in, v5, bias, int(o % K), int(o / K % OW),
                                                          int(o / K / OW % OH), int(o / K / OW / OH), 0, &sc);
                bad += std::abs(ref - out[o]) > 1e-3 * (sc + 1);
            }
            CHECK(bad > out.size() / 4);
        });
}

TEST_CASE("conv3d on the tensor cores: f16/bf16 but depthwise, the depth taps in the GEMM's reduction",
          "[conv_nd][keys]") {
    CHECK(strategies_of("conv3d:n=1,c=8,d=4,h=4,w=4,k=8,kernel=3,pad=1,dtype=f16") ==
          std::vector<std::string>{"direct", kTensorCores});
    CHECK(strategies_of("conv3d:n=1,c=8,d=4,h=4,w=4,k=8,kernel=3,pad=1,dtype=f32") ==
          std::vector<std::string>{"direct"});
    CHECK(strategies_of("conv3d:n=1,c=8,d=4,h=4,w=4,k=8,kernel=3,pad=1,groups=2,dtype=bf16") ==
          std::vector<std::string>{"direct", kTensorCores});
    CHECK(strategies_of("conv3d:n=1,c=8,d=4,h=4,w=4,k=8,kernel=3,pad=1,groups=8,dtype=bf16") ==
          std::vector<std::string>{"direct"});
    const Conv3dWorkload w = parse_conv3d(
        "conv3d:n=2,c=3,d=9,h=6,w=5,k=4,kernel_d=3,kernel_h=2,kernel_w=3,stride_d=2,pad_d=1,dil_d=2,dtype=bf16");
    const GemmWorkload g = implicit_gemm_of(w.plane(), w.depth());
    CHECK(g.m == 2 * w.out(0) * w.out(1) * w.out(2));
    CHECK(g.n == 4);
    CHECK(g.k == 9 * 8);  // 3 channels: two taps to each 8 of the reduction, 18 taps in 9 groups
    // Weights: (kr, k), tap = (kz * R + ky) * S + kx at tap / 2 * 8 + tap % 2 * 3 + c, zeros at the groups' last two,
    // from weights5 (k, c, kx, ky, kz).
    std::mt19937_64 r(7);
    Conv3dTensors t = make_conv3d_tensors(w);
    randomize(t, w, r);
    REQUIRE(t.weights_tc.dim(0).extent() == g.k);
    REQUIRE(t.weights_tc.dim(1).extent() == 4);
    const uint16_t *src = static_cast<const uint16_t *>(t.weights5.data());
    for (int k = 0; k < 4; ++k)
        for (int kz = 0; kz < 3; ++kz)
            for (int ky = 0; ky < 2; ++ky)
                for (int kx = 0; kx < 3; ++kx)
                    for (int c = 0; c < 3; ++c) {
                        const int tap = (kz * 2 + ky) * 3 + kx;
                        REQUIRE(t.weights_tc(tap / 2 * 8 + tap % 2 * 3 + c, k) == src[(tap * 3 + c) * 4 + k]);
                    }
    for (int k = 0; k < 4; ++k)
        for (int i = 6; i < 72; i += 8) REQUIRE((t.weights_tc(i, k) == 0 && t.weights_tc(i + 1, k) == 0));
    const auto op = parse_op(to_key(w));
    CHECK(op->family(kTensorCores) == "conv2d_tc");
    // conv1d has conv2d's strategies, families (the tuner's knob table) included.
    CHECK(parse_op("conv1d:n=1,c=8,l=9,k=8,kernel=3,stride=1,pad=1,groups=1,dtype=f16")->family(kTensorCores) ==
          "conv2d_tc");
    const KernelVariant v = op->kernel_for(kTensorCores, Device::cuda, op->heuristic(kTensorCores, Device::cuda));
    CHECK(v.knob("depth") == 9);
    CHECK(v.knob("kernel_d") == 3);
    CHECK(v.knob("dil_d") == 2);
    CHECK(v.knob("channels") == 3);
    CHECK(op->costs(v).at(0).tensor_cores);
    // A long reduction onto few output tiles (unet-aspp: 2048 x 256 outputs, K = 6912) splits K over blocks; the
    // launch check counts the splits as the grid's third dimension.
    const auto aspp = parse_op("conv3d:n=1,c=256,d=8,h=16,w=16,k=256,kernel=3,stride=1,pad=6,dil=6,groups=1,dtype=f16");
    const KernelVariant va = aspp->kernel_for(kTensorCores, Device::cuda, aspp->heuristic(kTensorCores, Device::cuda));
    CHECK(va.knob("split_k") == 4);
    CHECK(tensor_core_launch(va, 2048, 256).shape.grid[2] == 4);
}

int main(int argc, char **argv) {
    return test::run_on_test_devices([&] { return Catch::Session().run(argc, argv); });
}
