#include "bench/tuning_records.h"
#include "bench/harness.h"
#include "runtime/cuda_driver.h"
#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

namespace blockfuse {

TuningRecords TuningRecords::load(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw WorkloadError("tuning records '" + path + "': no such file (or it cannot be read)");
    TuningRecords out;
    out.path = path;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = "tuning records '" + path + "', line " + std::to_string(n) + ": ";
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) throw WorkloadError(where + "not a JSON object");
        TuningRecord r;
        for (auto [field, dst] : {std::pair{"workload", &r.workload}, {"target", &r.target}, {"variant", &r.variant}}) {
            if (!j.contains(field) || !j[field].is_string() || j[field].get<std::string>().empty())
                throw WorkloadError(where + "field '" + field + "' missing or not a non-empty string");
            *dst = j[field].get<std::string>();
        }
        if (!j.contains("median_ms") || !j["median_ms"].is_number() || j["median_ms"].get<double>() <= 0)
            throw WorkloadError(where + "field 'median_ms' missing or not a positive number");
        r.median_ms = j["median_ms"].get<double>();
        r.source = j.value("source", "");
        try {
            r.workload = canonical_key(r.workload);
        } catch (const WorkloadError &e) {
            throw WorkloadError(where + e.what());
        }
        out.records.push_back(std::move(r));
    }
    return out;
}

const TuningRecord *TuningRecords::best(const std::string &workload, const std::string &target,
                                        const std::function<bool(const std::string &)> &built) const {
    const TuningRecord *b = nullptr;
    for (const auto &r : records)
        if (r.workload == workload && r.target == target && built(r.variant) && (!b || r.median_ms < b->median_ms))
            b = &r;
    return b;
}

std::vector<TuningRecord> fastest_per_workload(const std::vector<Measured> &rows, const std::string &target,
                                               const std::string &source) {
    std::vector<TuningRecord> best;
    for (const Measured &r : rows) {
        if (!r.ok || r.median_ms <= 0) continue;
        auto it = std::find_if(best.begin(), best.end(), [&r](const TuningRecord &b) { return b.workload == r.workload; });
        if (it == best.end()) it = best.insert(best.end(), TuningRecord{r.workload, target, r.variant, r.median_ms, source});
        if (r.median_ms < it->median_ms) it->variant = r.variant, it->median_ms = r.median_ms;
    }
    return best;
}

std::vector<TuningRecord> records_from_results(const std::string &results_json) {
    std::ifstream in(results_json);
    if (!in) throw WorkloadError("results '" + results_json + "': no such file (or it cannot be read)");
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.contains("context") || !j.contains("results") || !j["results"].is_array())
        throw WorkloadError("results '" + results_json + "': not a blockfuse results.json (context, results)");
    const auto &ctx = j["context"];
    const std::string dev = ctx.value("device", "");
    if (dev.empty()) throw WorkloadError("results '" + results_json + "': its context names no device");
    const std::string target =
        dev == "cuda" && ctx.contains("gpu") ? "cuda:" + ctx["gpu"].value("name", std::string()) : dev;
    std::vector<Measured> rows;
    for (const auto &r : j["results"]) {
        std::string variant = r.value("variant", "");
        if (variant.empty()) {  // older files: "strategy (NAME) [note]" or NAME
            const std::string label = r.value("strategy", "");
            const auto open = label.find('('), close = label.find(')', open);
            variant = open != std::string::npos && close != std::string::npos ? label.substr(open + 1, close - open - 1)
                                                                                : label;
        }
        rows.push_back({canonical_key(r.value("key", "")), variant, r.value("runtime_ms", 0.0), r.value("check_ok", false)});
    }
    return fastest_per_workload(rows, target,
                                results_json + " (" + ctx.value("timestamp", "") + ", Halide " +
                                    ctx.value("halide_version", "") + ")");
}

void append_records(const std::string &path, const std::vector<TuningRecord> &records) {
    std::ofstream out(path, std::ios::app);
    if (!out) throw WorkloadError("tuning records '" + path + "': cannot append to it");
    for (const auto &r : records)
        out << nlohmann::json{{"workload", r.workload}, {"target", r.target}, {"variant", r.variant},
                              {"median_ms", r.median_ms}, {"source", r.source}}
                   .dump()
            << "\n";
}

std::string record_target(Device d) {
    if (d != Device::cuda) return device_name(d);
    return "cuda:" + (cuda::device().name.empty() ? std::string("(no GPU here)") : cuda::device().name);
}

}  // namespace blockfuse
