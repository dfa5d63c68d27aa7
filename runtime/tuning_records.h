// Tuning records, as TVM keeps them: append-only JSON lines, one measured kernel per line, holding all
// it takes to rebuild that kernel and to know whether it applies here:
//   {"version": 3, "workload": "mbconv:n=8,...", "strategy": "fused", "family": "block",
//    "knobs": {...every schedule knob...}, "max_registers": 64, "target": "cuda:NVIDIA H200:sm_90",
//    "halide_version": "21.0.0", "commit": "...", "variant": "...", "median_ms": 0.0865, "min_ms": ...,
//    "max_ms": ..., "samples": 40, "check": "ok", "rel_l2": 1e-7, "failure": "", "tuning_seconds": 2.1,
//    "build_seconds": 1.6, "searcher": "evolutionary", "trial": 12, "source": "..."}
// max_registers: the cap the kernel's module was JIT-compiled at (0: the rule, KernelVariant::jit_register_cap).
// Version 2 records are read too; in them a tensor-core kernel's cap below mma_ptx::kMinRegisters reads as that
// floor, which the module was raised to then.
// The dispatcher (runtime/dispatch.h) takes, per workload and strategy, the fastest record that passed its
// check on this target with this Halide version; a record of another target or Halide version is never
// applied, and a line says which record applied or that none did.
#pragma once
#include "runtime/kernel_registry.h"
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

struct TuningRecord {
    std::string workload;  // canonical key
    std::string strategy;  // one of strategies_of(workload) (runtime/dispatch.h): layer_by_layer, fused_tc, direct...
    std::string family;    // the generator
    std::map<std::string, int> knobs;
    int max_registers = 0;
    std::string target;  // record_target()
    std::string halide_version, commit;
    std::string variant;  // the kernel's name when it was measured
    double median_ms = 0, min_ms = 0, max_ms = 0;
    int samples = 0;
    std::string check = "ok";   // "ok", or what the float64 check said
    std::string failure;        // "" or wrong_answer | build | launch | crash | timeout
    double tuning_seconds = 0;  // building and measuring it (the tuner's candidates)
    double build_seconds = 0;   //  ... of which building
    double rel_l2 = 0;          // the check's relative L2 error
    std::string searcher;       // the tuner's search that proposed it ("" from a bench run)
    int trial = 0;              // its trial number in that search (1-based; 0: not the tuner's)
    std::string source;         // how it was measured (command, results file, date)
    std::string l2_flush;       // CUDA: the L2 flush before each sample, write | read | none ("": not recorded)
    bool ok() const { return failure.empty() && median_ms > 0; }
};

struct TuningRecords {
    std::vector<std::string> paths;
    std::vector<TuningRecord> records;
    // Throws WorkloadError naming the file, and the line, if a file is missing or a line is not a
    // record (bad JSON, a missing field, an invalid workload key, an unknown knob, a bad time).
    static TuningRecords load(const std::vector<std::string> &paths);
    // The fastest passing record for (canonical key, strategy; empty: any) on `target` with `halide_version`, among
    // those timed after the default L2 flush (write, or not recorded) where there are any, else among the others;
    // each kernel (knobs, register cap, kind of flush) by its latest record, in load order (files, then lines).
    // `current`, where given, says whether a record measured the kernel its knobs build now (the sources unchanged
    // since): a record that did not replaces none that did, and competes only where no current record applies.
    const TuningRecord *best(const std::string &workload, const std::string &strategy, const std::string &target,
                             const std::string &halide_version,
                             const std::function<bool(const TuningRecord &)> &current = {}) const;
    // How many records are for this target and Halide version.
    size_t for_target(const std::string &target, const std::string &halide_version) const;
    // Records of the workload that do not apply here (another target or Halide version): for the line
    // that says so.
    std::vector<const TuningRecord *> elsewhere(const std::string &workload, const std::string &target,
                                                const std::string &halide_version) const;
};

// A record of a measured kernel (median etc. filled by the caller).
TuningRecord record_of(const KernelVariant &v, const std::string &workload, const std::string &strategy);
// The records of a bench results.json: each row that carries its knobs (rows of every candidate, failed
// ones with their failure). Throws WorkloadError naming the file if it is not one.
std::vector<TuningRecord> records_from_results(const std::string &results_json);
std::vector<TuningRecord> records_from_results(const nlohmann::json &results, const std::string &source);
// Appends under an exclusive lock of the file, each record one write: tuners of several shards may share a file.
void append_records(const std::string &path, const std::vector<TuningRecord> &records);
nlohmann::json record_json(const TuningRecord &r);

// The target a record is keyed by: "cuda:<GPU name>:sm_<cc>" (the GPU here, else BLOCKFUSE_GPU, e.g. for
// filling a cache for another machine), "cpu:<host target>", "opencl".
std::string record_target(Device d);
// The device a record's target names (record_target's form).
Device target_device(const std::string &target);
// The default record files: every autotune/records/*.jsonl of the source tree (BLOCKFUSE_TUNING_RECORDS,
// a colon-separated list, replaces them; empty: none).
std::vector<std::string> default_record_files();

}  // namespace blockfuse
