// `blockfuse`: the command-line front end (./run calls it).
//   blockfuse bench --suite NAME | --workload KEY ...   benchmark (GPU if present, else CPU)
//   blockfuse check KEY ...                             parse + print canonical keys
//   blockfuse info                                      device, Halide version, kernels built
//   blockfuse records --from RESULTS.json --out FILE    tuning records from measured results
// Exit codes: 0 ok, 1 a kernel failed or gave a wrong result, 2 bad input.
#include "bench/harness.h"
#include "runtime/conv2d.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_registry.h"
#include "runtime/workload.h"
#include "runtime/block.h"
#include "runtime/stem.h"
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>

using namespace blockfuse;

int main(int argc, char **argv) {
    CLI::App app{"blockfuse: Halide conv layers and fused convnet blocks on CUDA, benchmarked"};
    app.require_subcommand(1);
    BenchOptions bopt;
    for (int i = 0; i < argc; ++i) bopt.command_line += (i ? " " : "") + std::string(argv[i]);

    auto *bench = app.add_subcommand("bench", "check every candidate kernel against the float64 reference, then time it");
    bench->add_option("--suite", bopt.suite, "suite name (workloads/NAME.txt) or path");
    bench->add_option("--workload", bopt.keys, "workload key(s), e.g. conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1");
    bench->add_option("--device", bopt.device, "auto | cpu | cuda | opencl")->capture_default_str();
    bench->add_option("--variants", bopt.variants, "all | default")->capture_default_str();
    bench->add_option("--variant", bopt.only, "run only these kernel variants (see `blockfuse info`)");
    bench->add_option("--strategies", bopt.strategies,
                      "run only these strategies: layer_by_layer, fused, depth_first (blocks, stages, stem), direct (conv2d)")
        ->delimiter(',');
    bench->add_option("--dtype", bopt.dtype, "only workloads of this dtype (f32, f16, bf16)");
    bench->add_option("--out", bopt.out_dir, "write results.json and results.csv to this folder");
    bench->add_option("--tuning-records", bopt.tuning_records,
                      "dispatch by these tuning records (JSON lines: the fastest recorded variant of a workload and "
                      "target becomes its default; a line says when none applies)");
    bench->add_option("--record", bopt.record_to,
                      "append each workload's fastest passing variant to this file as a tuning record");
    bench->add_option("--min-samples", bopt.min_samples, "samples per kernel, at least")->capture_default_str();
    bench->add_option("--min-seconds", bopt.min_seconds, "seconds of samples per kernel, at least")->capture_default_str();
    bench->add_option("--max-registers", bopt.max_registers,
                      "CUDA JIT register cap per thread: 0 = the most each kernel's block size allows; 64 = Halide's default")
        ->check(CLI::Range(0, 255))
        ->capture_default_str();
    std::string l2_flush = l2_flush_name(bopt.l2_flush);
    bench->add_option("--l2-flush", l2_flush,
                      "CUDA, before each sample: write = memset 2x the L2 (as triton do_bench; leaves it dirty, and the "
                      "timed kernel writes that back), read = a read-only eviction (clean L2)")
        ->check([](const std::string &s) {
            L2Flush f;
            return parse_l2_flush(s, f) && f != L2Flush::none ? std::string() : "expected write or read, got '" + s + "'";
        })
        ->each([&bopt](const std::string &s) { parse_l2_flush(s, bopt.l2_flush); })
        ->capture_default_str();
    bool no_ceilings = false;
    bench->add_flag("--single-run", bopt.single_run,
                    "run each candidate twice (warm-up, then between two read-only L2 evictions on CUDA), without checks or timing (for ncu)");
    bench->add_flag("--no-ceilings", no_ceilings, "skip measuring the copy / FMA ceilings");
    bench->add_flag("--model-only", bopt.model_only,
                    "list every candidate and its modelled kernels (with --out: results.json) without running "
                    "anything; --device cuda then needs no GPU");

    std::vector<std::string> keys;
    auto *check = app.add_subcommand("check", "validate workload keys and print them in canonical form");
    check->add_option("keys", keys, "workload keys")->required();

    auto *info = app.add_subcommand("info", "device, Halide version and the kernels built in");

    std::vector<std::string> from;
    std::string records_out;
    auto *records = app.add_subcommand("records", "append the fastest passing variant of each workload of "
                                                  "bench results.json files to a tuning-records file");
    records->add_option("--from", from, "results.json of a bench run")->required();
    records->add_option("--out", records_out, "tuning-records file (JSON lines), appended to")->required();

    CLI11_PARSE(app, argc, argv);
    try {
        if (*bench) {
            bopt.ceilings = !no_ceilings;
            int rc = run_bench(bopt);
            cuda::release_halide_allocation_cache();
            return rc;
        }
        if (*records) {
            size_t n = 0;
            for (const auto &f : from) {
                const auto r = records_from_results(f);
                append_records(records_out, r);
                n += r.size();
            }
            std::cout << "appended " << n << " tuning records to " << records_out << "\n";
            return 0;
        }
        if (*check) {
            for (const auto &k : keys) std::cout << canonical_key(k) << "\n";
            return 0;
        }
        if (*info) {
            std::string why;
            Device d = pick_device("auto", &why);
            std::cout << "device: " << device_name(d) << " -- " << why << "\n";
            std::cout << run_context(bopt.command_line).dump(1) << "\n";
            // CUDA kernels also print the register cap their JIT gets (register_cap: the same rule as at launch).
            for (const auto &v : all_kernels())
                std::cout << fmt::format("{:<40} {:<7} {:<5} {:<10} threads={}{}\n", v.name, device_name(v.device),
                                         dtype_name(v.dtype), v.kind, v.threads_per_block(),
                                         v.device == Device::cuda ? fmt::format(" regs={}", register_cap(v)) : "");
            return 0;
        }
    } catch (const WorkloadError &e) {
        std::cerr << "error: " << e.what() << "\n";
        return 2;
    } catch (const KernelError &e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    } catch (const std::exception &e) {
        std::cerr << "error: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
