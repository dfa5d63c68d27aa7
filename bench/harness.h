// The benchmark harness: suites of workloads, every candidate kernel checked against the
// float64 reference before it is timed, interleaved timing, results as JSON + CSV.
#pragma once
#include "runtime/dispatch.h"
#include "runtime/op.h"
#include "runtime/tuning_records.h"
#include "runtime/block.h"
#include "runtime/kernel_registry.h"
#include "runtime/timing.h"
#include <functional>
#include <random>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace blockfuse {

struct BenchOptions {
    std::string suite;                    // name (workloads/NAME.txt) or path
    std::vector<std::string> keys;        // or explicit workload keys
    std::string device = "auto";          // auto | cpu | cuda | opencl
    std::string variants = "all";         // all | default
    std::vector<std::string> only;        // run only these kernel variants (names), if given
    std::vector<std::string> strategies;  // run only these strategies (as bench --strategies lists them), if given
    std::string dtype;                    // keep only workloads of this dtype (empty: all)
    std::string out_dir;                  // write results.json / results.csv here
    int min_samples = 10;
    double min_seconds = 0.5;
    bool ceilings = true;
    bool single_run = false;  // each candidate once between L2 evictions, unchecked (for profilers)
    bool model_only = false;  // every candidate's modelled kernels, nothing run (no device needed)
    int max_registers = 0;    // CUDA JIT register cap per thread; 0: the block size's limit (kernel_registry.h)
    L2Flush l2_flush =
        L2Flush::write;  // CUDA: before each sample, a memset or a clean read-only eviction (runtime/timing.h)
    std::vector<std::string>
        tuning_records;              // dispatch by these records (runtime/tuning_records.h); default: autotune/records/
    bool no_tuning_records = false;  // dispatch by the variant data and the heuristics only
    bool heuristics_only = false;    // every pick from the shape heuristics (no records, no data defaults)
    std::string record_to;           // append every measured kernel here as a tuning record
    std::vector<std::string> autoschedulers;  // also each workload's kernel of these Halide autoschedulers
    std::string command_line;
};

struct Row {
    std::string workload, key, strategy, variant, dtype, check;
    std::string strategy_name;  // layer_by_layer | fused | depth_first | layer_by_layer_tc | direct | tensor_cores
    std::string family, origin, pick_source, why;  // the generator; prebuilt | cache | generated; why this kernel
    std::string provider = "blockfuse";            // who scheduled it: blockfuse | halide-autoscheduler-<NAME>
    std::map<std::string, int> knobs;              // its schedule knobs
    int max_registers = 0;
    std::string record_target;
    bool is_default = false, ok = false;
    double flops = 0, bytes = 0, median_ms = 0, min_ms = 0, max_ms = 0, host_ms = 0, rel_l2 = 0;
    double waterline_ms = 0;  // the model's minimum latency of the row's kernels (Eq. 12), 0 without ceilings
    // Measured memory beyond the arguments (runtime/call_memory.h): the most bytes of the call's own device (CPU: heap)
    // allocations live at once, and the call's peak: the buffers its kernels were passed, each once, plus that; < 0: not
    // measured.
    double workspace_bytes = -1, peak_bytes = -1;
    int samples = 0;
    Problem w;
    std::vector<KernelCost> kernels;  // the strategy's kernels (tensor-machine accounting)
};

// One kernel variant ready to check and time on one workload: `check` runs it on fresh data
// with a poisoned output and compares with the float64 reference; `run` is one timed call.
struct BenchCandidate {
    Row row;
    const KernelVariant *variant = nullptr;
    std::function<void()> run;
    std::function<Comparison()> check;
};

// Which kernels of a workload become candidates (runtime/dispatch.h): per strategy (all of the
// family's, or those listed) the dispatcher's pick; with all_variants also every named variant of the
// variant data that serves the workload; only names containing one of `only` if given.
struct Selection {
    std::vector<std::string> strategies;  // empty: every strategy of the family
    bool all_variants = false;
    std::vector<std::string> only;
    bool quiet = false;            // no dispatch lines
    bool heuristics_only = false;  // runtime/dispatch.h
};

// One kernel to check and time, with why it was chosen; the default (the dispatcher's pick of the
// default strategy) first. Prints one line per strategy saying what the dispatcher took. Throws
// WorkloadError on a bad key, or when no requested strategy can serve it.
struct ChosenKernel {
    const KernelVariant *variant;
    std::string strategy, source;  // source: tuning record | variant data | heuristic | named variant
};
std::vector<ChosenKernel> choose_kernels(const std::string &key, Device dev, const Selection &sel,
                                         const TuningRecords *records);
// The candidates (tensors, check and run closures) of the chosen kernels.
std::vector<BenchCandidate> build_candidates(const SuiteEntry &entry, const std::vector<ChosenKernel> &kernels,
                                             std::mt19937_64 &rng);

// Returns the process exit code: 0 ok, 1 a kernel failed or was wrong, 2 bad input.
int run_bench(const BenchOptions &opt);

// Finds a suite file: an existing path, workloads/NAME.txt under the current directory, or
// under the source tree. Throws WorkloadError naming the suite if none exists.
std::string resolve_suite(const std::string &suite);

// Device the harness will use for `requested` ("auto" picks CUDA when present), and a line
// saying which and why.
Device pick_device(const std::string &requested, std::string *why);

nlohmann::json run_context(const std::string &command_line);
// Adds the driver version and the clocks now (NVML) to ctx["gpu"] as <clock>_at_<when>; a line says why not where
// NVML is missing. No-op without a GPU.
void record_gpu_state(nlohmann::json &ctx, const std::string &when);

}  // namespace blockfuse
