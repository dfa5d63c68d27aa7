// Tuning records (runtime/tuning_records.h): loading and its errors, the fastest applicable record, the
// dispatcher taking it and rebuilding its kernel from the knobs, records from a results.json.
#define CATCH_CONFIG_MAIN
#include "bench/harness.h"
#include "build_info.h"
#include "runtime/check.h"
#include "runtime/op.h"
#include "schedules/heuristics.h"
#include "tune/tuner.h"
#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

using namespace blockfuse;

namespace {
std::string write_temp(const std::string &name, const std::string &text) {
    const std::string path = std::string(BLOCKFUSE_TEST_TMP) + "/" + name;
    std::ofstream(path) << text;
    return path;
}
const char *kConv = "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1";

std::string record_line(const std::string &workload, const std::string &strategy, const std::string &family,
                        const std::string &knobs, const std::string &target, double ms, const std::string &extra = "") {
    return R"({"version": 2, "workload": ")" + workload + R"(", "strategy": ")" + strategy + R"(", "family": ")" +
           family + R"(", "knobs": )" + knobs + R"(, "target": ")" + target + R"(", "halide_version": ")" +
           BLOCKFUSE_HALIDE_VERSION + R"(", "median_ms": )" + std::to_string(ms) + extra + "}\n";
}
}  // namespace

TEST_CASE("tuning records load, canonicalize keys and give the fastest passing record per target and version",
          "[records]") {
    const std::string cpu = record_target(Device::cpu);
    const std::string text = record_line(kConv, "direct", "conv2d", R"({"cpu_tile_x": 2})", cpu, 2.0) +
                             record_line(canonical_key(kConv), "direct", "conv2d", R"({"cpu_tile_x": 8})", cpu, 1.0) +
                             record_line(kConv, "direct", "conv2d", R"({"vec_k": 8})", "cuda:NVIDIA H200:sm_90", 0.5) +
                             "\n" +
                             record_line(kConv, "direct", "conv2d", R"({"cpu_tile_x": 1})", cpu, 0.1,
                                         R"(, "failure": "wrong_answer", "check": "3 of 648 outside")");
    const std::string p = write_temp("records_ok.jsonl", text);
    TuningRecords r = TuningRecords::load({p});
    REQUIRE(r.records.size() == 4);
    const std::string key = canonical_key(kConv);
    CHECK(r.records[0].workload == key);  // stored canonical
    const TuningRecord *b = r.best(key, "direct", cpu, BLOCKFUSE_HALIDE_VERSION);
    REQUIRE(b != nullptr);
    CHECK(b->knobs.at("cpu_tile_x") == 8);  // the fastest that passed its check (the failed one is faster)
    CHECK(r.best(key, "", "cuda:NVIDIA H200:sm_90", BLOCKFUSE_HALIDE_VERSION)->median_ms == 0.5);
    CHECK(r.best(key, "direct", cpu, "20.0.0") == nullptr);  // another Halide version never applies
    CHECK(r.best(key, "direct", "opencl", BLOCKFUSE_HALIDE_VERSION) == nullptr);
    CHECK(r.best(canonical_key("conv2d:n=2,c=8,h=9,w=9,k=8,r=3,s=3,pad=1"), "direct", cpu, BLOCKFUSE_HALIDE_VERSION) ==
          nullptr);
    CHECK(r.elsewhere(key, cpu, BLOCKFUSE_HALIDE_VERSION).size() == 1);  // the CUDA one
    std::remove(p.c_str());
}

TEST_CASE("records timed after another L2 flush than the default compete only where no default one exists",
          "[records]") {
    const std::string cuda = "cuda:NVIDIA H200:sm_90";
    auto line = [&](const std::string &knobs, double ms, const std::string &flush) {
        return record_line(kConv, "direct", "conv2d", knobs, cuda, ms,
                           flush.empty() ? "" : std::string(R"(, "l2_flush": ")") + flush + "\"");
    };
    const std::string p =
        write_temp("records_flush.jsonl", line(R"({"vec_k": 8})", 0.30, "write") + line(R"({"vec_k": 4})", 0.40, "") +
                                              line(R"({"vec_k": 1})", 0.20, "read"));
    TuningRecords r = TuningRecords::load({p});
    const std::string key = canonical_key(kConv);
    CHECK(r.best(key, "direct", cuda, BLOCKFUSE_HALIDE_VERSION)->knobs.at("vec_k") == 8);  // not the read one
    const std::string q = write_temp("records_read.jsonl", line(R"({"vec_k": 1})", 0.20, "read"));
    CHECK(TuningRecords::load({q}).best(key, "direct", cuda, BLOCKFUSE_HALIDE_VERSION)->knobs.at("vec_k") == 1);
    std::remove(p.c_str());
    std::remove(q.c_str());
}

TEST_CASE("a kernel's latest record stands for it: a later measurement of the same knobs replaces an earlier one",
          "[records]") {
    const std::string cuda = "cuda:NVIDIA H200:sm_90";
    auto line = [&](const std::string &knobs, double ms, const std::string &extra = "") {
        return record_line(kConv, "direct", "conv2d", knobs, cuda, ms, extra);
    };
    const std::string key = canonical_key(kConv);
    // Kernel A (vec_k a) measured 0.10 on an older tree, 0.30 again later; kernel B (vec_k b) 0.20 in between; the
    // default kernel 0.05 as {} and 0.40 later with its value written out: a knob left out of a record is its declared
    // default, so the two are one kernel.
    const int d = schedule_knob_table("conv2d", Device::cuda).with_defaults().at("vec_k");
    const int a = d == 8 ? 2 : 8, b = d == 4 ? 2 : 4;
    auto vec_k = [](int v) { return R"({"vec_k": )" + std::to_string(v) + "}"; };
    const std::string p =
        write_temp("records_latest.jsonl", line(vec_k(a), 0.10) + line(vec_k(b), 0.20) + line(vec_k(a), 0.30) +
                                               line("{}", 0.05) + line(vec_k(d), 0.40));
    TuningRecords r = TuningRecords::load({p});
    const TuningRecord *best = r.best(key, "direct", cuda, BLOCKFUSE_HALIDE_VERSION);
    REQUIRE(best != nullptr);
    CHECK(best->knobs.at("vec_k") == b);
    CHECK(best->median_ms == Approx(0.20));
    // A later failure of the same kernel replaces its passing record; another register cap is another kernel.
    const std::string q =
        write_temp("records_latest_failed.jsonl",
                   line(R"({"vec_k": 4})", 0.20) + line(R"({"vec_k": 4})", 0.20, R"(, "failure": "launch")") +
                       line(R"({"vec_k": 4})", 0.25, R"(, "max_registers": 64)") + line(R"({"vec_k": 8})", 0.30));
    const TuningRecord *f = TuningRecords::load({q}).best(key, "direct", cuda, BLOCKFUSE_HALIDE_VERSION);
    REQUIRE(f != nullptr);
    CHECK(f->max_registers == 64);
    // `records best` picks as dispatch does.
    for (const auto &[file, ms, regs] : {std::tuple{p, 0.20, 0}, std::tuple{q, 0.25, 64}}) {
        std::ostringstream out;
        auto *old = std::cout.rdbuf(out.rdbuf());
        const int rc = print_best_records({file}, "H200", true);
        std::cout.rdbuf(old);
        REQUIRE(rc == 0);
        const nlohmann::json pick = nlohmann::json::parse(out.str());
        CHECK(pick.at("median_ms").get<double>() == Approx(ms));
        CHECK(pick.value("max_registers", 0) == regs);
    }
    std::remove(p.c_str());
    std::remove(q.c_str());
}

TEST_CASE("a record of this build's kernel outranks older builds' records, whatever the order of the files",
          "[records]") {
    const std::string cpu = record_target(Device::cpu);
    const std::string key = canonical_key(kConv);
    auto line = [&](int tile, double ms, const std::string &variant) {
        return record_line(kConv, "direct", "conv2d", R"({"cpu_tile_x": )" + std::to_string(tile) + "}", cpu, ms,
                           R"(, "variant": ")" + variant + "\"");
    };
    auto now = [](const TuningRecord &r) { return r.variant.rfind("now", 0) == 0; };
    // Kernel 2 measured by this build at 0.30, listed before an older build's 0.10 of the same knobs; kernel 8 by an
    // older build at 0.05; kernel 4 by this build at 0.40.
    const std::string p = write_temp("records_current.jsonl", line(2, 0.30, "now2") + line(2, 0.10, "old2") +
                                                                  line(8, 0.05, "old8") + line(4, 0.40, "now4"));
    TuningRecords r = TuningRecords::load({p});
    const TuningRecord *b = r.best(key, "direct", cpu, BLOCKFUSE_HALIDE_VERSION, now);
    REQUIRE(b != nullptr);
    CHECK(b->variant == "now2");  // 0.30: neither the older build's 0.10 of its knobs nor its 0.05 of others
    // Without the predicate, load order as before: the later 0.10 replaces 0.30, and 0.05 wins.
    CHECK(r.best(key, "direct", cpu, BLOCKFUSE_HALIDE_VERSION)->variant == "old8");
    // Only older builds' records: the fastest of them.
    const std::string q = write_temp("records_old.jsonl", line(2, 0.10, "old2") + line(8, 0.05, "old8"));
    CHECK(TuningRecords::load({q}).best(key, "direct", cpu, BLOCKFUSE_HALIDE_VERSION, now)->variant == "old8");
    // The dispatcher knows this build's kernel by its name: the record naming it is applied, not a faster one of
    // another name (another build's) for the same knobs or other knobs.
    const std::string name_now =
        kernel_with_knobs(kConv, "direct", Device::cpu,
                          schedule_knob_table("conv2d", Device::cpu).with_defaults({{"cpu_tile_x", 2}}), 0, "")
            ->name;
    const std::string d =
        write_temp("records_dispatch.jsonl",
                   line(2, 0.30, name_now) + line(2, 0.10, "conv2d_x@00000000") + line(8, 0.05, "conv2d_y@00000000"));
    TuningRecords rd = TuningRecords::load({d});
    const Pick pick = dispatch(kConv, "direct", Device::cpu, &rd);
    REQUIRE(pick.record != nullptr);
    CHECK(pick.record->variant == name_now);
    CHECK(pick.variant->name == name_now);
    std::remove(p.c_str());
    std::remove(q.c_str());
    std::remove(d.c_str());
}

TEST_CASE("a CUDA record says which L2 flush it was timed with, and keeps it through a write and a load", "[records]") {
    const std::string cuda = "cuda:NVIDIA H200:sm_90";
    const std::string p =
        write_temp("records_flush.jsonl",
                   record_line(kConv, "direct", "conv2d", R"({"vec_k": 8})", cuda, 0.5, R"(, "l2_flush": "read")") +
                       record_line(kConv, "direct", "conv2d", R"({"vec_k": 4})", cuda, 0.6));
    const TuningRecords r = TuningRecords::load({p});
    REQUIRE(r.records.size() == 2);
    CHECK(r.records[0].l2_flush == "read");
    CHECK(r.records[1].l2_flush.empty());  // older records: not recorded
    const std::string q = std::string(BLOCKFUSE_TEST_TMP) + "/records_flush_out.jsonl";
    std::remove(q.c_str());
    append_records(q, r.records);
    const TuningRecords again = TuningRecords::load({q});
    CHECK(again.records[0].l2_flush == "read");
    CHECK(again.records[1].l2_flush.empty());
    std::remove(p.c_str());
    std::remove(q.c_str());
}

TEST_CASE("a version 2 record's tensor-core cap below the mma.sync floor reads as the floor it ran at; version 3 "
          "keeps it",
          "[records]") {
    const std::string cuda = "cuda:NVIDIA H200:sm_90", tc = "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1,dtype=f16";
    std::string v3 = record_line(tc, "tensor_cores", "conv2d_tc", "{}", cuda, 0.4, R"(, "max_registers": 128)");
    v3.replace(v3.find(R"("version": 2)"), 12, R"("version": 3)");
    const std::string p =
        write_temp("records_caps.jsonl",
                   record_line(tc, "tensor_cores", "conv2d_tc", "{}", cuda, 0.5, R"(, "max_registers": 96)") +
                       record_line(tc, "tensor_cores", "conv2d_tc", "{}", cuda, 0.6, R"(, "max_registers": 255)") +
                       record_line(kConv, "direct", "conv2d", "{}", cuda, 0.7, R"(, "max_registers": 64)") + v3);
    const TuningRecords r = TuningRecords::load({p});
    REQUIRE(r.records.size() == 4);
    CHECK(r.records[0].max_registers == 168);  // JITted at the floor then
    CHECK(r.records[1].max_registers == 255);
    CHECK(r.records[2].max_registers == 64);  // a CUDA-core kernel's cap was always its own
    CHECK(r.records[3].max_registers == 128);
    // written back as version 3, the caps they ran at
    const std::string q = std::string(BLOCKFUSE_TEST_TMP) + "/records_caps_out.jsonl";
    std::remove(q.c_str());
    append_records(q, r.records);
    std::ifstream in(q);
    const std::string first((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(first.find(R"("version":3)") != std::string::npos);
    CHECK(TuningRecords::load({q}).records[0].max_registers == 168);
    std::remove(p.c_str());
    std::remove(q.c_str());
}

TEST_CASE("a bad tuning-records file is one clear error naming the file and the line", "[records]") {
    CHECK_THROWS_WITH(TuningRecords::load({std::string(BLOCKFUSE_TEST_TMP) + "/no_such_records.jsonl"}),
                      Catch::Contains("no_such_records.jsonl': no such file"));
    const std::string cpu = record_target(Device::cpu);
    const std::vector<std::pair<std::string, std::string>> bad{
        {record_line(kConv, "direct", "conv2d", "{}", cpu, 1) + "not json\n", "line 2: not a JSON object"},
        {R"({"workload": "conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3", "target": "cpu", "variant": "a", "median_ms": 1})",
         "line 1: not a version 2 or 3 record"},
        {record_line(kConv, "direct", "conv2d", "{}", "", 1), "line 1: field 'target'"},
        {record_line(kConv, "direct", "conv2d", "{}", cpu, 0), "line 1: field 'median_ms'"},
        {record_line(kConv, "direct", "conv2d", R"({"chunk": 8})", cpu, 1), "'chunk' is not a knob of the conv2d"},
        {record_line(kConv, "fused", "conv2d", "{}", cpu, 1), "strategy 'fused' is not one of the workload's"},
        {record_line("conv2d:n=1,c=8,h=9,w=9,k=8,r=3", "direct", "conv2d", "{}", cpu, 1), "line 1: invalid workload"},
        {record_line(kConv, "direct", "conv2d", "{}", cpu, 1, R"(, "failure": "slow")"), "field 'failure' = 'slow'"},
    };
    for (const auto &[text, want] : bad) {
        const std::string p = write_temp("records_bad.jsonl", text);
        INFO(text);
        CHECK_THROWS_WITH(TuningRecords::load({p}), Catch::Contains(want) && Catch::Contains("records_bad.jsonl"));
        std::remove(p.c_str());
    }
}

TEST_CASE("the dispatcher rebuilds a record's kernel from its knobs; without one it says so and keeps its policy",
          "[records][dispatch]") {
    const char *block = "mbconv:n=1,c=10,h=9,w=7,e=3,k=3,stride=1,act=relu6,dtype=f32";
    const std::string cpu = record_target(Device::cpu);
    const std::string p =
        write_temp("records_dispatch.jsonl",
                   record_line(block, "fused", "block", R"({"tile_x": 4, "tile_y": 2, "chunk": 6})", cpu, 0.02) +
                       record_line(block, "layer_by_layer", "block", "{}", cpu, 0.05) +
                       record_line(block, "fused", "block", R"({"tile_x": 16})", "cpu:another-machine", 0.001));
    const TuningRecords recs = TuningRecords::load({p});
    const Pick f = dispatch(block, "fused", Device::cpu, &recs);
    CHECK(f.source == "tuning record");
    CHECK(f.variant->knob("tile_x") == 4);  // this machine's record, not the faster one of another target
    CHECK(f.variant->knob("tile_y") == 2);
    CHECK(f.variant->knob("chunk") == 6);
    CHECK(default_strategy(block, Device::cpu, &recs) == "fused");  // the fastest record's strategy runs first
    CHECK(dispatch(block, "fused", Device::cpu, nullptr).source != "tuning record");
    // The record's kernel is built from its knobs and computes the block (float64 reference).
    const BlockWorkload w = parse_block(block);
    std::mt19937_64 rng(std::random_device{}());
    BlockTensors t = make_block_tensors(w);
    randomize(t, w, rng);
    run_block(*f.variant, w, t);
    const Comparison c = check_block(w, t);
    INFO(c.summary());
    CHECK(c.ok());
    // bench orders the kernels by it and says which record applied
    const auto chosen = choose_kernels(block, Device::cpu, Selection{}, &recs);
    REQUIRE(chosen.size() == 2);
    CHECK(chosen[0].strategy == "fused");
    CHECK(chosen[0].source == "tuning record");
    std::remove(p.c_str());
}

TEST_CASE("a record without a knob declared since rebuilds its kernel: that knob at its declared default, not the "
          "heuristic's",
          "[records][dispatch]") {
    const std::string cpu = record_target(Device::cpu);
    const KnobTable &table = schedule_knob_table("conv2d", Device::cpu);
    const std::map<std::string, int> heuristic = parse_op(kConv)->heuristic("direct", Device::cpu).knobs;
    const KnobDecl *newer = nullptr;  // a knob the heuristic sets away from its default: the one "added since"
    for (const KnobDecl &k : table.knobs)
        if (heuristic.count(k.name) && heuristic.at(k.name) != k.default_value) newer = &k;
    REQUIRE(newer != nullptr);
    std::string knobs;
    for (const auto &[name, v] : table.with_defaults(heuristic))
        if (name != newer->name) knobs += (knobs.empty() ? "" : ", ") + ("\"" + name + "\": " + std::to_string(v));
    const std::string p =
        write_temp("records_older.jsonl", record_line(kConv, "direct", "conv2d", "{" + knobs + "}", cpu, 1));
    const TuningRecords recs = TuningRecords::load({p});
    const Pick f = dispatch(kConv, "direct", Device::cpu, &recs);
    CHECK(f.source == "tuning record");
    INFO(newer->name);
    CHECK(f.variant->knob(newer->name) == newer->default_value);
    CHECK(dispatch(kConv, "direct", Device::cpu, nullptr).variant->knob(newer->name) == heuristic.at(newer->name));
    std::remove(p.c_str());
}

TEST_CASE("records from a bench results.json: every row with its knobs, failed checks recorded as failures",
          "[records]") {
    const std::string key = canonical_key(kConv);
    const std::string p = write_temp("results_rec.json", R"({"context": {"device": "cpu", "timestamp": "t",
      "halide_version": "21.0.0", "commit": "abc", "l2_flush": "read"}, "results": [
      {"key": ")" + key + R"(", "strategy_name": "direct", "family": "conv2d", "knobs": {"cpu_vec_k": 8},
       "record_target": "cpu:x", "variant": "v1", "runtime_ms": 1.5, "check_ok": true, "check": "ok"},
      {"key": ")" + key + R"(", "strategy_name": "direct", "family": "conv2d", "knobs": {"vec_k": 8},
       "record_target": "cuda:NVIDIA H200:sm_90", "variant": "v3", "runtime_ms": 0.5, "check_ok": true},
      {"key": ")" + key + R"(", "strategy_name": "direct", "family": "conv2d", "knobs": {"cpu_vec_k": 16},
       "record_target": "cpu:x", "variant": "v2", "runtime_ms": 0, "check_ok": false, "check": "2 wrong"},
      {"key": ")" + key + R"(", "strategy": "direct"}]})");
    const auto r = records_from_results(p);
    REQUIRE(r.size() == 3);  // the row without knobs is no kernel of ours
    CHECK(r[0].knobs.at("cpu_vec_k") == 8);
    CHECK(r[0].failure.empty());
    CHECK(r[0].halide_version == "21.0.0");
    CHECK(r[0].l2_flush.empty());  // a CPU row: no L2 flush
    CHECK(r[1].l2_flush == "read");
    CHECK(r[2].failure == "wrong_answer");
    CHECK_THROWS_WITH(records_from_results(write_temp("not_results.json", "{}")),
                      Catch::Contains("not a blockfuse results"));
    std::remove(p.c_str());
}
