// `blockfuse_gbench`: the same candidates as `blockfuse bench`, driven by Google Benchmark, for
// users who want its filters, repetitions and JSON/CSV reporters. Every candidate is checked
// against the float64 reference first; a failing one is not registered (and the exit code is 1).
// On a GPU each iteration is timed with CUDA events around one call after an L2 flush
// (UseManualTime); on the CPU, wall time. Counters: FLOP/s and modelled compulsory bytes/s.
//   blockfuse_gbench --suite demo [--workload KEY]... [--device auto|cpu|cuda|opencl] [benchmark flags]
#include "bench/harness.h"
#include "runtime/cuda_driver.h"
#include "runtime/timing.h"
#include <benchmark/benchmark.h>
#include <iostream>

using namespace blockfuse;

namespace {
// Our flags, removed from argv before Google Benchmark parses the rest.
struct Flags {
    std::string suite, device = "auto";
    std::vector<std::string> keys;
};

Flags take_flags(int *argc, char **argv) {
    Flags f;
    int out = 1;
    for (int i = 1; i < *argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const char *name) -> std::string {
            if (i + 1 >= *argc) throw WorkloadError(std::string(name) + " needs a value");
            return argv[++i];
        };
        if (a == "--suite") f.suite = value("--suite");
        else if (a == "--workload") f.keys.push_back(value("--workload"));
        else if (a == "--device") f.device = value("--device");
        else argv[out++] = argv[i];
    }
    *argc = out;
    return f;
}
}  // namespace

int main(int argc, char **argv) {
    try {
        Flags flags = take_flags(&argc, argv);
        benchmark::Initialize(&argc, argv);
        if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
        std::vector<SuiteEntry> entries;
        if (!flags.suite.empty()) entries = load_suite(resolve_suite(flags.suite));
        for (const auto &k : flags.keys) entries.push_back({k.substr(0, k.find(':')), k});
        if (entries.empty()) throw WorkloadError("nothing to run: give --suite NAME or --workload KEY");
        for (const auto &e : entries) workload_dtype(e.key);  // every key valid before anything runs

        std::string why;
        Device dev = pick_device(flags.device, &why);
        std::cerr << "device: " << device_name(dev) << " -- " << why << "\n";
        install_halide_error_handler();
        halide_reuse_device_allocations(nullptr, true);
        const bool gpu = dev == Device::cuda;
        if (gpu) {
            cuda::install_halide_hooks();
            cuda::make_current();
        }
        std::mt19937_64 rng(std::random_device{}());
        int failures = 0;
        std::vector<std::shared_ptr<BenchCandidate>> keep;
        for (const auto &e : entries) {
            for (auto &c : build_candidates(e, choose_kernels(e.key, dev, Selection{}, nullptr), rng)) {
                Comparison cmp = c.check();
                if (!cmp.ok()) {
                    ++failures;
                    std::cerr << e.name << " " << c.row.strategy << ": FAILED check: " << cmp.summary() << "\n";
                    continue;
                }
                auto cp = std::make_shared<BenchCandidate>(std::move(c));
                keep.push_back(cp);
                auto *b = benchmark::RegisterBenchmark(
                    (e.name + "/" + cp->row.strategy).c_str(), [cp, gpu](benchmark::State &st) {
                        std::unique_ptr<cuda::EventPair> ev;
                        if (gpu) ev = std::make_unique<cuda::EventPair>();
                        for (auto _ : st) {
                            if (gpu) {
                                st.PauseTiming();
                                flush_device_l2_once();
                                st.ResumeTiming();
                                ev->record_start();
                                cp->run();
                                ev->record_stop();
                                st.SetIterationTime(ev->elapsed_ms() * 1e-3);
                            } else {
                                cp->run();
                            }
                        }
                        st.counters["FLOP/s"] =
                            benchmark::Counter(cp->row.flops, benchmark::Counter::kIsIterationInvariantRate);
                        st.counters["bytes/s"] =
                            benchmark::Counter(cp->row.bytes, benchmark::Counter::kIsIterationInvariantRate);
                        st.SetLabel(cp->row.key);
                    });
                b->Unit(benchmark::kMicrosecond);
                if (gpu) b->UseManualTime();
                else b->UseRealTime();
            }
        }
        benchmark::RunSpecifiedBenchmarks();
        benchmark::Shutdown();
        keep.clear();                             // the candidates' tensors free their device side...
        cuda::release_halide_allocation_cache();  // ...and Halide's free list goes back to the driver
        return failures ? 1 : 0;
    } catch (const WorkloadError &e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const std::exception &e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
}
