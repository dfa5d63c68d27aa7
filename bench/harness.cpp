#include "bench/harness.h"
#include "runtime/ceilings.h"
#include "runtime/check.h"
#include "runtime/conv2d.h"
#include "runtime/cuda_driver.h"
#include "runtime/timing.h"
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>

#ifndef BLOCKFUSE_SOURCE_DIR
#define BLOCKFUSE_SOURCE_DIR "."
#endif
#ifndef BLOCKFUSE_HALIDE_VERSION
#define BLOCKFUSE_HALIDE_VERSION "unknown"
#endif

namespace blockfuse {
namespace fs = std::filesystem;

std::string resolve_suite(const std::string &suite) {
    for (const std::string &p : {suite, "workloads/" + suite + ".txt",
                                 std::string(BLOCKFUSE_SOURCE_DIR) + "/workloads/" + suite + ".txt"})
        if (fs::is_regular_file(p)) return p;
    throw WorkloadError("unknown suite '" + suite + "': no file '" + suite + "' nor workloads/" + suite + ".txt");
}

Device pick_device(const std::string &requested, std::string *why) {
    const auto &dev = cuda::device();
    if (requested == "cpu") {
        *why = "CPU requested with --device cpu";
        return Device::cpu;
    }
    if (requested == "opencl") {
        *why = "OpenCL requested with --device opencl (HL_OCL_DEVICE_TYPE / HL_OCL_PLATFORM_NAME pick the device)";
        return Device::opencl;
    }
    if (requested == "cuda") {
        if (!dev.available) throw WorkloadError("--device cuda: " + dev.reason);
        *why = "CUDA requested: " + dev.name;
        return Device::cuda;
    }
    if (requested != "auto") throw WorkloadError("--device '" + requested + "' is not one of auto, cpu, cuda, opencl");
    if (dev.available) {
        *why = "GPU found: " + dev.name + " (" + dev.reason + "), running the CUDA kernels";
        return Device::cuda;
    }
    *why = dev.reason + ": running the CPU kernels";
    return Device::cpu;
}

nlohmann::json run_context(const std::string &command_line) {
    nlohmann::json ctx;
    ctx["command"] = command_line;
    ctx["halide_version"] = BLOCKFUSE_HALIDE_VERSION;
    std::time_t now = std::time(nullptr);
    char buf[64];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    ctx["timestamp"] = buf;
    const auto &d = cuda::device();
    if (d.available) {
        ctx["gpu"] = {{"name", d.name},
                      {"cuda_driver_api_version", d.driver_version},
                      {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                      {"sm_count", d.sm_count},
                      {"sm_clock_mhz_max", d.sm_clock_khz / 1000},
                      {"mem_clock_mhz", d.mem_clock_khz / 1000},
                      {"bus_width_bits", d.bus_width_bits},
                      {"l2_bytes", d.l2_bytes}};
    }
    return ctx;
}

namespace {

struct Row {
    std::string workload, key, strategy, dtype, check;
    bool is_default = false, ok = false;
    double flops = 0, bytes = 0, median_ms = 0, min_ms = 0, max_ms = 0, host_ms = 0, rel_l2 = 0, err_tol = 0;
    int samples = 0;
    Conv2dWorkload w;
};

void write_outputs(const std::string &dir, const nlohmann::json &ctx, const std::vector<Row> &rows,
                   const Ceilings &ceil, Device dev) {
    fs::create_directories(dir);
    nlohmann::json j;
    j["context"] = ctx;
    nlohmann::json arr = nlohmann::json::array();
    std::ofstream csv(dir + "/results.csv");
    csv << "workload,strategy,default,device,dtype,n,h,w,c,k,r,s,stride_h,stride_w,dil_h,dil_w,groups,"
           "flops,bytes,flops_per_byte,runtime_ms,min_ms,max_ms,host_ms,samples,gbps,gflops,pct_copy_bw,pct_ffma,"
           "check_ok,rel_l2,key\n";
    for (const auto &r : rows) {
        double gbps = r.ok ? r.bytes / (r.median_ms * 1e-3) / 1e9 : 0;
        double gflops = r.ok ? r.flops / (r.median_ms * 1e-3) / 1e9 : 0;
        double pct_bw = ceil.measured && r.ok ? 100 * gbps / ceil.copy_gbps : 0;
        double pct_ffma = ceil.measured && r.ok ? 100 * gflops / (ceil.ffma_f32_tflops * 1e3) : 0;
        const auto &w = r.w;
        arr.push_back({{"workload", r.workload}, {"key", r.key}, {"strategy", r.strategy}, {"default", r.is_default},
                       {"device", device_name(dev)}, {"dtype", r.dtype}, {"n", w.n}, {"h", w.h}, {"w", w.w},
                       {"c", w.c}, {"k", w.k}, {"r", w.r}, {"s", w.s}, {"stride_h", w.stride_h},
                       {"stride_w", w.stride_w}, {"groups", w.groups}, {"flops", r.flops}, {"bytes", r.bytes},
                       {"flops_per_byte", r.flops / r.bytes}, {"runtime_ms", r.median_ms}, {"min_ms", r.min_ms},
                       {"max_ms", r.max_ms}, {"host_ms", r.host_ms}, {"samples", r.samples}, {"gbps", gbps},
                       {"gflops", gflops}, {"pct_copy_bw", pct_bw}, {"pct_ffma", pct_ffma}, {"check_ok", r.ok},
                       {"check", r.check}, {"rel_l2", r.rel_l2}});
        csv << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:.4g},{:.6g},{:.6g},{:.6g},{:.6g},{},"
                           "{:.4g},{:.4g},{:.3g},{:.3g},{},{:.3g},\"{}\"\n",
                           r.workload, r.strategy, r.is_default, device_name(dev), r.dtype, w.n, w.h, w.w, w.c, w.k,
                           w.r, w.s, w.stride_h, w.stride_w, w.dil_h, w.dil_w, w.groups, r.flops, r.bytes,
                           r.flops / r.bytes, r.median_ms, r.min_ms, r.max_ms, r.host_ms, r.samples, gbps, gflops,
                           pct_bw, pct_ffma, r.ok, r.rel_l2, r.key);
    }
    j["results"] = arr;
    std::ofstream(dir + "/results.json") << j.dump(1) << "\n";
}

}  // namespace

int run_bench(const BenchOptions &opt) {
    std::vector<SuiteEntry> entries;
    std::string suite_name = opt.suite;
    if (!opt.suite.empty()) entries = load_suite(resolve_suite(opt.suite));
    for (const auto &k : opt.keys) entries.push_back({"cli", k});
    if (entries.empty()) throw WorkloadError("nothing to run: give --suite NAME or --workload KEY");
    if (opt.variants != "all" && opt.variants != "default")
        throw WorkloadError("--variants '" + opt.variants + "' is not one of all, default");
    DType dfilter{};
    if (!opt.dtype.empty() && !parse_dtype(opt.dtype, &dfilter))
        throw WorkloadError("--dtype '" + opt.dtype + "' is not supported (f32, f16, bf16)");

    // Parse everything first: a bad key stops the run before any kernel does.
    std::vector<std::pair<SuiteEntry, Conv2dWorkload>> work;
    for (const auto &e : entries) {
        Conv2dWorkload w = parse_conv2d(e.key);
        if (!opt.dtype.empty() && w.dtype != dfilter) continue;
        work.emplace_back(e, w);
    }

    std::string why;
    Device dev = pick_device(opt.device, &why);
    std::cout << "device: " << device_name(dev) << " -- " << why << "\n";
    install_halide_error_handler();
    nlohmann::json ctx = run_context(opt.command_line);
    ctx["device"] = device_name(dev);
    ctx["device_reason"] = why;
    ctx["suite"] = suite_name;
    Ceilings ceil;
    if (dev == Device::cuda) {
        cuda::install_halide_hooks();
        cuda::make_current();
        if (opt.ceilings) {
            ceil = measure_ceilings();
            std::cout << fmt::format("ceilings (measured now): copy {:.0f} GB/s, FFMA f32 {:.1f} TFLOP/s, HFMA2 f16 "
                                     "{:.1f} TFLOP/s (CUDA cores; Halide emits no tensor-core code)\n",
                                     ceil.copy_gbps, ceil.ffma_f32_tflops, ceil.hfma2_f16_tflops);
            ctx["ceilings"] = {{"copy_gbps", ceil.copy_gbps},
                               {"ffma_f32_tflops", ceil.ffma_f32_tflops},
                               {"hfma2_f16_tflops", ceil.hfma2_f16_tflops}};
        }
    }

    TimingOptions topt;
    topt.min_samples = opt.min_samples;
    topt.min_seconds = opt.min_seconds;
    std::mt19937_64 rng(std::random_device{}());
    std::vector<Row> rows;
    int failures = 0;
    for (auto &[entry, w] : work) {
        auto cands = conv2d_candidates(w, dev);
        if (cands.empty()) {
            std::cout << fmt::format("{}: no {} kernel for {} -- skipped\n", entry.name, device_name(dev), to_key(w));
            continue;
        }
        if (opt.variants == "default") cands.resize(1);
        if (!opt.only.empty())
            cands.erase(std::remove_if(cands.begin(), cands.end(),
                                       [&](const KernelVariant *v) {
                                           return std::find(opt.only.begin(), opt.only.end(), v->name) == opt.only.end();
                                       }),
                        cands.end());
        std::vector<std::unique_ptr<Conv2dTensors>> tensors;
        std::vector<std::function<void()>> fns;
        std::vector<size_t> row_of;
        for (size_t i = 0; i < cands.size(); ++i) {
            const KernelVariant &v = *cands[i];
            Row r;
            r.workload = entry.name;
            r.key = to_key(w);
            r.strategy = v.name;
            r.is_default = i == 0;
            r.dtype = dtype_name(w.dtype);
            r.flops = conv2d_flops(w);
            r.bytes = conv2d_bytes(w);
            r.w = w;
            auto t = std::make_unique<Conv2dTensors>(make_conv2d_tensors(w));
            randomize(*t, w, rng);
            try {
                run_conv2d(v, w, *t);  // correctness before speed: fresh data, poisoned output
                Comparison c = check_conv2d(w, *t, 4096, rng);
                r.ok = c.ok();
                r.check = c.summary();
                r.rel_l2 = c.rel_l2;
            } catch (const std::exception &e) {
                r.ok = false;
                r.check = e.what();
            }
            if (!r.ok) {
                ++failures;
                std::cout << fmt::format("{} {}: FAILED check: {}\n", entry.name, v.name, r.check);
            } else {
                Conv2dTensors *tp = t.get();
                const KernelVariant *vp = &v;
                Conv2dWorkload wc = w;
                fns.push_back([tp, vp, wc] { run_conv2d(*vp, wc, *tp); });
                row_of.push_back(rows.size());
                tensors.push_back(std::move(t));
            }
            rows.push_back(r);
        }
        auto stats = time_interleaved(fns, dev == Device::cuda, topt);
        for (size_t i = 0; i < stats.size(); ++i) {
            Row &r = rows[row_of[i]];
            r.median_ms = stats[i].median_ms;
            r.min_ms = stats[i].min_ms;
            r.max_ms = stats[i].max_ms;
            r.host_ms = stats[i].host_median_ms;
            r.samples = int(stats[i].host_ms.size());
        }
    }

    std::cout << fmt::format("\n{:<26} {:<34} {:>10} {:>10} {:>9} {:>9} {:>7}\n", "workload", "strategy", "median ms",
                             "GFLOP/s", "GB/s", ceil.measured ? "%copyBW" : "", "check");
    for (const auto &r : rows) {
        double gbps = r.bytes / (r.median_ms * 1e-3) / 1e9, gf = r.flops / (r.median_ms * 1e-3) / 1e9;
        std::string bw = ceil.measured && r.ok ? fmt::format("{:.1f}", 100 * gbps / ceil.copy_gbps) : "";
        if (r.ok)
            std::cout << fmt::format("{:<26} {:<34} {:>10.4f} {:>10.1f} {:>9.1f} {:>9} {:>7}\n", r.workload,
                                     r.strategy + (r.is_default ? "*" : ""), r.median_ms, gf, gbps, bw, "ok");
        else
            std::cout << fmt::format("{:<26} {:<34} {:>10} {:>10} {:>9} {:>9} {:>7}\n", r.workload, r.strategy, "-",
                                     "-", "-", "", "FAILED");
    }
    std::cout << "(* = the variant the dispatcher picks by default; times are "
              << (dev == Device::cuda ? "device time from CUDA events, median, L2 flushed" : "host wall time, median")
              << ")\n";
    if (!opt.out_dir.empty()) {
        write_outputs(opt.out_dir, ctx, rows, ceil, dev);
        std::cout << "wrote " << opt.out_dir << "/results.json and results.csv\n";
    }
    return failures ? 1 : 0;
}

}  // namespace blockfuse
