// `blockfuse`: the command-line front end (./run calls it).
//   blockfuse bench --suite NAME | --workload KEY ...   benchmark (GPU if present, else CPU)
//   blockfuse generate KEY... --out DIR                 a kernel's library, header, STMT, PTX and description
//   blockfuse cache list | clear | fill                 the kernel cache
//   blockfuse check KEY ...                             parse + print canonical keys
//   blockfuse info                                      device, Halide version, named variants
//   blockfuse records --from RESULTS.json --out FILE    tuning records from measured results
//   blockfuse records best [FILE...]                    the fastest record per workload, strategy, target
//   blockfuse tune --suite NAME | --workload KEY ...    search the schedules' knob spaces, append records
// Exit codes: 0 ok, 1 a kernel failed or gave a wrong result, 2 bad input.
#include "bench/harness.h"
#include "runtime/autoscheduler.h"
#include "tune/tuner.h"
#include "tune/worker.h"
#include "runtime/conv2d.h"
#include "runtime/cuda_driver.h"
#include "runtime/kernel_registry.h"
#include "runtime/workload.h"
#include "runtime/block.h"
#include "runtime/stem.h"
#include "runtime/kernel_cache.h"
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>

using namespace blockfuse;

namespace {
// --knob name=value settings (generate, tune) as a knob map; anything else is bad input.
std::map<std::string, int> parse_knob_settings(const std::vector<std::string> &settings) {
    std::map<std::string, int> knobs;
    for (const auto &kv : settings) {
        const auto eq = kv.find('=');
        int v = 0;
        try {
            if (eq == std::string::npos || eq == 0) throw std::invalid_argument("");
            size_t used = 0;
            v = std::stoi(kv.substr(eq + 1), &used);
            if (used != kv.size() - eq - 1) throw std::invalid_argument("");
        } catch (const std::exception &) {
            throw WorkloadError("--knob '" + kv + "' is not name=integer");
        }
        knobs[kv.substr(0, eq)] = v;
    }
    return knobs;
}
}  // namespace

int main(int argc, char **argv) {
    CLI::App app{"blockfuse: Halide conv layers and fused convnet blocks on CUDA, benchmarked"};
    app.require_subcommand(1);
    BenchOptions bopt;
    for (int i = 0; i < argc; ++i) bopt.command_line += (i ? " " : "") + std::string(argv[i]);

    auto *bench =
        app.add_subcommand("bench", "check every candidate kernel against the float64 reference, then time it");
    bench->add_option("--suite", bopt.suite, "suite name (workloads/NAME.txt) or path");
    bench->add_option("--workload", bopt.keys, "workload key(s), e.g. conv2d:n=1,c=8,h=9,w=9,k=8,r=3,s=3,pad=1");
    bench->add_option("--device", bopt.device, "auto | cpu | cuda | opencl")->capture_default_str();
    bench->add_option("--variants", bopt.variants, "all | default")->capture_default_str();
    bench->add_option("--variant", bopt.only, "run only these kernel variants (see `blockfuse info`)");
    bench
        ->add_option(
            "--strategies", bopt.strategies,
            "run only these strategies: layer_by_layer, fused, depth_first (blocks, stages, stem), layer_by_layer_tc "
            "(f16/bf16 blocks: the dense layers on tensor cores), fused_tc (f16/bf16 FFN, FusedMBConv, "
            "ConvFirst, ConvNeXt and MBConv blocks in one tensor-core kernel), direct, tensor_cores (conv2d)")
        ->delimiter(',');
    bench->add_option("--dtype", bopt.dtype, "only workloads of this dtype (f32, f16, bf16)");
    bench->add_option("--out", bopt.out_dir, "write results.json and results.csv to this folder");
    bench->add_option(
        "--tuning-records", bopt.tuning_records,
        "dispatch by these tuning records (JSON lines; default: autotune/records/*.jsonl): per workload and "
        "strategy the fastest record of this device and Halide version; a line says when none applies");
    bench->add_flag("--no-tuning-records", bopt.no_tuning_records,
                    "dispatch by the variant data and the heuristics only");
    bench->add_option("--record", bopt.record_to, "append every measured kernel to this file as a tuning record");
    bench->add_flag("--heuristics", bopt.heuristics_only,
                    "every kernel from the shape heuristics: no tuning record, no named variant (what a shape no one "
                    "tuned gets)");
    bench
        ->add_option(
            "--autoscheduler", bopt.autoschedulers,
            "also a kernel of Halide's autoscheduler NAME per workload (CPU: Mullapudi2016, Adams2019, "
            "Li2018; CUDA: Anderson2021), in the same results (provider halide-autoscheduler-NAME); repeatable")
        ->delimiter(',');
    bench->add_option("--min-samples", bopt.min_samples, "samples per kernel, at least")->capture_default_str();
    bench->add_option("--min-seconds", bopt.min_seconds, "seconds of samples per kernel, at least")
        ->capture_default_str();
    bench
        ->add_option(
            "--max-registers", bopt.max_registers,
            "CUDA JIT register cap per thread: 0 = the most each kernel's block size allows; 64 = Halide's default")
        ->check(CLI::Range(0, 255))
        ->capture_default_str();
    std::string l2_flush = l2_flush_name(bopt.l2_flush);
    bench
        ->add_option("--l2-flush", l2_flush,
                     "CUDA, before each sample: write = memset 2x the L2 (as triton do_bench; leaves it dirty, and the "
                     "timed kernel writes that back), read = a read-only eviction (clean L2)")
        ->check([](const std::string &s) {
            L2Flush f;
            return parse_l2_flush(s, f) && f != L2Flush::none ? std::string()
                                                              : "expected write or read, got '" + s + "'";
        })
        ->each([&bopt](const std::string &s) { parse_l2_flush(s, bopt.l2_flush); })
        ->capture_default_str();
    bool no_ceilings = false;
    bench->add_flag("--single-run", bopt.single_run,
                    "run each candidate twice (warm-up, then between two read-only L2 evictions on CUDA), without "
                    "checks or timing (for ncu)");
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
    auto *records =
        app.add_subcommand("records", "tuning records: --from RESULTS.json --out FILE appends every measured "
                                      "kernel of bench results; `records best` shows the picks");
    records->add_option("--from", from, "results.json of a bench run");
    records->add_option("--out", records_out, "tuning-records file (JSON lines), appended to");

    // generate: what a user needs to call a kernel from their own build.
    std::vector<std::string> gen_keys, gen_knobs;
    std::string gen_strategy, gen_device = "cuda", gen_out;
    int gen_registers = 0;
    std::vector<std::string> best_files;
    std::string best_target;
    auto *records_best =
        records->add_subcommand("best", "the fastest passing record per workload, strategy and target");
    records_best->add_option("files", best_files, "records files (default: autotune/records/*.jsonl)");
    records_best->add_option("--target", best_target, "only targets containing this, e.g. H200 or cpu");
    bool best_json = false;
    records_best->add_flag("--json", best_json, "each pick as its record, a JSON line");

    TuneOptions topt;
    topt.command_line = bopt.command_line;
    topt.argv0 = argv[0];
    topt.timing.min_seconds = 0.2;
    std::string shard, tune_flush = "write";
    auto *tune = app.add_subcommand("tune", "search each workload's schedule knobs on this device; every candidate is "
                                            "checked, measured and appended to the records");
    tune->add_option("--suite", topt.suite, "suite name (workloads/NAME.txt) or path");
    tune->add_option("--workload", topt.keys, "workload key(s)");
    tune->add_option("--device", topt.device, "auto | cpu | cuda")->capture_default_str();
    tune->add_option("--strategies", topt.strategies, "only these strategies")->delimiter(',');
    tune->add_option("--trials", topt.trials, "candidates per workload and strategy (those in --records count)")
        ->capture_default_str();
    tune->add_option("--minutes", topt.minutes, "at most this long per workload and strategy");
    tune->add_option("--records", topt.records, "tuning records file: appended to, and resumed from")->required();
    tune->add_option("--seed-records", topt.seed_records, "records to seed from (default: autotune/records/*.jsonl)");
    tune->add_flag("--no-seed-records", topt.no_seed_records, "seed from the heuristic and the named variants only");
    std::vector<std::string> tune_knobs;
    tune->add_option("--knob", tune_knobs,
                     "name=value: hold this knob (or max_registers) there, search the others (repeatable)");
    tune->add_option("--jobs", topt.jobs, "kernels built at once (default: the cores)");
    tune->add_option("--search", topt.search, "evolutionary | random")->capture_default_str();
    tune->add_option("--seed", topt.seed, "the search's seed")->capture_default_str();
    tune->add_option("--batch", topt.batch, "candidates built per round (default 8)");
    tune->add_option("--timeout", topt.timeout_s, "seconds a candidate's measurement may take")->capture_default_str();
    tune->add_option("--build-timeout", topt.build_timeout_s,
                     "seconds a candidate's build may take (then a build failure)")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    tune->add_option("--shard", shard, "i/N: tune every N-th task (workload x strategy) from the i-th");
    tune->add_option("--plan-out", topt.plan_out, "build one round of candidates here and write them to this file");
    tune->add_option("--measure", topt.measure_plan, "measure a plan's candidates (made by --plan-out)");
    tune->add_option("--gpu", topt.gpu, "with --plan-out: the GPU the kernels are for, e.g. \"NVIDIA H200:sm_90\"");
    tune->add_option("--min-seconds", topt.timing.min_seconds, "seconds of samples per candidate")
        ->capture_default_str();
    tune->add_option("--min-samples", topt.timing.min_samples, "samples per candidate, at least")
        ->capture_default_str();
    tune->add_option("--l2-flush", tune_flush, "write | read | none (CUDA)")->capture_default_str();
    tune->add_option("--out", topt.out_dir, "write summary.json (per task: trials, best, default, seconds) here");
    std::string worker_device = "cpu";
    auto *tune_worker = app.add_subcommand("tune-worker", "the tuner's measuring process (started by tune)");
    tune_worker->add_option("--device", worker_device, "cpu | cuda");
    tune_worker->group("");  // not listed in --help

    auto *generate =
        app.add_subcommand("generate", "write a kernel's static library, header, STMT, PTX or assembly, "
                                       "and JSON description (arguments, knobs, target, launch resources)");
    generate->add_option("keys", gen_keys, "workload keys")->required();
    generate->add_option("--strategy", gen_strategy, "one strategy (default: every strategy of the key)");
    generate->add_option("--knob", gen_knobs, "schedule knob name=value over the dispatcher's pick (repeatable)");
    generate->add_option("--max-registers", gen_registers, "CUDA JIT register cap of the kernel")
        ->check(CLI::Range(0, 255));
    generate->add_option("--device", gen_device, "cuda | cpu | opencl")->capture_default_str();
    generate->add_option("--out", gen_out, "output folder")->required();

    // cache: list, clear, fill.
    auto *cache = app.add_subcommand("cache", "the kernel cache: list, clear, fill");
    cache->require_subcommand(1);
    std::string cache_root;
    bool failed_only = false;
    auto *cache_list = cache->add_subcommand("list", "every cached kernel: name, status, size, build time");
    auto *cache_clear = cache->add_subcommand("clear", "remove cached kernels (and stale temporary folders)");
    cache_clear->add_flag("--failed", failed_only,
                          "only the kernels whose generation failed (they are retried next time)");
    for (auto *c : {cache_list, cache_clear})
        c->add_option("--cache", cache_root, "the cache folder (default: BLOCKFUSE_KERNEL_CACHE)");
    BenchOptions fopt;
    fopt.variants = "default";  // a fill makes what a default bench run loads, unless asked for all
    fopt.device = "cuda";
    std::string fill_into, fill_gpu;
    int fill_jobs = 0;
    bool fill_prebuilt = false, fill_quiet = false, fill_prune = false;
    auto *cache_fill = cache->add_subcommand(
        "fill", "generate every kernel a bench run of these workloads would load (no device needed): on a "
                "machine with Halide, for a GPU host without it; or the variant data's prebuilt kernels");
    cache_fill->add_option("--suite", fopt.suite, "suite name (workloads/NAME.txt) or path");
    cache_fill->add_option("--workload", fopt.keys, "workload key(s)");
    cache_fill->add_option("--device", fopt.device, "cuda | cpu | opencl, or a comma-separated list")
        ->capture_default_str();
    cache_fill->add_option("--strategies", fopt.strategies, "only these strategies")->delimiter(',');
    cache_fill->add_option("--variants", fopt.variants, "all | default (as bench)")->capture_default_str();
    cache_fill->add_option("--variant", fopt.only, "only kernels whose name contains one of these");
    cache_fill->add_option("--tuning-records", fopt.tuning_records, "as bench");
    cache_fill->add_flag("--no-tuning-records", fopt.no_tuning_records, "as bench");
    cache_fill->add_flag("--heuristics", fopt.heuristics_only, "as bench");
    cache_fill->add_option("--autoscheduler", fopt.autoschedulers,
                           "as bench: also each workload's kernel of this Halide autoscheduler (repeatable)");
    cache_fill->add_option("--gpu", fill_gpu,
                           "the GPU the kernels are for, as records name it (e.g. \"NVIDIA H200:sm_90\"), so that its "
                           "tuning records, launch limits and compute capability's heuristics apply on a machine "
                           "without it");
    cache_fill->add_flag("--prebuilt", fill_prebuilt, "the variant data's prebuilt kernels (the build does this)");
    cache_fill->add_option("--into", fill_into, "build into this folder instead of the cache");
    cache_fill->add_option("--jobs", fill_jobs, "generators run at once (default: the cores)");
    cache_fill->add_flag("--quiet", fill_quiet, "only failures and a summary");
    cache_fill->add_flag("--prune", fill_prune, "remove every other kernel from the folder");

    CLI11_PARSE(app, argc, argv);
    try {
        if (*bench) {
            bopt.ceilings = !no_ceilings;
            int rc = run_bench(bopt);
            cuda::release_halide_allocation_cache();
            return rc;
        }
        if (*generate) {
            Device d;
            if (!parse_device(gen_device, &d))
                throw WorkloadError("--device '" + gen_device + "' is not one of cpu, cuda, opencl");
            const std::map<std::string, int> knobs = parse_knob_settings(gen_knobs);
            for (const auto &key : gen_keys) {
                const auto strategies =
                    gen_strategy.empty() ? strategies_of(key) : std::vector<std::string>{gen_strategy};
                for (const auto &st : strategies) {
                    const KernelVariant *v = knobs.empty() && !gen_registers
                                                 ? dispatch(key, st, d, nullptr).variant
                                                 : kernel_with_knobs(key, st, d, knobs, gen_registers, "--knob");
                    // The tuner's check of a candidate, before Halide sees knobs it cannot schedule; for a GPU not
                    // named (no GPU here, BLOCKFUSE_GPU unset) with Hopper's limits: only what no target runs is refused.
                    if (!knobs.empty() || gen_registers) {
                        LaunchLimits limits = launch_limits(d);
                        if (d == Device::cuda && limits.compute_capability == 0) limits = launch_limits_of_sm(90);
                        if (const std::string why = parse_op(key)->candidate_error(*v, limits); !why.empty())
                            throw WorkloadError(fmt::format("--knob: no {} kernel for {} with these knobs: {}", st,
                                                            canonical_key(key), why));
                    }
                    std::string dir_name = v->name;
                    std::replace(dir_name.begin(), dir_name.end(), '@', '_');
                    const std::string dir = gen_out + "/" + dir_name;
                    KernelRequest r = v->request();
                    r.name = dir_name;
                    export_kernel(r, dir);
                    std::cout << fmt::format("{} {}: {} [{}] -> {}\n", canonical_key(key), st, v->name,
                                             v->knob_summary(), dir);
                }
            }
            return 0;
        }
        if (*cache_list) {
            const std::string root = cache_root.empty() ? kernel_cache_dir() : cache_root;
            const auto entries = list_cache(root);
            unsigned long long total = 0;
            for (const auto &e : entries) {
                std::cout << fmt::format("{:<34} {:<7} {:>8.1f} KB {:>6.1f} s  {}  {}\n", e.hash, e.status,
                                         e.bytes / 1024.0, e.seconds, e.created, e.name);
                total += e.bytes;
            }
            std::cout << fmt::format("{} kernels, {:.1f} MB in {}\n", entries.size(), total / 1e6, root);
            return 0;
        }
        if (*cache_clear) {
            const std::string root = cache_root.empty() ? kernel_cache_dir() : cache_root;
            std::cout << "removed " << clear_cache(root, failed_only) << (failed_only ? " failed" : "")
                      << " kernels from " << root << "\n";
            return 0;
        }
        if (*cache_fill) {
            if (!fill_gpu.empty()) setenv("BLOCKFUSE_GPU", fill_gpu.c_str(), 1);
            std::vector<KernelRequest> reqs;
            std::set<std::string> seen;
            int not_autoscheduled = 0;  // workloads an --autoscheduler could not take (each named)
            auto add = [&](const KernelVariant &v) {
                KernelRequest r = v.request();
                if (seen.insert(r.hash()).second) reqs.push_back(r);
            };
            if (fill_prebuilt)
                for (const auto &v : data_variants())
                    if (v.prebuilt) add(v);
            std::vector<SuiteEntry> entries;
            if (!fopt.suite.empty()) entries = load_suite(resolve_suite(fopt.suite));
            for (const auto &k : fopt.keys) entries.push_back({k.substr(0, k.find(':')), k});
            for (const auto &a : fopt.autoschedulers) check_autoscheduler_name(a);
            if (entries.empty() && !fill_prebuilt)
                throw WorkloadError("nothing to fill: give --suite NAME, --workload KEY or --prebuilt");
            std::optional<TuningRecords> recs;
            if (!fopt.no_tuning_records && !entries.empty())
                recs = TuningRecords::load(fopt.tuning_records.empty() ? default_record_files() : fopt.tuning_records);
            Selection sel;
            sel.strategies = fopt.strategies;
            sel.all_variants = fopt.variants == "all";
            sel.only = fopt.only;
            sel.quiet = fill_quiet;
            sel.heuristics_only = fopt.heuristics_only;
            std::stringstream devices(fopt.device);
            for (std::string dn; !entries.empty() && std::getline(devices, dn, ',');) {
                Device d;
                if (!parse_device(dn, &d)) throw WorkloadError("--device '" + dn + "' is not one of cpu, cuda, opencl");
                for (const auto &a : fopt.autoschedulers) check_autoscheduler_device(a, d);
                for (const auto &e : entries) {
                    for (const auto &c : choose_kernels(e.key, d, sel, recs ? &*recs : nullptr)) add(*c.variant);
                    for (const auto &a : fopt.autoschedulers) try {  // one workload it cannot take: the rest still fill
                            add(autoscheduled_kernel(*parse_op(e.key), a, d));
                        } catch (const WorkloadError &err) {
                            ++not_autoscheduled;
                            std::cerr << "error: " << e.name << ": " << err.what() << "\n";
                        }
                }
            }
            const std::string root = fill_into.empty() ? kernel_cache_dir() : fill_into;
            const int jobs = fill_jobs > 0 ? fill_jobs : std::max(1u, std::thread::hardware_concurrency());
            const auto t0 = std::chrono::steady_clock::now();
            const auto outcomes = ensure_built_all(reqs, root, jobs);
            int built = 0, failed = 0;
            for (size_t i = 0; i < reqs.size(); ++i) {
                built += outcomes[i].built && outcomes[i].ok;
                if (!outcomes[i].ok) {
                    ++failed;
                    std::cerr << "error: " << outcomes[i].message << "\n";
                } else if (!fill_quiet) {
                    std::cout << fmt::format("{}: {}\n", reqs[i].name,
                                             outcomes[i].built
                                                 ? fmt::format("generated in {:.1f} s", outcomes[i].seconds)
                                                 : std::string("already there"));
                }
            }
            size_t pruned = 0;
            if (fill_prune) {  // the folder holds exactly these kernels (the build's prebuilt folder)
                std::set<std::string> keep;
                for (const auto &r : reqs) keep.insert(r.hash());
                for (const auto &e : list_cache(root))
                    if (!keep.count(e.hash)) pruned += std::filesystem::remove_all(e.dir) > 0;
            }
            std::cout << fmt::format(
                "{} kernels in {}: {} generated, {} already there, {} failed, {} pruned ({:.0f} s, {} at a time)\n",
                reqs.size(), root, built, int(reqs.size()) - built - failed, failed, pruned,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), jobs);
            if (not_autoscheduled)
                std::cerr << fmt::format("error: {} workloads had no autoscheduled kernel (above)\n",
                                         not_autoscheduled);
            return failed || not_autoscheduled ? 1 : 0;
        }
        if (*tune) {
            if (!shard.empty()) {
                const auto slash = shard.find('/');
                try {
                    if (slash == std::string::npos) throw std::invalid_argument("");
                    topt.shard = std::stoi(shard.substr(0, slash));
                    topt.shards = std::stoi(shard.substr(slash + 1));
                } catch (const std::exception &) {
                    throw WorkloadError("--shard '" + shard + "' is not i/N");
                }
            }
            if (!parse_l2_flush(tune_flush, topt.timing.l2_flush))
                throw WorkloadError("--l2-flush '" + tune_flush + "' is not one of write, read, none");
            topt.pinned = parse_knob_settings(tune_knobs);
            return run_tune(topt);
        }
        if (*tune_worker) {
            Device d;
            if (!parse_device(worker_device, &d))
                throw WorkloadError("--device '" + worker_device + "' is not cpu or cuda");
            return run_tune_worker(d);
        }
        if (*records_best) return print_best_records(best_files, best_target, best_json);
        if (*records) {
            if (from.empty() || records_out.empty())
                throw WorkloadError("records: give --from RESULTS.json and --out FILE (or `records best`)");
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
            std::cout << "kernel cache: " << kernel_cache_dir() << "\nprebuilt kernels: " << prebuilt_kernel_dir()
                      << "\ngenerators: " << (generator_dir().empty() ? std::string("none here") : generator_dir())
                      << "\nCPU target: " << host_target() << "\nCUDA target: " << gpu_target("cuda") << "\n";
            // The named variants (schedules/variants/*.json); CUDA ones also print the register cap their JIT
            // gets (jit_register_cap: the same rule as at launch).
            for (const auto &v : data_variants())
                std::cout << fmt::format("{:<44} {:<7} {:<5} {:<10} threads={}{}{}\n", v.name, device_name(v.device),
                                         dtype_name(v.dtype), v.kind, v.threads_per_block(),
                                         v.device == Device::cuda ? fmt::format(" regs={}", v.jit_register_cap()) : "",
                                         v.prebuilt ? " prebuilt" : "");
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
