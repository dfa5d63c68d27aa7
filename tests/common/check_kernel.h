// One kernel on one workload against the float64 reference, through the workload's Op (runtime/op.h):
// fresh random inputs, a NaN-poisoned output, every output compared (the tests' shapes are small).
// Shared by the shape-table and property tests.
#pragma once
#include "runtime/dispatch.h"
#include "runtime/kernel_cache.h"
#include "runtime/op.h"
#include "runtime/workload.h"
#include "tests/common/test_env.h"
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <thread>

namespace blockfuse::test {

inline Comparison check_kernel(const KernelVariant &v, const std::string &key, std::mt19937_64 &rng) {
    std::unique_ptr<OpData> d = parse_op(key)->data(rng);
    d->run(v);
    return d->check();
}

// A deliberately wrong kernel: `good` with the generator param `fragment_mutation` set (a wrong fragment layout,
// never in a dispatched kernel). On the same fresh data `good` must match the float64 reference and the mutant
// must miss it on more than a quarter of the outputs.
inline void require_mutant_fails(const KernelVariant &good, const std::string &key, int mutation) {
    KernelVariant mutant = good;
    mutant.knobs["fragment_mutation"] = mutation;
    mutant.name = good.name + "_mutant" + std::to_string(mutation);
    REQUIRE(mutant.request().hash() != good.request().hash());
    const uint64_t seed = std::random_device{}();
    INFO("seed " << seed);
    std::mt19937_64 a(seed), b(seed);
    REQUIRE(check_kernel(good, key, a).ok());
    const Comparison bad = check_kernel(mutant, key, b);
    INFO("mutant: " << bad.summary());
    CHECK_FALSE(bad.ok());
    CHECK(bad.violations > bad.elements / 4);
}

// Kernels generated (or found in the kernel cache) all at once, as many at a time as there are cores, each
// in its own process: what a test needs before it runs them.
inline std::vector<BuildOutcome> build_kernels(const std::vector<const KernelVariant *> &kernels) {
    std::vector<KernelRequest> reqs;
    for (const KernelVariant *k : kernels) reqs.push_back(k->request());
    return ensure_built_all(reqs, kernel_cache_dir(), int(std::max(1u, std::thread::hardware_concurrency())));
}

// Each key's kernel as the dispatcher picks it for `strategy`, generated all at once (none may carry a
// bound Halide proved wrong at compile time: only a warning there, and a GPU kernel ignores the assert);
// then `check` on each, unless the run only fills the cache.
template <class Check>
void for_each_kernel(Device d, const std::vector<std::string> &keys, Check &&check,
                     const std::string &strategy = "direct") {
    std::vector<const KernelVariant *> kernels;
    for (const auto &k : keys) kernels.push_back(dispatch(k, strategy, d, nullptr).variant);
    const auto built = build_kernels(kernels);
    for (size_t i = 0; i < keys.size(); ++i) {
        INFO(device_name(d) << " " << keys[i] << ": " << built[i].message);
        REQUIRE(built[i].ok);
        std::ifstream log(kernel_cache_dir() + "/" + kernels[i]->request().hash() + "/build.log");
        const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        CHECK(text.find("guaranteed to fail an assertion") == std::string::npos);
    }
    if (fill_only()) return;
    for (size_t i = 0; i < keys.size(); ++i) {
        INFO(device_name(d) << " " << keys[i] << ": " << kernels[i]->name << " [" << kernels[i]->knob_summary() << "]");
        check(keys[i], *kernels[i]);
    }
}

inline void require_match(const Comparison &c) {
    INFO(c.summary());
    CHECK(c.unwritten == 0);
    CHECK(c.violations == 0);
}

// A workload key and the knobs its kernel is built with (over the heuristic's; none: the heuristic's kernel).
struct KnobCase {
    std::string key;
    std::map<std::string, int> knobs;
};

// Each case's kernel of `strategy` on every test device but OpenCL (f16/bf16 blocks do not run there: CLHalf), or
// on `only` of them (knobs of one device's schedule), all built first, then each against the float64 reference on
// fresh data (BLOCKFUSE_TEST_FILL_ONLY: built only).
inline void check_knob_cases(const std::vector<KnobCase> &cases, const std::string &strategy,
                             std::optional<Device> only = std::nullopt) {
    for (Device d : test_devices()) {
        if (d == Device::opencl || (only && d != *only)) continue;
        std::vector<const KernelVariant *> kernels;
        for (const KnobCase &c : cases) kernels.push_back(kernel_with_knobs(c.key, strategy, d, c.knobs, 0, "test"));
        for (const BuildOutcome &b : build_kernels(kernels)) {
            INFO(b.message);
            REQUIRE(b.ok);
        }
        if (fill_only()) continue;
        std::mt19937_64 data(test_seed() + 1);
        for (size_t i = 0; i < cases.size(); ++i) {
            INFO(kernels[i]->name << " [" << kernels[i]->knob_summary() << "] on " << cases[i].key);
            require_match(check_kernel(*kernels[i], cases[i].key, data));
        }
    }
}

// The keys of a suite file under workloads/ of the source tree: BLOCKFUSE_SOURCE_DIR in the environment
// (a GPU host's copy of the tree), else `source_dir` (where the test was built).
inline std::vector<std::string> suite_keys(const std::string &source_dir, const std::string &name) {
    std::vector<std::string> keys;
    for (const auto &e : load_suite(env("BLOCKFUSE_SOURCE_DIR", source_dir) + "/workloads/" + name + ".txt"))
        keys.push_back(e.key);
    return keys;
}

// Each (key, message) pair: the key is refused with a WorkloadError whose text holds the message.
inline void require_key_errors(const std::vector<std::pair<const char *, const char *>> &cases) {
    for (auto [key, want] : cases) {
        INFO(key);
        try {
            canonical_key(key);
            FAIL("accepted");
        } catch (const WorkloadError &e) {
            INFO(e.what());
            CHECK(std::string(e.what()).find(want) != std::string::npos);
        }
    }
}

template <class Workload>
Comparison check_kernel(const KernelVariant &v, const Workload &w, std::mt19937_64 &rng) {
    return check_kernel(v, to_key(w), rng);
}

}  // namespace blockfuse::test
