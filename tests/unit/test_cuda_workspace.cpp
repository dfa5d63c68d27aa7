// A call's device allocations served from the caller's workspace (runtime/cuda_driver.h, WorkspaceScope): the
// pieces' placement and alignment, the bytes bf_workspace_bytes promises always suffice, a full workspace named,
// nesting, and Halide's allocation cache bypassed inside a scope (halide_can_reuse_device_allocations). The
// addresses are never dereferenced, so no GPU is needed; the GPU side is the CUDA-graph capture of blockfuse.torch
// (bench/torch_graph_probe.py).
#define CATCH_CONFIG_MAIN
#include "runtime/cuda_driver.h"
#include <HalideRuntime.h>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

using blockfuse::cuda::kWorkspaceAlign;
using blockfuse::cuda::WorkspaceScope;

TEST_CASE("pieces are aligned, consecutive and the caller's", "[workspace]") {
    const uintptr_t base = 0x10000;
    uintptr_t p = 0;
    REQUIRE_FALSE(WorkspaceScope::active());
    REQUIRE_FALSE(WorkspaceScope::allocate(16, &p));  // no scope: the driver's memory
    {
        WorkspaceScope ws(base, 1000);
        REQUIRE(WorkspaceScope::active());
        REQUIRE(WorkspaceScope::allocate(100, &p));
        CHECK(p == base);
        REQUIRE(WorkspaceScope::allocate(100, &p));
        CHECK(p == base + kWorkspaceAlign);
        CHECK(WorkspaceScope::owns(base + kWorkspaceAlign));
        CHECK(WorkspaceScope::owns(base + 999));
        CHECK_FALSE(WorkspaceScope::owns(base + 1000));
        CHECK_FALSE(WorkspaceScope::owns(base - 1));
        CHECK(ws.exhausted().empty());
        REQUIRE_FALSE(WorkspaceScope::allocate(600, &p));  // 512 + 600 > 1000
        CHECK(ws.exhausted() == "the workspace of 1000 bytes has 488 left, the call allocates 600 more");
        CHECK(ws.used() == kWorkspaceAlign + 100);
    }
    CHECK_FALSE(WorkspaceScope::active());
    CHECK_FALSE(WorkspaceScope::owns(base));
}

TEST_CASE("the measured total plus one alignment per piece always fits", "[workspace]") {
    std::mt19937_64 rng(std::random_device{}());
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<size_t> sizes(1 + rng() % 12);
        uint64_t total = 0;
        for (auto &s : sizes) total += (s = 1 + rng() % 100000);
        const uintptr_t base = 0x100000 + rng() % 4096;  // any address, not only an aligned one
        WorkspaceScope ws(base, total + sizes.size() * kWorkspaceAlign);
        uintptr_t prev_end = base;
        for (size_t s : sizes) {
            uintptr_t p = 0;
            INFO("trial " << trial << ", base " << base << ", piece of " << s);
            REQUIRE(WorkspaceScope::allocate(s, &p));
            CHECK(p % kWorkspaceAlign == 0);
            CHECK(p >= prev_end);
            prev_end = p + s;
        }
        CHECK(prev_end <= base + total + sizes.size() * kWorkspaceAlign);
    }
}

TEST_CASE("nested scopes: the innermost serves, the outer is back after it", "[workspace]") {
    uintptr_t p = 0;
    WorkspaceScope outer(0x20000, 4096);
    {
        WorkspaceScope inner(0x90000, 512);
        REQUIRE(WorkspaceScope::allocate(10, &p));
        CHECK(p == 0x90000);
        CHECK_FALSE(WorkspaceScope::owns(0x20000));
    }
    REQUIRE(WorkspaceScope::allocate(10, &p));
    CHECK(p == 0x20000);
}

TEST_CASE("Halide's allocation cache is bypassed inside a scope only", "[workspace]") {
    // A piece in the cache would outlive the caller's workspace and be handed to a later call.
    halide_reuse_device_allocations(nullptr, true);
    CHECK(halide_can_reuse_device_allocations(nullptr));
    {
        WorkspaceScope ws(0x30000, 256);
        CHECK_FALSE(halide_can_reuse_device_allocations(nullptr));
    }
    CHECK(halide_can_reuse_device_allocations(nullptr));
    halide_reuse_device_allocations(nullptr, false);  // the setting outside a scope stays Halide's
    CHECK_FALSE(halide_can_reuse_device_allocations(nullptr));
    halide_reuse_device_allocations(nullptr, true);
}
