// The tuner's search (tune/search.h) on real knob spaces with a synthetic cost, so that no kernel is built:
// proposals are valid, never repeated, reproducible from the seed, and the evolutionary search finds
// better points than random search at equal trials.
#define CATCH_CONFIG_MAIN
#include "tune/search.h"
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

using namespace blockfuse;

namespace {

// The H200's limits (sm_90), so that the CUDA spaces need no GPU here.
const LaunchLimits kH200{1024, 227 * 1024};

// A landscape over the space's dimensions: each dimension has a preferred value (chosen from the seed),
// the cost grows with the log-distance from it, and two dimensions interact, as tile sizes and chunks do.
struct SyntheticCost {
    std::map<std::string, int> best;
    explicit SyntheticCost(const SearchSpace &space, uint64_t seed) {
        std::mt19937_64 rng(seed);
        for (const auto &d : space.dims()) best[d.name] = d.values[rng() % d.values.size()];
    }
    double operator()(const Candidate &c) const {
        double cost = 1, prev = 0;
        for (const auto &[name, want] : best) {
            const int v = name == "max_registers" ? c.max_registers : c.knobs.at(name);
            const double d = std::log2((std::abs(v) + 1.0) / (std::abs(want) + 1.0));
            cost *= 1 + 0.3 * d * d + 0.1 * std::abs(d * prev);
            prev = d;
        }
        return cost;
    }
};

// The best cost found in `trials` proposals, measured one batch of 8 at a time as the tuner does.
double best_after(Search &search, const SyntheticCost &cost, int trials, std::vector<std::string> *ids = nullptr) {
    double best = kFailedScore;
    for (int done = 0; done < trials;) {
        const auto batch = search.propose(std::min(8, trials - done));
        if (batch.empty()) break;
        for (const Candidate &c : batch) {
            const double ms = cost(c);
            search.observe(c, ms);
            best = std::min(best, ms);
            if (ids) ids->push_back(c.id());
        }
        done += static_cast<int>(batch.size());
    }
    return best;
}

const char *kSpaces[][2] = {
    {"mbconv:n=8,c=32,h=28,w=28,e=4,k=3,stride=1,dtype=f16", "fused"},
    {"ffn:n=8,c=64,h=28,w=28,e=4,dtype=f16", "fused"},
    {"conv2d:n=8,c=64,h=28,w=28,k=64,r=3,s=3,pad=1,dtype=f16", "direct"},
};

}  // namespace

TEST_CASE("proposals are valid, unique and reproducible from the seed") {
    for (const auto &[key, strategy] : kSpaces) {
        const auto op = parse_op(key);
        const SearchSpace space(*op, strategy, Device::cuda, kH200);
        INFO(key << " " << strategy << ": " << space.size() << " points");
        REQUIRE(space.dims().size() >= 2);
        const SyntheticCost cost(space, 7);
        std::vector<std::string> a, b, c;
        auto s1 = make_search("evolutionary", space, 42), s2 = make_search("evolutionary", space, 42),
             s3 = make_search("evolutionary", space, 43);
        best_after(*s1, cost, 40, &a);
        best_after(*s2, cost, 40, &b);
        best_after(*s3, cost, 40, &c);
        CHECK(a == b);
        CHECK(a != c);
        CHECK(std::set<std::string>(a.begin(), a.end()).size() == a.size());
        auto r = make_search("random", space, 42);
        std::vector<std::string> rs;
        best_after(*r, cost, 40, &rs);
        for (const auto &ids : {a, rs}) CHECK(ids.size() == 40);
    }
}

TEST_CASE("every proposal passes the space's checks; invalid points are filtered before building") {
    const auto op = parse_op(kSpaces[0][0]);
    const SearchSpace space(*op, "fused", Device::cuda, kH200);
    auto s = make_search("random", space, 1);
    const SyntheticCost cost(space, 1);
    for (int i = 0; i < 8; ++i)
        for (const Candidate &c : s->propose(8)) {
            CHECK(space.invalid(c).empty());
            s->observe(c, cost(c));
        }
    // The fused MBConv space holds points beyond 1024 threads or 227 KB of shared memory.
    CHECK(s->invalid_filtered() > 0);
    for (const auto &[why, n] : s->invalid_reasons()) CHECK_FALSE(why.empty());
}

TEST_CASE("held knobs (tune --knob) leave the space and every candidate; unknown ones are refused") {
    const auto op = parse_op(kSpaces[0][0]);
    const SearchSpace full(*op, "fused", Device::cuda, kH200);
    const SearchSpace held(*op, "fused", Device::cuda, kH200, {{"chunk", 16}, {"max_registers", 64}});
    auto has_dim = [](const SearchSpace &s, const std::string &n) {
        return std::any_of(s.dims().begin(), s.dims().end(), [&](const SearchSpace::Dim &d) { return d.name == n; });
    };
    REQUIRE(has_dim(full, "chunk"));
    CHECK_FALSE(has_dim(held, "chunk"));
    CHECK_FALSE(has_dim(held, "max_registers"));
    CHECK(held.size() < full.size());
    auto s = make_search("random", held, 3);
    for (const Candidate &c : s->propose(8)) {
        CHECK(c.max_registers == 64);
        CHECK(held.kernel(c, "test")->schedule_knobs().at("chunk") == 16);
    }
    CHECK_THROWS_WITH(SearchSpace(*op, "fused", Device::cuda, kH200, {{"cpu_lanes", 8}}),
                      Catch::Contains("searches no knob of that name"));
    CHECK_THROWS_AS(SearchSpace(*op, "fused", Device::cuda, kH200, {{"tile_x", 4096}}), WorkloadError);
}

TEST_CASE(
    "a tensor-core module's register caps: the rule's is raised to the mma.sync floor, one set on purpose is kept") {
    const char *spaces[][2] = {
        {"mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,dtype=f16", "fused_tc"},
        {"ffn:n=8,c=64,h=28,w=28,e=4,dtype=f16", "layer_by_layer_tc"},
        {"conv2d:n=8,c=64,h=28,w=28,k=64,r=3,s=3,pad=1,dtype=f16", "tensor_cores"},
    };
    for (const auto &[key, strategy] : spaces) {
        INFO(key << " " << strategy);
        const auto op = parse_op(key);
        const SearchSpace space(*op, strategy, Device::cuda, kH200);
        const auto regs = std::find_if(space.dims().begin(), space.dims().end(),
                                       [](const SearchSpace::Dim &d) { return d.name == "max_registers"; });
        REQUIRE(regs != space.dims().end());
        // Below the floor too: a small tiling gains occupancy there (bench/results/h100/packed-taps/).
        CHECK(std::count(regs->values.begin(), regs->values.end(), 128) == 1);
        CHECK(std::count(regs->values.begin(), regs->values.end(), 168) == 1);
        const SearchSpace low(*op, strategy, Device::cuda, kH200, {{"max_registers", 128}});
        const SearchSpace rule(*op, strategy, Device::cuda, kH200, {{"max_registers", 0}});
        const auto *a = low.kernel(low.default_candidate(), "test");
        const auto *b = rule.kernel(rule.default_candidate(), "test");
        CHECK(a->jit_register_cap() == 128);
        CHECK(b->jit_register_cap() >= 168);
    }
    // A CUDA-core kernel keeps every cap.
    const auto op = parse_op(kSpaces[0][0]);
    const SearchSpace fused(*op, "fused", Device::cuda, kH200, {{"max_registers", 64}});
    CHECK(fused.kernel(fused.default_candidate(), "test")->jit_register_cap() == 64);
}

TEST_CASE("seeds come first, in order") {
    const auto op = parse_op(kSpaces[0][0]);
    const SearchSpace space(*op, "fused", Device::cuda, kH200);
    auto s = make_search("evolutionary", space, 5);
    const Candidate d = space.default_candidate();
    s->add_seed(d);
    const auto first = s->propose(1);
    REQUIRE(first.size() == 1);
    CHECK(first[0] == d);
}

TEST_CASE("before anything is measured, the evolutionary search proposes the seeds' neighbours, random search not") {
    // A first round planned on the build machine and measured on the GPU host has no measurement to breed from.
    const auto op = parse_op("ffn:n=128,c=256,h=14,w=14,e=4,act=relu,dtype=f16");
    const SearchSpace space(*op, "layer_by_layer_tc", Device::cuda, kH200);
    const Candidate seed = space.default_candidate();
    auto differing = [&](const Candidate &c) {
        int n = c.max_registers != seed.max_registers;
        for (const auto &[k, v] : c.knobs) n += seed.knobs.count(k) == 0 || seed.knobs.at(k) != v;
        return n;
    };
    for (const char *name : {"evolutionary", "random"}) {
        auto s = make_search(name, space, 11);
        s->add_seed(seed);
        const auto batch = s->propose(41);
        REQUIRE(batch.size() == 41);
        CHECK(batch[0] == seed);
        const auto near =
            std::count_if(batch.begin() + 1, batch.end(), [&](const Candidate &c) { return differing(c) <= 2; });
        INFO(name << ": " << near << " of 40 within two knobs of the seed");
        if (std::string(name) == "evolutionary") CHECK(near >= 28);  // 10% are random points
        else CHECK(near <= 4);
    }
}

TEST_CASE("evolutionary search beats random search at equal trials") {
    // Over 24 landscapes per space, 48 trials each: the evolutionary search's best is better more often
    // and better on average (in log cost: the ratio to the landscape's optimum of 1).
    for (const auto &[key, strategy] : kSpaces) {
        const auto op = parse_op(key);
        const SearchSpace space(*op, strategy, Device::cuda, kH200);
        double log_evo = 0, log_rand = 0;
        int evo_wins = 0, rand_wins = 0;
        for (uint64_t seed = 1; seed <= 24; ++seed) {
            const SyntheticCost cost(space, 1000 + seed);
            auto evo = make_search("evolutionary", space, seed), rnd = make_search("random", space, seed);
            const double e = best_after(*evo, cost, 48), r = best_after(*rnd, cost, 48);
            log_evo += std::log(e), log_rand += std::log(r);
            evo_wins += e < r, rand_wins += r < e;
        }
        INFO(key << " " << strategy << ": geomean best evolutionary " << std::exp(log_evo / 24) << ", random "
                 << std::exp(log_rand / 24) << "; wins " << evo_wins << " to " << rand_wins);
        CHECK(log_evo < log_rand);
        CHECK(evo_wins > rand_wins);
    }
}

TEST_CASE("a wgmma point takes the tiling wgmma allows; --knob wgmma=1 alone makes a space; not off compute 9.0") {
    const LaunchLimits hopper{1024, 227 * 1024, 65536, 90}, ampere{1024, 163 * 1024, 65536, 80};
    // (key, strategy, the wgmma knob's prefix): a convolution's GEMM, and a block layer's (layer 0's)
    const char *spaces[][3] = {{"conv2d:n=8,c=64,h=28,w=28,k=64,r=3,s=3,pad=1,dtype=f16", "tensor_cores", ""},
                               {"ffn:n=8,c=64,h=28,w=28,e=4,dtype=f16", "layer_by_layer_tc", "tc0_"}};
    for (const auto &[key, strategy, prefix] : spaces) {
        INFO(key << " " << strategy);
        const std::string p = prefix;
        const auto op = parse_op(key);
        const SearchSpace space(*op, strategy, Device::cuda, hopper, {{p + "wgmma", 1}});
        auto s = make_search("random", space, 5);
        int valid = 0;
        for (const Candidate &c : s->propose(16)) {
            const auto k = space.kernel(c, "test")->schedule_knobs();
            CHECK(k.at(p + "wgmma") == 1);
            CHECK(k.at(p + "warp_m") == 16);
            CHECK(k.at(p + "warps_n") == 1);
            CHECK(k.at(p + "pad") == 0);
            CHECK(k.at(p + "warps_m") % 4 == 0);
            valid += space.invalid(c).empty();
        }
        CHECK(valid > 0);
        // The same point on an Ampere GPU: refused before anything is built.
        const SearchSpace off(*op, strategy, Device::cuda, ampere);
        Candidate c = off.default_candidate();
        c.knobs[p + "wgmma"] = 1;
        CHECK_THAT(off.invalid(c), Catch::Contains("needs a GPU of compute capability 9.0"));
    }
}

TEST_CASE("a grouped conv2d's input tile in shared memory (stage_input=2) is refused unless one block holds every "
          "output channel") {
    // Measured on the H200 (bench/results/h200/dense-wgmma-round/): groups of 8 with c=k=128 and a block of 64 or 32
    // output channels failed their launch in Halide's bounds check (the tile read channels up to 191 of 128).
    struct Case {
        const char *key;
        int threads_k, vec_k;
        bool refused;
    };
    // Tiles that divide K: the knobs' own check (conv2d_gpu_knobs_error) refuses only partial tiles, which is what a
    // block's grouped layer, with constant channel counts, needs.
    for (const Case &t : std::vector<Case>{
             {"conv2d:n=3,c=48,h=9,w=9,k=48,r=3,s=3,pad=1,groups=6,dtype=f16", 4, 4, true},    // 16 of 48
             {"conv2d:n=3,c=48,h=9,w=9,k=48,r=3,s=3,pad=1,groups=6,dtype=f16", 16, 4, false},  // 64 >= 48
             {"conv2d:n=3,c=36,h=9,w=9,k=36,r=3,s=3,pad=1,groups=6,dtype=f16", 12, 8, true},   // K % 8: 12 of 36
             {"conv2d:n=3,c=48,h=9,w=9,k=48,r=3,s=3,pad=1,dtype=f16", 4, 4, false}}) {         // dense
        INFO(t.key << " threads_k=" << t.threads_k << " vec_k=" << t.vec_k);
        const auto op = parse_op(t.key);
        const SearchSpace space(*op, "direct", Device::cuda, kH200);
        Candidate c = space.default_candidate();
        c.knobs["flat_threads"] = 0;
        c.knobs["stage_channels"] = 0;
        c.knobs["threads_k"] = t.threads_k;
        c.knobs["vec_k"] = t.vec_k;
        c.knobs["stage_input"] = 0;
        REQUIRE(space.invalid(c).empty());
        c.knobs["stage_input"] = 2;
        if (t.refused) CHECK_THAT(space.invalid(c), Catch::Contains("stage_input=2"));
        else CHECK(space.invalid(c).empty());
    }
}

TEST_CASE(
    "a grouped conv2d's window in registers (stage_input=1), which its generator cannot build, is refused first") {
    // The conv2d generator's grouped kernels fail with "unable to infer constant upper bound on extent" there;
    // dense ones build it.
    for (const auto &[key, refused] : std::vector<std::pair<std::string, bool>>{
             {"conv2d:n=3,c=48,h=9,w=9,k=48,r=3,s=3,pad=1,groups=6,dtype=f16", true},
             {"conv2d:n=3,c=48,h=9,w=9,k=48,r=3,s=3,pad=1,dtype=f16", false}}) {
        INFO(key);
        const auto op = parse_op(key);
        const SearchSpace space(*op, "direct", Device::cuda, kH200);
        Candidate c = space.default_candidate();
        c.knobs["stage_input"] = 1;
        c.knobs["flat_threads"] = 0;
        c.knobs["stage_channels"] = 0;
        if (refused) CHECK_THAT(space.invalid(c), Catch::Contains("stage_input=1"));
        else CHECK(space.invalid(c).empty());
        c.knobs["stage_input"] = 0;
        CHECK(space.invalid(c).empty());
    }
}
