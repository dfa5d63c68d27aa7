// `blockfuse tune`: for each workload and strategy, searches that schedule's declared knob space on this
// device and appends every measured candidate to a tuning-records file, which dispatch then reads
// (runtime/dispatch.h). Builder/runner split as TVM has it: each round's candidates are built in
// parallel (the kernel cache, all cores), then measured one at a time in a worker process
// (tune/worker.h). The two halves can run on different machines:
//   --plan-out PLAN   builds one round of candidates here (for the GPU named by --gpu) and writes them
//                     to PLAN; carry the cache and PLAN to the GPU host;
//   --measure PLAN    measures a plan's candidates there (no Halide needed), appending to --records;
// bring the records back and plan the next round from them. --shard i/N keeps every N-th task (workload
// x strategy), so N tuners -- processes on one machine, or jobs of a cluster's scheduler, each with its
// own GPU -- tune disjoint tasks into one records file (appends are locked) or several (concatenated).
// Killed and restarted with the same records file, a tuner skips every candidate measured there.
#pragma once
#include "runtime/timing.h"
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

struct TuneOptions {
    std::vector<std::string> keys;
    std::string suite;
    std::string device = "auto";
    std::vector<std::string> strategies;    // empty: every strategy of each workload
    int trials = 64;                        // per task, counting candidates already in --records
    double minutes = 0;                     // per task, 0: no limit
    std::string records;                    // appended to (and resumed from)
    std::vector<std::string> seed_records;  // also read, for seeds (default: autotune/records/*.jsonl)
    bool no_seed_records = false;
    std::map<std::string, int> pinned;    // --knob: held at these values, not searched
    int jobs = 0;                         // parallel builds (0: every core)
    std::string search = "evolutionary";  // or random
    unsigned long long seed = 1;
    int batch = 0;                 // candidates per round (0: 8)
    double timeout_s = 60;         // per candidate measurement (the data and reference: their own)
    double build_timeout_s = 120;  // per candidate build: past it, a build failure (nothing cached)
    int shard = 0, shards = 1;
    std::string plan_out, measure_plan;
    std::string gpu;  // --plan-out for CUDA: the GPU the kernels are for
    TimingOptions timing;
    std::string out_dir;  // summary.json
    std::string argv0, command_line;
};

// Exit code: 0, or 2 for bad input (WorkloadError is thrown for the caller to print).
int run_tune(const TuneOptions &opt);

// `blockfuse records best`: the fastest passing record per workload, strategy and target of the files (json: each
// as its record, a JSON line).
int print_best_records(const std::vector<std::string> &files, const std::string &target_filter, bool json = false);

}  // namespace blockfuse
