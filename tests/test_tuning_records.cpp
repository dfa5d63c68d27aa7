// Tuning records (bench/tuning_records.h): loading and its errors, the fastest applicable record,
// and the dispatcher taking it (or keeping the registry's order where none applies).
#define CATCH_CONFIG_MAIN
#include "bench/harness.h"
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <random>

using namespace blockfuse;

namespace {
std::string write_temp(const std::string &name, const std::string &text) {
    const std::string path = std::string(BLOCKFUSE_TEST_TMP) + "/" + name;
    std::ofstream(path) << text;
    return path;
}
const char *kBlock = "mbconv:n=1,c=10,h=9,w=7,e=3,k=3,stride=1,act=relu6";  // CPU: layer by layer and fused
}  // namespace

TEST_CASE("tuning records load, canonicalize keys and pick the fastest applicable record", "[records]") {
    const std::string p = write_temp("records_ok.jsonl",
                                     R"({"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1", "target": "cpu", "variant": "a", "median_ms": 2.0}
{"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,stride=1,pad=1,groups=1,dtype=f32", "target": "cpu", "variant": "b", "median_ms": 1.0}
{"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1", "target": "cuda:NVIDIA H200", "variant": "c", "median_ms": 0.5}

{"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1", "target": "cpu", "variant": "gone", "median_ms": 0.1, "source": "x"}
)");
    TuningRecords r = TuningRecords::load(p);
    REQUIRE(r.records.size() == 4);
    const std::string key = canonical_key("conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1");
    CHECK(r.records[0].workload == key);  // stored canonical
    auto built = [](const std::string &n) { return n != "gone"; };
    REQUIRE(r.best(key, "cpu", built) != nullptr);
    CHECK(r.best(key, "cpu", built)->variant == "b");         // the fastest whose variant is built
    CHECK(r.best(key, "cuda:NVIDIA H200", built)->variant == "c");  // per target
    CHECK(r.best(key, "opencl", built) == nullptr);
    CHECK(r.best(canonical_key("conv2d:n=2,c=8,h=9,w=9,k=8,r=3,s=3,pad=1"), "cpu", built) == nullptr);
    std::remove(p.c_str());
}

TEST_CASE("a bad tuning-records file is one clear error naming the file and the line", "[records]") {
    CHECK_THROWS_WITH(TuningRecords::load(std::string(BLOCKFUSE_TEST_TMP) + "/no_such_records.jsonl"),
                      Catch::Contains("no_such_records.jsonl': no such file"));
    const std::vector<std::pair<std::string, std::string>> bad{
        {"{\"workload\": \"conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3\", \"target\": \"cpu\", \"variant\": \"a\", \"median_ms\": 1}\nnot json\n",
         "line 2: not a JSON object"},
        {R"({"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3", "variant": "a", "median_ms": 1})", "line 1: field 'target'"},
        {R"({"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3", "target": "cpu", "variant": "a", "median_ms": 0})",
         "line 1: field 'median_ms'"},
        {R"({"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3", "target": "cpu", "variant": "a", "median_ms": 1})",
         "line 1: invalid workload"},
    };
    for (const auto &[text, want] : bad) {
        const std::string p = write_temp("records_bad.jsonl", text);
        INFO(text);
        CHECK_THROWS_WITH(TuningRecords::load(p), Catch::Contains(want) && Catch::Contains("records_bad.jsonl"));
        std::remove(p.c_str());
    }
}

TEST_CASE("appended records load back", "[records]") {
    const std::string p = std::string(BLOCKFUSE_TEST_TMP) + "/records_rt.jsonl";
    std::remove(p.c_str());
    const std::string key = canonical_key(kBlock);
    append_records(p, {{key, "cpu", "v1", 0.25, "test"}});
    append_records(p, {{key, "cpu", "v2", 0.125, "test"}});  // appended, not overwritten
    TuningRecords r = TuningRecords::load(p);
    REQUIRE(r.records.size() == 2);
    CHECK(r.best(key, "cpu", [](const std::string &) { return true; })->variant == "v2");
    std::remove(p.c_str());
}

TEST_CASE("records from a results.json: the fastest passing variant per workload, for the run's GPU", "[records]") {
    // One new-style row (variant field), two old-style (variant in the strategy label), one failed check.
    const std::string p = write_temp("results_for_records.json", R"J({
 "context": {"device": "cuda", "gpu": {"name": "NVIDIA H200"}, "timestamp": "t", "halide_version": "21.0.0"},
 "results": [
  {"key": "mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16", "strategy": "layer_by_layer (lbl_a)", "runtime_ms": 0.10, "check_ok": true},
  {"key": "mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16", "strategy": "fused (fused_b) [note]", "runtime_ms": 0.08, "check_ok": true},
  {"key": "mbconv:n=8,c=24,h=56,w=56,e=6,k=3,stride=1,act=relu6,dtype=f16", "strategy": "fused (fused_c)", "variant": "fused_c", "runtime_ms": 0.05, "check_ok": false},
  {"key": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1", "strategy": "conv2d_x", "variant": "conv2d_x", "runtime_ms": 0.2, "check_ok": true}
 ]})J");
    const auto r = records_from_results(p);
    REQUIRE(r.size() == 2);
    CHECK(r[0].variant == "fused_b");  // fused_c was faster but failed its check
    CHECK(r[0].target == "cuda:NVIDIA H200");
    CHECK(r[0].median_ms == 0.08);
    CHECK(r[1].workload == canonical_key("conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1"));
    CHECK(r[1].variant == "conv2d_x");
    std::remove(p.c_str());
    const std::string q = write_temp("results_not.json", R"({"rows": []})");
    CHECK_THROWS_WITH(records_from_results(q), Catch::Contains("not a blockfuse results.json"));
    std::remove(q.c_str());
}

TEST_CASE("the dispatcher takes the recorded variant as the default, else keeps the registry's order", "[records]") {
    std::mt19937_64 rng(1);
    const SuiteEntry e{"mbconv", kBlock};
    auto first = [&](const TuningRecords *r) {
        auto c = build_candidates(e, Device::cpu, rng, nullptr, r);
        REQUIRE(c.size() >= 2);
        CHECK(c.front().row.is_default);
        return c.front().row.variant;
    };
    const std::string registry_pick = first(nullptr);
    // A record for the other CPU variant of this block makes it the default.
    auto all = build_candidates(e, Device::cpu, rng, nullptr, nullptr);
    const std::string other = all.back().row.variant;
    REQUIRE(other != registry_pick);
    TuningRecords r;
    r.path = "(test)";
    r.records.push_back({canonical_key(kBlock), "cpu", other, 1.0, ""});
    CHECK(first(&r) == other);
    // Records for another target, or naming a variant that is not built, leave the registry's pick.
    r.records = {{canonical_key(kBlock), "cuda:NVIDIA H200", other, 1.0, ""},
                 {canonical_key(kBlock), "cpu", "no_such_variant", 0.5, ""}};
    CHECK(first(&r) == registry_pick);
}
