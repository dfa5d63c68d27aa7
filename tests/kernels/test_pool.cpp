// Pooling (windowed, adaptive, mean pooling): keys, and the kernels the dispatcher generates for every
// workload of workloads/pool.txt (shrunk: tests/common/pool_cases.h), for random shapes of every family, and for
// max pooling on inputs built to break it (ties everywhere, NaN, windows of -inf only), each against the
// float64 reference of PyTorch's loops with poisoned outputs: avg within tolerance, max values and argmax
// indices exactly. Devices as test_generated (BLOCKFUSE_TEST_DEVICES, default cpu,opencl; PoCL in f32);
// the seed is printed, BLOCKFUSE_TEST_SEED reproduces a run; BLOCKFUSE_TEST_SHAPES random shapes per
// family and device (default 2 on the CPU, 1 on PoCL).
#define CATCH_CONFIG_RUNNER
#include "runtime/dispatch.h"
#include "runtime/conv2d.h"
#include "runtime/pool.h"
#include "runtime/workload.h"
#include "tests/common/check_kernel.h"
#include "tests/common/pool_cases.h"
#include "tests/common/test_env.h"
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>

using namespace blockfuse;

namespace {

#ifndef BLOCKFUSE_SOURCE_DIR
#define BLOCKFUSE_SOURCE_DIR "."
#endif

std::vector<std::string> suite_keys(const std::string &name) { return test::suite_keys(BLOCKFUSE_SOURCE_DIR, name); }

using test::for_each_kernel;
using test::require_match;

std::vector<std::string> for_device(std::vector<std::string> keys, Device d) {
    if (d != Device::opencl) return keys;
    for (auto &k : keys) k = test::as_f32(k);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    return keys;
}

std::mt19937_64 &rng() {
    static std::mt19937_64 r(test::test_seed());
    return r;
}

}  // namespace

TEST_CASE("pooling keys round-trip; defaults follow PyTorch", "[pool][keys]") {
    for (const char *key : {
             "avgpool1d:n=4,c=128,l=4096,kernel=3,stride=2,pad=1,layout=ncl,dtype=f16",
             "avgpool2d:n=3,c=96,h=55,w=57,kernel_h=3,kernel_w=5,stride=2,pad_h=1,pad_w=2,ceil=1,count_include_pad=0,"
             "divisor=7,layout=nchw,dtype=bf16",
             "maxpool3d:n=8,c=64,d=16,h=112,w=112,kernel_d=1,kernel_h=2,kernel_w=2,stride_d=1,stride_h=2,stride_w=2,"
             "pad=0,layout=ncdhw,dtype=f16",
             "maxpool1d:n=16,c=128,l=2048,kernel=5,stride=2,pad=2,dil=2,ceil=1,return_indices=1,layout=ncl,dtype=bf16",
             "adaptive_maxpool2d:c=2048,h=7,w=7,out=1,return_indices=1,layout=nchw,dtype=f16",
             "adaptive_avgpool2d:n=2,c=64,h=55,w=57,out_h=7,out_w=5,layout=nchw,dtype=bf16",
             "mean_pooling:b=1,s=1000,h=64,d=128,chunk=32,seq_lens=100+200+300+400,dtype=f16,out_dtype=f32",
             "mean_pooling:b=2,s=2049,h=64,d=128,chunk=64,seq_lens=1024x2+1,dtype=f16,out_dtype=f16",
         }) {
        INFO(key);
        CHECK(canonical_key(key) == key);
    }
    // stride defaults to the kernel; symmetric fields where the axes agree; unbatched has no n
    CHECK(canonical_key("maxpool2d:c=3,h=9,w=9,kernel_h=3,kernel_w=3") ==
          "maxpool2d:c=3,h=9,w=9,kernel=3,stride=3,pad=0,layout=nchw,dtype=f32");
    CHECK(canonical_key("mean_pooling:b=1,s=6,h=1,d=1,chunk=2,seq_lens=2+2+1+1,dtype=bf16") ==
          "mean_pooling:b=1,s=6,h=1,d=1,chunk=2,seq_lens=2x2+1x2,dtype=bf16,out_dtype=bf16");
    // PyTorch's output sizes: ceil mode drops a last window that would start in the right padding
    CHECK(parse_pool("maxpool2d:n=1,c=1,h=55,w=55,kernel=3,stride=2,ceil=1").out(1) == 27);
    CHECK(parse_pool("avgpool1d:n=1,c=1,l=2048,kernel=4,stride=2,pad=1,ceil=1").out(0) == 1024);
    CHECK(parse_pool("avgpool1d:n=1,c=1,l=5,kernel=2,stride=2,pad=1,ceil=1").out(0) == 3);
    CHECK(parse_pool("avgpool1d:n=1,c=1,l=4,kernel=2,stride=2,pad=1,ceil=1").out(0) == 3);
    CHECK(parse_pool("maxpool1d:n=1,c=1,l=2048,kernel=5,stride=2,pad=2,dil=2,ceil=1").out(0) == 1023);
    CHECK(parse_mean_pooling("mean_pooling:b=1,s=1000,h=1,d=1,chunk=32,seq_lens=100+200+300+400").chunks() == 34);
}

TEST_CASE("bad pooling keys get one message naming the field and the value", "[pool][keys]") {
    const std::vector<std::pair<const char *, const char *>> cases = {
        {"maxpool2d:n=1,c=3,h=9,w=9", "missing field 'kernel'"},
        {"maxpool2d:n=1,h=9,w=9,kernel=3", "missing field 'c'"},
        {"maxpool2d:n=1,c=3,h=9,w=9,kernel=3,pad=2", "field 'pad_h' = 2 exceeds half the kernel (3)"},
        {"maxpool2d:n=1,c=3,h=9,w=9,kernel=3,kernel_h=3", "fields 'kernel' and 'kernel_h' are both given"},
        {"maxpool1d:n=1,c=3,l=9,kernel_l=3", "unknown field 'kernel_l'"},
        {"avgpool2d:n=1,c=3,h=9,w=9,kernel=3,dil=2", "unknown field 'dil'"},
        {"avgpool1d:n=1,c=3,l=9,kernel=3,divisor=2", "unknown field 'divisor'"},
        {"avgpool2d:n=1,c=3,h=9,w=9,kernel=3,divisor=0", "field 'divisor' = 0 must be positive"},
        {"maxpool2d:n=1,c=3,h=2,w=9,kernel=3", "empty output along h"},
        {"maxpool1d:n=1,c=3,l=9,kernel=3,ceil=2", "field 'ceil' = 2 must be 0 or 1"},
        {"maxpool2d:n=1,c=3,h=9,w=9,kernel=3,layout=nhwc", "field 'layout' = 'nhwc' is not supported (nchw"},
        {"maxpool3d:n=1,c=3,d=4,h=9,w=9,kernel=2,stride_w=0", "field 'stride_w' = 0 must be positive"},
        {"adaptive_avgpool2d:n=1,c=3,h=9,w=9", "missing field 'out'"},
        {"adaptive_avgpool2d:n=1,c=3,h=9,w=9,out=0", "field 'out_h' = 0 must be positive"},
        {"avgpool2d:n=1,c=3,h=9,w=9,kernel=3,return_indices=1", "unknown field 'return_indices'"},
        {"maxpool2d:n=65536,c=65536,h=1,w=1,kernel=1", "input tensor has more than 2^31 elements"},
        {"mean_pooling:b=1,s=10,h=1,d=1,chunk=4,seq_lens=3+4", "field 'seq_lens' = '3+4' sums to 7, not s = 10"},
        {"mean_pooling:b=1,s=10,h=1,d=1,chunk=4,seq_lens=5+x2",
         "field 'seq_lens' = '5+x2': term 'x2' is not LEN or LENxCOUNT"},
        {"mean_pooling:b=1,s=10,h=1,d=1,chunk=0", "field 'chunk' = 0 must be positive"},
        {"mean_pooling:b=1,s=10,h=1,d=1,chunk=2,out_dtype=f64", "field 'out_dtype' = 'f64' is not supported"},
        {"maxpool4d:n=1,c=1,h=1,w=1,kernel=1", "family 'maxpool4d' is not 'conv2d'"},
    };
    test::require_key_errors(cases);
}

TEST_CASE("every workload of the pooling suite, shrunk, matches the float64 reference", "[pool][suite]") {
    install_halide_error_handler();
    std::vector<std::string> keys;
    for (const auto &k : suite_keys("pool")) keys.push_back(test::shrink_pool_key(k));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (Device d : test::test_devices())
        for_each_kernel(d, for_device(keys, d), [](const std::string &key, const KernelVariant &v) {
            require_match(test::check_kernel(v, key, rng()));
        });
}

TEST_CASE("random pooling shapes of every family match the float64 reference", "[pool][random]") {
    install_halide_error_handler();
    std::cout << "BLOCKFUSE_TEST_SEED=" << test::test_seed() << " (set it to reproduce this run)\n";
    INFO("BLOCKFUSE_TEST_SEED=" << test::test_seed());
    for (Device d : test::test_devices()) {
        const std::vector<std::string> dtypes =
            d == Device::opencl ? std::vector<std::string>{"f32"} : std::vector<std::string>{"f32", "f16", "bf16"};
        const int per_family = std::stoi(test::env("BLOCKFUSE_TEST_SHAPES", d == Device::opencl ? "1" : "2"));
        // The shapes from a generator of their own: a fill-only run (BLOCKFUSE_TEST_FILL_ONLY, no data drawn) and
        // a run with other test cases before this one make the same keys.
        std::mt19937_64 shapes(test::test_seed() + 1 + int(d));
        std::vector<std::string> keys;
        for (const auto &f : test::pool_families())
            for (int i = 0; i < per_family; ++i) keys.push_back(test::random_pool_key(shapes, f, dtypes));
        for_each_kernel(d, keys, [](const std::string &key, const KernelVariant &v) {
            require_match(test::check_kernel(v, key, rng()));
        });
    }
}

// A kernel whose OpenCL C is right but which PoCL 3.1's default work-group method (loopvec) miscompiled:
// one output of 180 wrong at these knobs, every seed. The PoCL tests pin POCL_WORK_GROUP_METHOD=loops
// (tests/CMakeLists.txt); without it this case fails.
TEST_CASE("a maxpool3d kernel PoCL's work-item vectorizer miscompiled matches the float64 reference", "[pool][pocl]") {
    install_halide_error_handler();
    const std::string key = "maxpool3d:n=2,c=3,d=7,h=8,w=3,kernel=3,stride=1,pad=0,ceil=1,return_indices=1,"
                            "layout=ncdhw,dtype=f32";
    const std::map<std::string, int> knobs{{"stage", 1}, {"tile_y", 2}, {"threads", 32}};
    for (Device d : test::test_devices()) {
        if (d == Device::cpu) continue;  // GPU schedule knobs
        const KernelVariant *v = kernel_with_knobs(key, "direct", d, knobs, 0, "test");
        INFO(v->name << " [" << v->knob_summary() << "]");
        for (const BuildOutcome &b : test::build_kernels({v})) REQUIRE(b.ok);
        if (test::fill_only()) continue;
        for (int i = 0; i < 3; ++i) require_match(test::check_kernel(*v, key, rng()));
    }
}

// guard_x: the row's last x tile computed whole past the row, its outputs there not stored. 9 outputs a row
// (16 inputs, stride 2, ceil mode) in tiles of 2 and 4: every tile's window starts at the same vector lane, the
// last tile's outputs 9-11 lie past the row. Values and indices against float64 with poisoned outputs, on every
// dtype CUDA takes. Shifted inwards instead, the same knobs are refused before launch (the edge tile's window
// starts at another lane: the staged window would be indexed at run time).
TEST_CASE("guarded x tiles: vector windows on odd rows, nothing stored past the row", "[pool][guard]") {
    install_halide_error_handler();
    const LaunchLimits h200{1024, 232448, 65536};
    const std::vector<std::map<std::string, int>> knob_sets{
        {{"guard_x", 1}, {"stage", 1}, {"vec", 4}, {"tile_x", 2}, {"tile_y", 2}, {"threads", 32}},
        {{"guard_x", 1}, {"stage", 1}, {"vec", 8}, {"tile_x", 4}, {"tile_y", 1}, {"threads", 64}},
    };
    for (Device d : test::test_devices()) {
        if (d == Device::cpu) continue;  // GPU schedule knobs
        const std::vector<std::string> dtypes =
            d == Device::opencl ? std::vector<std::string>{"f32"} : std::vector<std::string>{"f32", "f16", "bf16"};
        for (const std::string &dtype : dtypes)
            for (const char *indices : {"0", "1"})
                for (const auto &knobs : knob_sets) {
                    const std::string key =
                        std::string("maxpool3d:n=2,c=3,d=5,h=7,w=16,kernel=3,stride=2,pad=1,ceil=1,") +
                        "return_indices=" + indices + ",dtype=" + dtype;
                    const KernelVariant *v = kernel_with_knobs(key, "direct", d, knobs, 0, "test");
                    INFO(key << " " << v->name << " [" << v->knob_summary() << "]");
                    std::map<std::string, int> shifted_knobs = knobs;
                    shifted_knobs["guard_x"] = 0;
                    const KernelVariant *shifted = kernel_with_knobs(key, "direct", d, shifted_knobs, 0, "test");
                    CHECK(parse_op(key)->candidate_error(*shifted, h200).find("guard_x = 1") != std::string::npos);
                    REQUIRE(parse_op(key)->candidate_error(*v, h200).empty());
                    for (const BuildOutcome &b : test::build_kernels({v})) REQUIRE(b.ok);
                    if (test::fill_only()) continue;
                    for (int i = 0; i < 2; ++i) require_match(test::check_kernel(*v, key, rng()));
                }
    }
}

// stage_out: a block's rows (1-D: a chunk of a row) computed into shared memory, stored by consecutive threads. Row
// counts and chunks that do not divide the output (the last block shifted inwards over its neighbour), odd widths,
// tiles of one and several threads, with and without the window staged and the last tile guarded, every family the
// schedule serves; against float64 with poisoned outputs. Too many rows for the output are refused before launch.
TEST_CASE("outputs staged in shared memory and stored in order match the float64 reference", "[pool][stage_out]") {
    install_halide_error_handler();
    struct Case {
        std::string key;
        std::map<std::string, int> knobs;
    };
    const std::vector<Case> cases{
        {"maxpool2d:n=2,c=3,h=13,w=17,kernel=3,stride=2,pad=1,ceil=1,return_indices=1",
         {{"stage_out", 4}, {"tile_x", 2}, {"tile_y", 1}, {"threads", 32}}},
        {"maxpool2d:n=2,c=3,h=13,w=17,kernel=3,stride=2,pad=1,ceil=1",
         {{"stage_out", 2}, {"tile_x", 4}, {"tile_y", 2}}},
        {"maxpool1d:n=2,c=3,l=50,kernel=3,stride=2,pad=1,return_indices=1",
         {{"stage_out", 1}, {"tile_x", 2}, {"threads", 8}}},
        {"maxpool3d:n=1,c=2,d=5,h=7,w=16,kernel=3,stride=2,pad=1,ceil=1,return_indices=1",
         {{"stage_out", 2}, {"guard_x", 1}, {"stage", 1}, {"vec", 4}, {"tile_x", 2}, {"tile_y", 2}, {"threads", 32}}},
        {"avgpool2d:n=2,c=3,h=11,w=9,kernel=3,stride=2,pad=1,count_include_pad=0",
         {{"stage_out", 2}, {"tile_x", 2}, {"tile_y", 2}, {"threads", 32}}},
    };
    const LaunchLimits h200{1024, 232448, 65536};
    for (Device d : test::test_devices()) {
        if (d == Device::cpu) continue;  // GPU schedule knobs
        const std::vector<std::string> dtypes =
            d == Device::opencl ? std::vector<std::string>{"f32"} : std::vector<std::string>{"f32", "f16", "bf16"};
        for (const std::string &dtype : dtypes)
            for (const Case &c : cases) {
                const std::string key = c.key + ",dtype=" + dtype;
                const KernelVariant *v = kernel_with_knobs(key, "direct", d, c.knobs, 0, "test");
                INFO(key << " " << v->name << " [" << v->knob_summary() << "]");
                REQUIRE(parse_op(key)->candidate_error(*v, h200).empty());
                for (const BuildOutcome &b : test::build_kernels({v})) REQUIRE(b.ok);
                if (test::fill_only()) continue;
                for (int i = 0; i < 2; ++i) require_match(test::check_kernel(*v, key, rng()));
            }
    }
    const std::string key = cases[0].key + ",dtype=f16";  // a 9x7 output
    const KernelVariant *rows = kernel_with_knobs(key, "direct", Device::cuda, {{"stage_out", 16}}, 0, "test");
    CHECK(parse_op(key)->candidate_error(*rows, h200) == "stage_out = 16 rows exceed the output's 7");
    const KernelVariant *tall =
        kernel_with_knobs(key, "direct", Device::cuda, {{"stage_out", 1}, {"tile_y", 2}}, 0, "test");
    CHECK(parse_op(key)->candidate_error(*tall, h200) == "tile_y = 2 exceeds the stage_out = 1 rows of a block");
    const std::string wide = "maxpool2d:n=1,c=1,h=6,w=1000,kernel=2,return_indices=1,dtype=f32";  // 500x3 outputs
    const KernelVariant *big = kernel_with_knobs(wide, "direct", Device::cuda, {{"stage_out", 2}}, 0, "test");
    CHECK(parse_op(wide)->candidate_error(*big, LaunchLimits{1024, 4096, 65536}) ==
          "stage_out = 2: 12000 bytes of staged outputs exceed the 4096 bytes of shared memory a block may use");
}

// Values from {-1, 0, 0.5, 1} (exact in every dtype: ties in every window), NaN at about one position in
// 40, and the first plane -inf throughout (windows with no value above -inf: PyTorch keeps the first valid
// tap's index).
void fill_adversarial(PoolTensors &t, const PoolWorkload &w, std::mt19937_64 &r) {
    const double levels[] = {-1.0, 0.0, 0.5, 1.0};
    const size_t n = t.input.number_of_elements(), plane = size_t(w.in_plane());
    std::uniform_int_distribution<int> pick(0, 3), nan(0, 39);
    for (size_t i = 0; i < n; ++i) {
        double v = levels[pick(r)];
        if (i < plane) v = -std::numeric_limits<double>::infinity();
        else if (nan(r) == 0) v = std::numeric_limits<double>::quiet_NaN();
        store_from_double(t.input.data(), w.dtype, i, v);
    }
    t.input.set_host_dirty();
    poison_outputs(t, w.dtype);
}

TEST_CASE("max pooling on ties, NaN and -inf windows: values and PyTorch's argmax exactly", "[pool][ties]") {
    install_halide_error_handler();
    std::vector<std::string> keys;
    for (const auto &k : suite_keys("pool")) {
        if (k.find("maxpool") == std::string::npos) continue;
        PoolWorkload w = parse_pool(test::shrink_pool_key(k));
        w.n = 2;  // the second image holds the ties and NaNs (the first plane of the first is -inf)
        keys.push_back(to_key(w));
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (Device d : test::test_devices())
        for_each_kernel(d, for_device(keys, d), [](const std::string &key, const KernelVariant &v) {
            const PoolWorkload w = parse_pool(key);
            PoolTensors t = make_pool_tensors(w);
            fill_adversarial(t, w, rng());
            run_pool(v, w, t);
            require_match(check_pool(w, t));
        });
}

TEST_CASE("the pooling comparison fails on a changed value, a changed index and an unwritten output",
          "[pool][compare]") {
    install_halide_error_handler();
    const std::string key = "maxpool2d:n=1,c=2,h=9,w=11,kernel=3,stride=2,pad=1,return_indices=1,dtype=f32";
    const std::string avg = "avgpool2d:n=1,c=2,h=9,w=11,kernel=3,stride=2,pad=1,dtype=f16";
    for_each_kernel(Device::cpu, {key, avg}, [](const std::string &k, const KernelVariant &v) {
        const PoolWorkload w = parse_pool(k);
        PoolTensors t = make_pool_tensors(w);
        randomize(t, w, rng());
        run_pool(v, w, t);
        CHECK(check_pool(w, t).ok());
        t.output.copy_to_host();
        const double v0 = load_as_double(t.output.data(), w.dtype, 3);
        store_from_double(t.output.data(), w.dtype, 3, v0 + 0.125);
        CHECK(check_pool(w, t).violations == 1);
        store_from_double(t.output.data(), w.dtype, 3, std::numeric_limits<double>::quiet_NaN());
        CHECK(check_pool(w, t).unwritten == 1);
        store_from_double(t.output.data(), w.dtype, 3, v0);
        if (w.indices) {
            t.indices.copy_to_host();
            t.indices.data()[5] += 1;
            const Comparison c = check_pool(w, t);
            CHECK(c.violations == 1);
            CHECK(c.note.find("argmax") != std::string::npos);
        }
    });
}

TEST_CASE("pooling launches beyond the device's limits or the output's size are rejected before running",
          "[pool][launch]") {
    const std::string key = "maxpool2d:n=1,c=2,h=9,w=11,kernel=3,stride=2,pad=1,dtype=f32";
    const PoolWorkload w = parse_pool(key);
    PoolTensors t = make_pool_tensors(w);
    auto rejected = [&](const std::map<std::string, int> &knobs, const std::string &want) {
        const KernelVariant *v = kernel_with_knobs(key, "direct", Device::opencl, knobs, 0, "test");
        try {
            run_pool(*v, w, t);  // throws before the kernel is built: the check comes first
            FAIL("launched");
        } catch (const KernelError &e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(want) != std::string::npos);
        }
    };
    rejected({{"threads", 2048}}, "2048 threads per block exceed the device limit of 1024");
    rejected({{"tile_x", 8}}, "output tile exceeds the output (6x5)");
    rejected({{"tile_y", 8}}, "output tile exceeds the output (6x5)");
    // The staged window's vectors along rows of 11 inputs: the tuner filters it before building (the generator would
    // refuse it after minutes of search).
    rejected({{"vec", 2}}, "vec = 2 must divide the input width 11");
    const LaunchLimits h200{1024, 232448, 65536};
    const KernelVariant *v4 = kernel_with_knobs(key, "direct", Device::cuda, {{"vec", 4}}, 0, "test");
    CHECK(parse_op(key)->candidate_error(*v4, h200) == "vec = 4 must divide the input width 11");
    // A staged window whose lane moves with the tile: the edge tile of a 3-wide output (tiles of 2 shifted inwards
    // start at outputs 0 and 1, stride 3: lanes 0 and 1 of a pair). On the H200 this kernel faulted (misaligned local
    // memory); the heuristic now takes another tiling there, which the check accepts.
    const std::string odd =
        "maxpool3d:c=2,d=6,h=8,w=6,kernel=5,stride_d=1,stride_h=2,stride_w=3,pad=2,ceil=1,dtype=f16";
    const KernelVariant *shifted = kernel_with_knobs(
        odd, "direct", Device::cuda, {{"tile_x", 2}, {"vec", 2}, {"stage", 1}, {"guard_x", 0}}, 0, "test");
    CHECK(parse_op(odd)->candidate_error(*shifted, h200).find("start at different lanes") != std::string::npos);
    const Pick heuristic = dispatch(odd, "direct", Device::cuda, nullptr, true);
    CHECK(parse_op(odd)->candidate_error(*heuristic.variant, h200).empty());
    // 56 outputs, stride 2, pad 1: tiles of 4 never shift (every window starts at lane 7 of 8); 57 (ceil mode):
    // the edge tile starts at 53, lane 1; tiles of 2 over pairs: lane 1 for every tile, the edge one too.
    const PoolWorkload stem = parse_pool("maxpool2d:n=1,c=1,h=8,w=112,kernel=3,stride=2,pad=1");
    const PoolWorkload stem_ceil = parse_pool("maxpool3d:n=1,c=1,d=3,h=8,w=112,kernel=3,stride=2,pad=1,ceil=1");
    CHECK(pool_window_lane_constant(stem, 4, 8));
    CHECK(!pool_window_lane_constant(stem_ceil, 4, 8));
    CHECK(pool_window_lane_constant(stem_ceil, 2, 2));
    CHECK(pool_window_lane_constant(stem_ceil, 4, 8, true));  // guard_x: every tile starts at a multiple of 4
    // The heuristic takes 8-element vectors there, the last tile guarded.
    const std::string medicalnet = "maxpool3d:n=2,c=64,d=32,h=112,w=112,kernel=3,stride=2,pad=1,ceil=1,dtype=bf16";
    const Pick guarded = dispatch(medicalnet, "direct", Device::cuda, nullptr, true);
    CHECK(guarded.variant->knob("guard_x") == 1);
    CHECK(guarded.variant->knob("vec") == 8);
    CHECK(parse_op(medicalnet)->candidate_error(*guarded.variant, h200).empty());
}

int main(int argc, char **argv) {
    return test::run_on_test_devices([&] { return Catch::Session().run(argc, argv); });
}
