#include "runtime/tuning_records.h"
#include "build_info.h"
#include "runtime/cuda_driver.h"
#include "runtime/dispatch.h"
#include "runtime/mma_ptx.h"
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fcntl.h>
#include <fstream>
#include <sys/file.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#ifndef BLOCKFUSE_SOURCE_DIR
#define BLOCKFUSE_SOURCE_DIR "."
#endif

namespace blockfuse {
namespace fs = std::filesystem;

Device target_device(const std::string &target) {
    return target.rfind("cuda", 0) == 0 ? Device::cuda : target.rfind("opencl", 0) == 0 ? Device::opencl : Device::cpu;
}

namespace {
const char *const kFailures[] = {"", "wrong_answer", "build", "launch", "crash", "timeout"};

bool default_flush(const TuningRecord &r) { return r.l2_flush.empty() || r.l2_flush == "write"; }

TuningRecord parse_record(const nlohmann::json &j, const std::string &where) {
    if (!j.is_object()) throw WorkloadError(where + "not a JSON object");
    const int version = j.value("version", 1);
    if (version != 2 && version != 3)
        throw WorkloadError(where +
                            "not a version 2 or 3 record (records name their knobs; see runtime/tuning_records.h)");
    TuningRecord r;
    for (auto [field, dst] : {std::pair{"workload", &r.workload},
                              {"strategy", &r.strategy},
                              {"family", &r.family},
                              {"target", &r.target},
                              {"halide_version", &r.halide_version}}) {
        if (!j.contains(field) || !j[field].is_string() || j[field].get<std::string>().empty())
            throw WorkloadError(where + "field '" + field + "' missing or not a non-empty string");
        *dst = j[field].get<std::string>();
    }
    if (!j.contains("knobs") || !j["knobs"].is_object())
        throw WorkloadError(where + "field 'knobs' missing or not an object");
    for (const auto &[k, v] : j["knobs"].items()) {
        if (!v.is_number_integer()) throw WorkloadError(where + "knob '" + k + "' is not an integer");
        r.knobs[k] = v.get<int>();
    }
    r.failure = j.value("failure", "");
    if (std::find(std::begin(kFailures), std::end(kFailures), r.failure) == std::end(kFailures))
        throw WorkloadError(where + "field 'failure' = '" + r.failure +
                            "' is not one of wrong_answer, build, launch, crash, timeout (or empty)");
    r.median_ms = j.value("median_ms", 0.0);
    if (r.failure.empty() && !(r.median_ms > 0))
        throw WorkloadError(where + "field 'median_ms' missing or not a positive number (and no failure recorded)");
    r.min_ms = j.value("min_ms", r.median_ms);
    r.max_ms = j.value("max_ms", r.median_ms);
    r.samples = j.value("samples", 0);
    r.max_registers = j.value("max_registers", 0);
    // Version 2: a tensor-core module JITted at mma_ptx::kMinRegisters whatever lower cap was asked, so that is
    // the cap its time was measured at (version 3 keeps a cap set on purpose as it is).
    if (version == 2 && r.max_registers > 0 && r.max_registers < mma_ptx::kMinRegisters &&
        uses_tensor_cores(r.family, r.strategy))
        r.max_registers = mma_ptx::kMinRegisters;
    r.commit = j.value("commit", "");
    r.variant = j.value("variant", "");
    r.check = j.value("check", "ok");
    r.tuning_seconds = j.value("tuning_seconds", 0.0);
    r.build_seconds = j.value("build_seconds", 0.0);
    r.rel_l2 = j.value("rel_l2", 0.0);
    r.searcher = j.value("searcher", "");
    r.trial = j.value("trial", 0);
    r.source = j.value("source", "");
    r.l2_flush = j.value("l2_flush", "");
    try {
        r.workload = canonical_key(r.workload);
        const auto strategies = strategies_of(r.workload);
        if (std::find(strategies.begin(), strategies.end(), r.strategy) == strategies.end())
            throw WorkloadError("strategy '" + r.strategy + "' is not one of the workload's");
        const KnobTable &table = schedule_knob_table(r.family, target_device(r.target));
        for (const auto &[k, v] : r.knobs)
            if (!table.find(k)) throw WorkloadError("'" + k + "' is not a knob of the " + r.family + " schedules");
    } catch (const WorkloadError &e) {
        throw WorkloadError(where + e.what());
    }
    return r;
}
}  // namespace

TuningRecords TuningRecords::load(const std::vector<std::string> &paths) {
    TuningRecords out;
    out.paths = paths;
    for (const auto &path : paths) {
        std::ifstream in(path);
        if (!in) throw WorkloadError("tuning records '" + path + "': no such file (or it cannot be read)");
        std::string line;
        for (int n = 1; std::getline(in, line); ++n) {
            if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
            const std::string where = "tuning records '" + path + "', line " + std::to_string(n) + ": ";
            nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
            if (j.is_discarded()) throw WorkloadError(where + "not a JSON object");
            out.records.push_back(parse_record(j, where));
        }
    }
    return out;
}

const TuningRecord *TuningRecords::best(const std::string &workload, const std::string &strategy,
                                        const std::string &target, const std::string &halide_version,
                                        const std::function<bool(const TuningRecord &)> &current) const {
    std::vector<const TuningRecord *> mine;
    for (const auto &r : records)
        if (r.workload == workload && (strategy.empty() || r.strategy == strategy) && r.target == target &&
            r.halide_version == halide_version)
            mine.push_back(&r);
    // A kernel's latest measurement stands for it: a later record of the same knobs (each at its declared default
    // where a record omits it), register cap and kind of L2 flush replaces an earlier one, passing or failed (the
    // code those knobs build may have changed between the two); a record of this build's kernel is never replaced
    // by one of an older build's, whatever the order of the files.
    std::vector<std::map<std::string, int>> knobs;
    std::vector<bool> now;
    for (const TuningRecord *r : mine) {
        knobs.push_back(schedule_knob_table(r->family, target_device(r->target)).with_defaults(r->knobs));
        now.push_back(!current || current(*r));
    }
    auto superseded = [&](size_t i) {
        for (size_t j = 0; j < mine.size(); ++j)
            if (j != i && ((now[j] && !now[i]) || (now[j] == now[i] && j > i)) &&
                mine[j]->strategy == mine[i]->strategy && mine[j]->max_registers == mine[i]->max_registers &&
                default_flush(*mine[j]) == default_flush(*mine[i]) && knobs[j] == knobs[i])
                return true;
        return false;
    };
    // Times are compared as they were measured: a record timed after a read-only L2 eviction (a clean L2) is
    // faster than the same kernel after the default write flush, so it competes only where no record of the
    // default (write, or not recorded: every record before the field) exists; likewise an older build's time only
    // where no record of this build's kernels exists.
    for (const bool of_now : {true, false}) {
        const TuningRecord *by_default = nullptr, *other = nullptr;
        for (size_t i = 0; i < mine.size(); ++i) {
            const TuningRecord &r = *mine[i];
            if (now[i] != of_now || !r.ok() || superseded(i)) continue;
            const TuningRecord *&b = default_flush(r) ? by_default : other;
            if (!b || r.median_ms < b->median_ms) b = &r;
        }
        if (by_default || other) return by_default ? by_default : other;
    }
    return nullptr;
}

size_t TuningRecords::for_target(const std::string &target, const std::string &halide_version) const {
    return size_t(std::count_if(records.begin(), records.end(), [&](const TuningRecord &r) {
        return r.target == target && r.halide_version == halide_version;
    }));
}

std::vector<const TuningRecord *> TuningRecords::elsewhere(const std::string &workload, const std::string &target,
                                                           const std::string &halide_version) const {
    std::vector<const TuningRecord *> out;
    for (const auto &r : records)
        if (r.workload == workload && (r.target != target || r.halide_version != halide_version)) out.push_back(&r);
    return out;
}

TuningRecord record_of(const KernelVariant &v, const std::string &workload, const std::string &strategy) {
    TuningRecord r;
    r.workload = workload;
    r.strategy = strategy;
    r.family = v.family;
    r.knobs = v.schedule_knobs();
    r.max_registers = v.max_registers;
    r.target = record_target(v.device);
    r.halide_version = BLOCKFUSE_HALIDE_VERSION;
    r.commit = BLOCKFUSE_GIT_COMMIT;
    r.variant = v.name;
    return r;
}

nlohmann::json record_json(const TuningRecord &r) {
    nlohmann::json j = {{"version", 3},
                        {"workload", r.workload},
                        {"strategy", r.strategy},
                        {"family", r.family},
                        {"knobs", r.knobs},
                        {"max_registers", r.max_registers},
                        {"target", r.target},
                        {"halide_version", r.halide_version},
                        {"commit", r.commit},
                        {"variant", r.variant},
                        {"median_ms", r.median_ms},
                        {"min_ms", r.min_ms},
                        {"max_ms", r.max_ms},
                        {"samples", r.samples},
                        {"check", r.check},
                        {"failure", r.failure},
                        {"tuning_seconds", r.tuning_seconds},
                        {"source", r.source}};
    if (r.build_seconds > 0) j["build_seconds"] = r.build_seconds;
    if (r.rel_l2 > 0) j["rel_l2"] = r.rel_l2;
    if (!r.searcher.empty()) j["searcher"] = r.searcher, j["trial"] = r.trial;
    if (!r.l2_flush.empty()) j["l2_flush"] = r.l2_flush;
    return j;
}

std::vector<TuningRecord> records_from_results(const std::string &results_json) {
    std::ifstream in(results_json);
    if (!in) throw WorkloadError("results '" + results_json + "': no such file (or it cannot be read)");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("context") || !j.contains("results") || !j["results"].is_array())
        throw WorkloadError("results '" + results_json + "': not a blockfuse results.json (context, results)");
    return records_from_results(j, results_json + " (" + j["context"].value("timestamp", "") + ")");
}

std::vector<TuningRecord> records_from_results(const nlohmann::json &j, const std::string &source) {
    const auto &ctx = j["context"];
    std::vector<TuningRecord> out;
    for (const auto &row : j["results"]) {
        if (!row.contains("knobs") || !row.contains("record_target")) continue;  // rows of no kernel of ours
        if (row.value("provider", "blockfuse") != "blockfuse")
            continue;  // an autoscheduler's kernel: no knob set of ours
        TuningRecord r;
        r.workload = canonical_key(row.value("key", ""));
        // results.json before its schema: "strategy" was the label, "strategy_name" the strategy
        r.strategy = row.contains("strategy_name") ? row.value("strategy_name", "") : row.value("strategy", "");
        r.family = row.value("family", "");
        r.knobs = row["knobs"].get<std::map<std::string, int>>();
        r.max_registers = row.value("max_registers", 0);
        r.target = row.value("record_target", "");
        r.halide_version = ctx.value("halide_version", "");
        r.commit = ctx.value("blockfuse_commit", ctx.value("commit", ""));
        r.variant = row.value("variant", "");
        r.median_ms = row.value("runtime_ms", 0.0);
        r.min_ms = row.value("min_ms", 0.0);
        r.max_ms = row.value("max_ms", 0.0);
        r.samples = row.value("samples", 0);
        r.check = row.value("check", "");
        if (!row.value("check_ok", false)) r.failure = "wrong_answer";
        r.source = source;
        if (r.target.rfind("cuda", 0) == 0) r.l2_flush = ctx.value("l2_flush", "");
        out.push_back(r);
    }
    return out;
}

void append_records(const std::string &path, const std::vector<TuningRecord> &records) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) throw WorkloadError("tuning records '" + path + "': cannot append to it");
    flock(fd, LOCK_EX);
    bool ok = true;
    for (const auto &r : records) {
        const std::string line = record_json(r).dump() + "\n";
        ok = ok && write(fd, line.data(), line.size()) == ssize_t(line.size());
    }
    flock(fd, LOCK_UN);
    close(fd);
    if (!ok) throw WorkloadError("tuning records '" + path + "': a write failed (disk full?)");
}

std::string record_target(Device d) {
    if (d == Device::cpu) return "cpu:" + host_target();
    if (d == Device::opencl) return "opencl";
    const auto &dev = cuda::device();
    if (dev.available) return "cuda:" + dev.name + ":sm_" + std::to_string(dev.cc_major) + std::to_string(dev.cc_minor);
    const char *other = std::getenv("BLOCKFUSE_GPU");  // e.g. "NVIDIA H200:sm_90"
    return std::string("cuda:") + (other && *other ? other : "(no GPU here)");
}

std::vector<std::string> default_record_files() {
    if (const char *e = std::getenv("BLOCKFUSE_TUNING_RECORDS")) {
        std::vector<std::string> out;
        std::string s = e, part;
        for (size_t i = 0; i <= s.size(); ++i) {
            if (i == s.size() || s[i] == ':') {
                if (!part.empty()) out.push_back(part);
                part.clear();
            } else {
                part += s[i];
            }
        }
        return out;
    }
    std::vector<std::string> out;
    // the source tree this was built from, else the working directory's (binaries carried elsewhere)
    fs::path dir = fs::path(BLOCKFUSE_SOURCE_DIR) / "autotune" / "records";
    if (!fs::is_directory(dir)) dir = fs::path("autotune") / "records";
    if (fs::is_directory(dir))
        for (const auto &e : fs::directory_iterator(dir))
            if (e.path().extension() == ".jsonl") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace blockfuse
