// Tuning records, as TVM keeps them: append-only JSON lines, one measured pick per line, keyed by
// the canonical workload key and the target (the device, and the GPU's name on CUDA):
//   {"workload": "mbconv:n=8,...", "target": "cuda:NVIDIA H200", "variant": "block_mbc24_fusednw_f16_cuda",
//    "median_ms": 0.0865, "source": "..."}
// The dispatcher takes the fastest record of a workload and target whose variant is built; where none
// applies it says so and keeps the registry's order (the `prefer` ranks of generators/CMakeLists.txt).
#pragma once
#include "runtime/kernel_registry.h"
#include <functional>
#include <string>
#include <vector>

namespace blockfuse {

struct TuningRecord {
    std::string workload;  // canonical key
    std::string target;    // record_target()
    std::string variant;   // kernel variant name
    double median_ms = 0;
    std::string source;    // how it was measured (command, results file, date)
};

struct TuningRecords {
    std::string path;
    std::vector<TuningRecord> records;
    // Throws WorkloadError naming the file, and the line, if the file is missing or a line is not a
    // record (bad JSON, a missing field, an invalid workload key, a non-positive time).
    static TuningRecords load(const std::string &path);
    // The fastest record for (canonical key, target) whose variant `built` accepts; nullptr if none.
    const TuningRecord *best(const std::string &workload, const std::string &target,
                             const std::function<bool(const std::string &)> &built) const;
};

// One checked and timed candidate of a run (a bench row, or a row of a results.json).
struct Measured {
    std::string workload, variant;  // canonical key, kernel variant
    double median_ms = 0;
    bool ok = false;                // passed its float64 check
};
// Each workload's fastest passing variant, as records for `target`, in first-seen workload order.
std::vector<TuningRecord> fastest_per_workload(const std::vector<Measured> &rows, const std::string &target,
                                               const std::string &source);

// The records of a bench results.json (its context names the device and GPU): the fastest passing
// variant of each workload. Files written before rows carried "variant" give it in the strategy
// label ("fused (NAME)", or NAME alone). Throws WorkloadError naming the file if it is not one.
std::vector<TuningRecord> records_from_results(const std::string &results_json);

// Appends records as JSON lines to `path` (created if missing). Throws WorkloadError if it cannot.
void append_records(const std::string &path, const std::vector<TuningRecord> &records);

// The target a record is keyed by: "cuda:<GPU name>" on CUDA, else the device's name.
std::string record_target(Device d);

}  // namespace blockfuse
