// The benchmark harness: suites of workloads, every candidate kernel checked against the
// float64 reference before it is timed, interleaved timing, results as JSON + CSV.
#pragma once
#include "runtime/kernel_registry.h"
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace blockfuse {

struct BenchOptions {
    std::string suite;                  // name (workloads/NAME.txt) or path
    std::vector<std::string> keys;      // or explicit workload keys
    std::string device = "auto";        // auto | cpu | cuda | opencl
    std::string variants = "all";       // all | default
    std::vector<std::string> only;      // run only these kernel variants (names), if given
    std::string dtype;                  // keep only workloads of this dtype (empty: all)
    std::string out_dir;                // write results.json / results.csv here
    int min_samples = 10;
    double min_seconds = 0.5;
    bool ceilings = true;
    bool single_run = false;            // each candidate once on a flushed L2, unchecked (for profilers)
    std::string command_line;
};

// Returns the process exit code: 0 ok, 1 a kernel failed or was wrong, 2 bad input.
int run_bench(const BenchOptions &opt);

// Finds a suite file: an existing path, workloads/NAME.txt under the current directory, or
// under the source tree. Throws WorkloadError naming the suite if none exists.
std::string resolve_suite(const std::string &suite);

// Device the harness will use for `requested` ("auto" picks CUDA when present), and a line
// saying which and why.
Device pick_device(const std::string &requested, std::string *why);

nlohmann::json run_context(const std::string &command_line);

}  // namespace blockfuse
