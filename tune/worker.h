// The tuner's runner: candidates are measured one at a time in a worker process of their own
// (`blockfuse tune-worker`), so that a wrong answer, a launch failure, a crash, a hang or a CUDA context
// left unusable is the worker's end, recorded with its failure kind, and the tuning goes on with a new
// worker. Every candidate is checked against the float64 reference (fresh random inputs, a poisoned
// output) before it is timed; a wrong answer is never timed.
//
// Protocol: one JSON request per line on the worker's stdin, one JSON reply per line on its stdout
// (anything else the worker prints goes to its log).
//
// Test hook: BLOCKFUSE_TUNE_PLANT="KIND:knob=value[;KIND:knob=value...]" makes the worker misbehave on
// candidates with that knob value, KIND one of wrong_answer (the kernel is not run: its output stays
// poisoned and the check must catch it), timeout (it hangs), crash (it dies by SIGSEGV). The tests use it
// to show that each failure is isolated and recorded; nothing else sets it.
#pragma once
#include "runtime/kernel_registry.h"
#include "runtime/process.h"
#include "runtime/timing.h"
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace blockfuse {

struct MeasureRequest {
    std::string workload, strategy;
    std::map<std::string, int> knobs;  // every schedule knob
    int max_registers = 0;
    TimingOptions timing;
};

struct MeasureResult {
    std::string failure;  // "" | wrong_answer | build | launch | crash | timeout
    std::string check;    // the check's summary, or what failed
    double rel_l2 = 0;
    double median_ms = 0, min_ms = 0, max_ms = 0;
    int samples = 0;
    double seconds = 0;  // wall time of the request (load, check, timing)
};

// The worker's main loop (reads stdin until it closes); the exit code of `blockfuse tune-worker`.
int run_tune_worker(Device device);

// The tuner's side: starts a worker on first use and again after one ended.
class Runner {
public:
    // argv0: this executable; log_path: the workers' stderr.
    Runner(std::string argv0, Device device, std::string log_path, double timeout_s);
    // timeout_s: what one candidate may take. A worker makes a workload's data and reference once, first,
    // under kPrepareTimeoutSeconds at least.
    MeasureResult measure(const MeasureRequest &r);
    int workers_started() const { return started_; }

    static constexpr double kPrepareTimeoutSeconds = 600;

private:
    MeasureResult exchange(const nlohmann::json &req, double timeout_s, const char *what);
    std::string argv0_, log_path_, prepared_;
    Device device_;
    double timeout_s_;
    LineChild child_;
    int started_ = 0;
};

}  // namespace blockfuse
