// The kernel cache (runtime/kernel_cache.h): what decides a kernel's identity, two processes building
// the same kernel at once, a failed build recorded and not retried until cleared, loading from the
// cache, a machine without generators; Halide's autoschedulers' kernels made, cached apart from ours, and
// checked against the float64 reference.
#define CATCH_CONFIG_MAIN
#include "runtime/autoscheduler.h"
#include "runtime/dispatch.h"
#include "runtime/op.h"
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace blockfuse;
namespace fs = std::filesystem;

namespace {
fs::path fresh_cache(const std::string &name) {
    const fs::path p = fs::path(BLOCKFUSE_TEST_TMP) / name;
    fs::remove_all(p);
    return p;
}
// A CPU kernel that builds in about a second.
KernelRequest small_kernel(const std::map<std::string, int> &knobs = {}) {
    return kernel_with_knobs("conv2d:n=1,c=4,h=3,w=3,k=4,r=1,s=1,dtype=f32", "direct", Device::cpu, knobs, 0, "test")
        ->request();
}
}  // namespace

TEST_CASE("a kernel's identity: its params, knobs and target, not their order", "[cache]") {
    KernelRequest a = small_kernel(), b = a;
    std::reverse(b.params.begin(), b.params.end());
    CHECK(a.hash() == b.hash());
    CHECK(a.hash() != small_kernel({{"cpu_tile_x", 2}}).hash());
    b = a;
    b.target += "-debug";
    CHECK(a.hash() != b.hash());
    CHECK(a.hash().size() == 32);
    CHECK(a.function_name() == "bf_" + a.hash().substr(0, 16));
}

TEST_CASE("two processes building one kernel at once: one builds, both get it, nothing half-written", "[cache]") {
    const fs::path root = fresh_cache("cache_concurrent");
    const KernelRequest r = small_kernel({{"cpu_tile_x", 3}});
    pid_t kids[2];
    for (pid_t &k : kids) {
        k = fork();
        REQUIRE(k >= 0);
        if (k == 0) {
            const BuildOutcome o = ensure_built(r, root.string());
            _exit(!o.ok ? 1 : o.built ? 10 : 11);  // 10: built it, 11: found it built
        }
    }
    int codes[2];
    for (int i = 0; i < 2; ++i) {
        int status = 0;
        waitpid(kids[i], &status, 0);
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    INFO("exit codes " << codes[0] << ", " << codes[1]);
    CHECK(((codes[0] == 10 && codes[1] == 11) || (codes[0] == 11 && codes[1] == 10)));
    size_t entries = 0;
    for (const auto &e : fs::directory_iterator(root)) {
        const std::string n = e.path().filename().string();
        CHECK(n.rfind(".tmp-", 0) != 0);  // no temporary folder left behind
        if (e.is_directory()) ++entries;
    }
    CHECK(entries == 1);
    CHECK(fs::exists(root / r.hash() / "kernel.so"));
    CHECK(fs::exists(root / r.hash() / "description.json"));
    CHECK(fs::exists(root / r.hash() / "build.log"));
    const auto listed = list_cache(root.string());
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].status == "ok");
    CHECK(listed[0].bytes > 0);
}

TEST_CASE("a failed build is recorded and reported, not retried until cleared", "[cache]") {
    const fs::path root = fresh_cache("cache_failed");
    // hidden_vec must divide the chunk: the block generator refuses 3 with one message naming the knob.
    KernelRequest r = kernel_with_knobs("mbconv:n=1,c=8,h=5,w=5,e=2,k=3,stride=1,act=relu6,dtype=f32", "fused",
                                        Device::opencl, {{"hidden_vec", 3}, {"chunk", 8}}, 0, "test")
                          ->request();
    const BuildOutcome first = ensure_built(r, root.string());
    CHECK_FALSE(first.ok);
    CHECK(first.built);
    CHECK_THAT(first.message, Catch::Contains("hidden_vec = 3 must divide the chunk"));
    const BuildOutcome again = ensure_built(r, root.string());
    CHECK_FALSE(again.ok);
    CHECK_FALSE(again.built);  // remembered, not rebuilt
    CHECK_THAT(again.message, Catch::Contains("failed earlier") && Catch::Contains("build.log") &&
                                  Catch::Contains("cache clear --failed"));
    CHECK(list_cache(root.string()).at(0).status == "failed");
    CHECK(clear_cache(root.string(), true) == 1);
    CHECK(list_cache(root.string()).empty());
    CHECK(ensure_built(r, root.string()).built);  // cleared: tried again
}

TEST_CASE("a pipeline Halide knows to fail an assertion on every call is a failed build, not a kernel", "[cache]") {
    // A stand-in conv2d.generator: Halide's warning on stderr, exit status 0 (as Halide leaves it).
    const fs::path root = fresh_cache("cache_certain_assertion"), gen = root / "generators";
    fs::create_directories(gen);
    const fs::path script = gen / "conv2d.generator";
    std::ofstream(script)
        << "#!/bin/sh\necho 'Warning: This pipeline is guaranteed to fail an assertion at runtime: ' >&2\n"
           "echo 'halide_error_constraint_violated(\"weights1.min.0\", weights1.min.0, \"0\", 0)' >&2\n";
    fs::permissions(script, fs::perms::owner_all);
    setenv("BLOCKFUSE_GENERATOR_DIR", gen.c_str(), 1);
    const BuildOutcome b = ensure_built(small_kernel({{"cpu_tile_x", 7}}), (root / "cache").string());
    unsetenv("BLOCKFUSE_GENERATOR_DIR");
    CHECK(b.built);
    CHECK_FALSE(b.ok);
    CHECK_THAT(b.message, Catch::Contains("guaranteed to fail an assertion") && Catch::Contains("weights1.min.0"));
}

TEST_CASE("kernels load from the cache once built, and a machine without generators says what to do", "[cache]") {
    const fs::path root = fresh_cache("cache_load");
    setenv("BLOCKFUSE_KERNEL_CACHE", root.c_str(), 1);
    const KernelRequest r = small_kernel({{"cpu_tile_x", 5}});
    const LoadedKernel &k = load_kernel(r);
    CHECK(k.origin.rfind("generated in", 0) == 0);
    CHECK(k.argv != nullptr);
    REQUIRE(k.metadata != nullptr);
    CHECK(k.metadata->num_arguments == 12);  // input, weights, bias, 8 scalars, output
    // At another JIT register cap, a library of its own (its state would hold the CUDA module compiled at the
    // first cap); at the same cap, the same one again.
    const LoadedKernel &capped = load_kernel(r, 168);
    CHECK(&capped != &k);
    CHECK(reinterpret_cast<void *>(capped.argv) != reinterpret_cast<void *>(k.argv));
    CHECK(capped.metadata->num_arguments == 12);
    CHECK(&load_kernel(r, 168) == &capped);
    CHECK(&load_kernel(r) == &k);
    const fs::path copies = fs::temp_directory_path() / ("blockfuse-" + std::to_string(getpid()));
    CHECK((!fs::exists(copies) || fs::is_empty(copies)));  // each copy's name removed once it is open
    const KernelRequest other = small_kernel({{"cpu_tile_x", 6}});
    setenv("BLOCKFUSE_GENERATOR_DIR", (root / "nowhere").c_str(), 1);
    CHECK_THROWS_WITH(load_kernel(other), Catch::Contains("nor in the kernel cache") &&
                                              Catch::Contains("no conv2d.generator") && Catch::Contains("cache fill"));
    unsetenv("BLOCKFUSE_GENERATOR_DIR");
    unsetenv("BLOCKFUSE_KERNEL_CACHE");
}

TEST_CASE("Halide's CPU autoschedulers schedule conv2d and blocks through the cache, checked against float64",
          "[cache][autoscheduler]") {
    const char *was = std::getenv("BLOCKFUSE_KERNEL_CACHE");
    const std::string previous = was ? was : "";
    setenv("BLOCKFUSE_KERNEL_CACHE", fresh_cache("cache_autoscheduler").c_str(), 1);
    std::mt19937_64 rng(11);
    // odd sizes: a partial vector of channels, a ragged tile, an asymmetric window and stride
    for (const char *key : {"conv2d:n=1,c=5,h=7,w=9,k=6,r=3,s=1,stride_h=2,stride_w=1,pad_t=1,pad_b=0,pad_l=0,pad_r=0,"
                            "bias=1,act=relu,dtype=f32",
                            "mbconv:n=1,c=8,h=7,w=5,e=2,k=3,stride=1,se=1,act=silu,dtype=f32"})
        for (const std::string name : {"Mullapudi2016", "Adams2019", "Li2018"}) {
            INFO(key << " " << name);
            const auto op = parse_op(key);
            const KernelVariant v = autoscheduled_kernel(*op, name, Device::cpu);
            CHECK(kernel_provider(v) == "halide-autoscheduler-" + name);
            const auto &p = v.request().params;
            CHECK(std::find(p.begin(), p.end(), "autoscheduler=" + name) != p.end());  // a cache entry of its own
            auto data = op->data(rng)->with_fresh_output();                            // output poisoned
            data->run(v);
            const Comparison c = data->check();
            CHECK(c.ok());
        }
    CHECK_THROWS_WITH(
        autoscheduled_kernel(*parse_op("conv2d:n=1,c=4,h=3,w=3,k=4,r=1,s=1"), "Anderson2021", Device::cpu),
        Catch::Contains("schedules GPUs only"));
    CHECK_THROWS_WITH(autoscheduled_kernel(*parse_op("conv2d:n=1,c=4,h=3,w=3,k=4,r=1,s=1"), "Adams2019", Device::cuda),
                      Catch::Contains("schedules CPUs only"));
    if (previous.empty()) unsetenv("BLOCKFUSE_KERNEL_CACHE");
    else setenv("BLOCKFUSE_KERNEL_CACHE", previous.c_str(), 1);
}
