#include "bench/harness.h"
#include "runtime/call_memory.h"
#include "runtime/autoscheduler.h"
#include <cmath>
#include "runtime/block.h"
#include "runtime/stem.h"
#include "runtime/ceilings.h"
#include "runtime/model.h"
#include "runtime/check.h"
#include "runtime/conv2d.h"
#include "runtime/conv2d_tc.h"
#include "runtime/cuda_driver.h"
#include "runtime/timing.h"
#include "schedules/block_knobs.h"
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#ifndef BLOCKFUSE_SOURCE_DIR
#define BLOCKFUSE_SOURCE_DIR "."
#endif
#include "build_info.h"

namespace blockfuse {
namespace fs = std::filesystem;

std::string resolve_suite(const std::string &suite) {
    for (const std::string &p :
         {suite, "workloads/" + suite + ".txt", std::string(BLOCKFUSE_SOURCE_DIR) + "/workloads/" + suite + ".txt"})
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
    ctx["blockfuse_commit"] = BLOCKFUSE_GIT_COMMIT;
    ctx["source_hash"] = BLOCKFUSE_SOURCE_HASH;
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
        record_gpu_state(ctx, "start");
    }
    return ctx;
}

void record_gpu_state(nlohmann::json &ctx, const std::string &when) {
    if (!cuda::device().available) return;
    const cuda::GpuState st = cuda::gpu_state();
    auto &gpu = ctx["gpu"];
    if (!st.available) {
        gpu["nvml"] = st.reason;
        return;
    }
    gpu["driver_version"] = st.driver_version;
    gpu["sm_clock_mhz_board_max"] = st.sm_clock_max_mhz;
    gpu["sm_clock_mhz_at_" + when] = st.sm_clock_mhz;
    gpu["mem_clock_mhz_at_" + when] = st.mem_clock_mhz;
}

namespace {

// The data the candidates of one workload run on, made on first use and shared: one fresh random input
// set for timing (inputs, weights and biases are read-only for every kernel; each candidate times into an
// output of its own), one for checking (its float64 reference computed once). With a fresh 115 MB input per
// candidate, a 60-variant depthwise run had timed nothing after 230 s on the H200; with one shared input,
// two such runs and PyTorch took 348 s (bench/results/h200/depthwise-flat/).
struct SharedData {
    std::shared_ptr<const Op> op;
    std::mt19937_64 *rng;
    std::unique_ptr<OpData> timing, checking;
    OpData &for_timing() {
        if (!timing) timing = op->data(*rng);
        return *timing;
    }
    OpData &for_checking() {
        if (!checking) checking = op->check_data(*rng);
        return *checking;
    }
};

// One candidate: the row's problem columns, label and per-kernel accounting (flops and bytes are their
// sums), and closures that time one call and check against the reference. The label: the strategy, with
// the name of a named variant (a generated kernel's name is in the line that says where it came from),
// and a note where the strategy needs one.
BenchCandidate make_candidate(const std::string &name, const std::shared_ptr<SharedData> &shared,
                              const ChosenKernel &ck, bool is_default) {
    const Op &op = *shared->op;
    const KernelVariant &v = *ck.variant;
    BenchCandidate c;
    c.variant = &v;
    c.row.workload = name;
    c.row.key = op.key();
    c.row.strategy =
        ck.strategy + (find_data_variant(v.name) == &v ? " (" + v.name + ")" : "") + op.strategy_note(ck.strategy);
    c.row.variant = v.name;
    c.row.family = v.family;
    c.row.knobs = v.schedule_knobs();
    c.row.max_registers = v.max_registers;
    c.row.pick_source = ck.source;
    c.row.strategy_name = ck.strategy;
    c.row.why = v.why;
    c.row.provider = kernel_provider(v);
    c.row.record_target = record_target(v.device);
    c.row.is_default = is_default;
    c.row.dtype = dtype_name(op.dtype());
    c.row.kernels = op.costs(v);
    for (const auto &k : c.row.kernels) c.row.flops += k.flops, c.row.bytes += k.bytes;
    c.row.w = op.problem();
    auto own = std::make_shared<std::unique_ptr<OpData>>();  // this candidate's timing output, made on first use
    c.run = [shared, own, &v] {
        if (!*own) *own = shared->for_timing().with_fresh_output();
        (*own)->run(v);
    };
    c.check = [shared, &v] {
        std::unique_ptr<OpData> d = shared->for_checking().with_fresh_output();
        d->run(v);
        Comparison cmp = d->check();
        cmp.note = d->check_note();
        return cmp;
    };
    return c;
}

}  // namespace

std::vector<ChosenKernel> choose_kernels(const std::string &key, Device dev, const Selection &sel,
                                         const TuningRecords *records) {
    std::vector<std::string> strategies = strategies_of(key);
    if (!sel.strategies.empty()) {
        std::vector<std::string> kept;
        for (const auto &s : strategies)
            if (std::find(sel.strategies.begin(), sel.strategies.end(), s) != sel.strategies.end()) kept.push_back(s);
        if (kept.empty()) {
            std::string list;
            for (const auto &s : strategies) list += (list.empty() ? "" : ", ") + s;
            throw WorkloadError("--strategies: none of them applies to " + canonical_key(key) +
                                " (its strategies: " + list + ")");
        }
        strategies = kept;
    }
    // The default strategy's pick first.
    const std::string first = default_strategy(key, dev, records);
    std::stable_partition(strategies.begin(), strategies.end(), [&first](const std::string &s) { return s == first; });
    std::vector<ChosenKernel> out;
    std::string unavailable;
    for (const auto &s : strategies) {
        Pick p;
        try {
            p = dispatch(key, s, dev, records, sel.heuristics_only);
        } catch (const WorkloadError &e) {
            // this strategy cannot serve the key within its limits; the others may
            unavailable += std::string(unavailable.empty() ? "" : "; ") + e.what();
            if (!sel.quiet)
                std::cout << fmt::format("dispatch: {} {}: not available: {}\n", canonical_key(key), s, e.what());
            continue;
        }
        // A record measured a kernel of its knobs built from the sources of then: where they changed since (the
        // kernel's name hash differs), its time says nothing of this kernel, and a faster rule may lose to it.
        if (p.record && !sel.quiet && !p.record->variant.empty() && p.record->variant != p.variant->name)
            std::cout << fmt::format(
                "tuning record: {} {}: measured {:.4g} ms as {} (commit {}); its sources changed since (now {}): "
                "the time is not this kernel's; retune it (blockfuse tune --workload {} --strategies {})\n",
                canonical_key(key), s, p.record->median_ms, p.record->variant,
                p.record->commit.empty() ? "unknown" : p.record->commit, p.variant->name, canonical_key(key), s);
        out.push_back({p.variant, s, p.source});
        if (sel.all_variants)
            for (const KernelVariant *v : data_variants_for(key, s, dev))
                if (v != p.variant) out.push_back({v, s, "named variant"});
    }
    if (out.empty()) throw WorkloadError("no kernel can serve " + canonical_key(key) + ": " + unavailable);
    // A line per workload where records exist for this target but none for the workload (run_bench says
    // once when none at all is for this target).
    if (records && !sel.quiet && !sel.heuristics_only &&
        records->for_target(record_target(dev), BLOCKFUSE_HALIDE_VERSION) &&
        !std::any_of(out.begin(), out.end(), [](const ChosenKernel &c) { return c.source == "tuning record"; }))
        std::cout << fmt::format("tuning records: NONE for {} on {} (Halide {})\n", canonical_key(key),
                                 record_target(dev), BLOCKFUSE_HALIDE_VERSION);
    if (!sel.only.empty()) {
        std::vector<ChosenKernel> kept;
        for (const auto &c : out)
            for (const auto &o : sel.only)
                if (c.variant->name.find(o) != std::string::npos) {
                    kept.push_back(c);
                    break;
                }
        out = kept;
    }
    return out;
}

std::vector<BenchCandidate> build_candidates(const SuiteEntry &entry, const std::vector<ChosenKernel> &kernels,
                                             std::mt19937_64 &rng) {
    auto shared = std::make_shared<SharedData>();
    shared->op = parse_op(entry.key);
    shared->rng = &rng;
    std::vector<BenchCandidate> out;
    for (size_t i = 0; i < kernels.size(); ++i) out.push_back(make_candidate(entry.name, shared, kernels[i], i == 0));
    return out;
}

namespace {

// A row with a kernel on the tensor cores: each such kernel's roof is the ceiling of its instruction and the row's dtype
// measured in this run, wgmma's for a kernel built with wgmma (mma.sync's is no lower bound there), else mma.sync's.
bool uses_tensor_cores(const Row &r) {
    return std::any_of(r.kernels.begin(), r.kernels.end(), [](const KernelCost &k) { return k.tensor_cores; });
}
double wgmma_ceiling_tflops(const Row &r, const Ceilings &ceil) {
    return r.dtype == "bf16" ? ceil.wgmma_bf16_tflops : ceil.wgmma_f16_tflops;
}
double mma_sync_ceiling_tflops(const Row &r, const Ceilings &ceil) {
    return r.dtype == "bf16" ? ceil.mma_bf16_tflops : ceil.mma_f16_tflops;
}
// The instruction(s) of the row's tensor-core kernels: "mma.sync", "wgmma", or both.
std::string tensor_instruction(const Row &r) {
    bool wg = false, sync = false;
    for (const auto &k : r.kernels)
        if (k.tensor_cores) (k.wgmma ? wg : sync) = true;
    return wg && sync ? "mma.sync+wgmma" : wg ? "wgmma" : "mma.sync";
}
// The row's tensor-core roof: its tensor-core kernels' ops over the time they take at their own ceilings (one
// instruction: that ceiling; both: between them, weighted by their ops); 0 where a ceiling was not measured.
double mma_ceiling_tflops(const Row &r, const Ceilings &ceil) {
    double ops = 0, seconds = 0;
    for (const auto &k : r.kernels) {
        if (!k.tensor_cores) continue;
        const double R = k.wgmma ? wgmma_ceiling_tflops(r, ceil) : mma_sync_ceiling_tflops(r, ceil);
        if (R <= 0) return 0;
        ops += k.flops, seconds += k.flops / R;
    }
    return seconds > 0 ? ops / seconds : mma_sync_ceiling_tflops(r, ceil);
}
// A tensor-core row's FLOP rate as a share of that ceiling (0 where none was measured).
double pct_of_mma_ceiling(const Row &r, const Ceilings &ceil) {
    const double roof = mma_ceiling_tflops(r, ceil);
    return roof > 0 && r.ok ? 100 * r.flops / (r.median_ms * 1e-3) / (roof * 1e12) : 0;
}

nlohmann::json kernels_json(const Row &r) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto &k : r.kernels) {
        nlohmann::json j{{"name", k.name}, {"flops", k.flops}, {"bytes", k.bytes}, {"rereads", k.rereads}};
        if (!std::isnan(k.executed_flops)) j["executed_flops"] = k.executed();  // NaN: not modelled, left out
        if (k.tensor_cores) j["tensor_cores"] = true;
        if (k.wgmma) j["wgmma"] = true;
        a.push_back(j);
    }
    return a;
}

// A CSV field as RFC 4180 has it: quoted when it holds a comma, a quote or a line break (a strategy label such as
// "fused (...) [split at SE: tile sums, then the block with the gate]", a workload key), quotes doubled.
std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

// The schema of results.json (bench/results.schema.json); a change of a field's meaning or a new required
// field is a new version.
constexpr int kResultsSchemaVersion = 1;

// The run as one document: its context and a row per candidate (results.json; the CSV is derived from it).
nlohmann::json results_document(const nlohmann::json &ctx, const std::vector<Row> &rows, const Ceilings &ceil,
                                Device dev) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto &r : rows) {
        double gbps = r.ok ? r.bytes / (r.median_ms * 1e-3) / 1e9 : 0;
        double gflops = r.ok ? r.flops / (r.median_ms * 1e-3) / 1e9 : 0;
        double pct_bw = ceil.measured && r.ok ? 100 * gbps / ceil.copy_gbps : 0;
        double pct_ffma = ceil.measured && r.ok ? 100 * gflops / (ceil.ffma_f32_tflops * 1e3) : 0;
        const auto &w = r.w;
        arr.push_back({{"operation", r.key.substr(0, r.key.find(':'))},
                       {"workload", r.workload},
                       {"key", r.key},
                       {"strategy", r.strategy_name},
                       {"variant", r.variant},
                       {"label", r.strategy},
                       {"default", r.is_default},
                       {"device", device_name(dev)},
                       {"dtype", r.dtype},
                       {"n", w.n},
                       {"h", w.h},
                       {"w", w.w},
                       {"d", w.d},
                       {"c", w.c},
                       {"k", w.k},
                       {"t", w.t},
                       {"r", w.r},
                       {"s", w.s},
                       {"stride_d", w.stride_d},
                       {"stride_h", w.stride_h},
                       {"stride_w", w.stride_w},
                       {"dil_h", w.dil_h},
                       {"dil_w", w.dil_w},
                       {"groups", w.groups},
                       {"flops", r.flops},
                       {"bytes", r.bytes},
                       {"flops_per_byte", r.flops / r.bytes},
                       {"runtime_ms", r.median_ms},
                       {"min_ms", r.min_ms},
                       {"max_ms", r.max_ms},
                       {"host_ms", r.host_ms},
                       {"samples", r.samples},
                       {"gbps", gbps},
                       {"gflops", gflops},
                       {"pct_copy_bw", pct_bw},
                       {"pct_ffma", pct_ffma},
                       {"check_ok", r.ok},
                       {"check", r.check},
                       {"rel_l2", r.rel_l2},
                       {"kernels", kernels_json(r)},
                       {"family", r.family},
                       {"knobs", r.knobs},
                       {"max_registers", r.max_registers},
                       {"record_target", r.record_target},
                       {"origin", r.origin},
                       {"pick", r.pick_source},
                       {"why", r.why},
                       {"waterline_ms", r.waterline_ms},
                       {"provider", r.provider}});
        // Measured memory (runtime/call_memory.h); null where it was not counted.
        for (auto [field, v] : {std::pair{"workspace_bytes", r.workspace_bytes}, {"peak_bytes", r.peak_bytes}})
            arr.back()[field] = v >= 0 ? nlohmann::json(v) : nlohmann::json();
        if (uses_tensor_cores(r) && ceil.measured && r.ok) {
            arr.back()["pct_mma"] = pct_of_mma_ceiling(r, ceil);  // of the roof named in tensor_roof
            arr.back()["tensor_roof"] = tensor_instruction(r);
        }
    }
    return {{"schema_version", kResultsSchemaVersion}, {"context", ctx}, {"results", arr}};
}

// results.csv: a row per result, the columns of CUTLASS's profiler (bench/results_schema.py CSV_COLUMNS, the
// same derivation in Python; tests/python/test_results_schema.py holds the two together).
void write_outputs(const std::string &dir, const nlohmann::json &doc) {
    fs::create_directories(dir);
    std::ofstream csv(dir + "/results.csv");
    csv << "provider,operation,workload,strategy,variant,disposition,dtype,device,"
           "n,d,h,w,c,k,t,r,s,stride_d,stride_h,stride_w,dil_h,dil_w,groups,"
           "flops,bytes,flops_per_byte,runtime_ms,min_ms,max_ms,host_ms,samples,GB/s,GFLOP/s,pct_copy_bw,pct_ffma,"
           "rel_l2,workspace_bytes,peak_bytes,default,label,key\n";
    for (const auto &r : doc["results"]) {
        auto s = [&r](const char *k) { return csv_field(r.value(k, "")); };
        auto i = [&r](const char *k) { return std::to_string(r.value(k, 0)); };
        auto d = [&r](const char *k) {  // null (NaN in the row) is an empty cell
            return r.contains(k) && r[k].is_number() ? fmt::format("{:.6g}", r[k].get<double>()) : std::string();
        };
        const std::string disposition = r.value("check_ok", false) ? "passed" : "incorrect";
        std::vector<std::string> cells{s("provider"), s("operation"), s("workload"), s("strategy"),
                                       s("variant"),  disposition,    s("dtype"),    s("device")};
        for (const char *k : {"n", "d", "h", "w", "c", "k", "t", "r", "s", "stride_d", "stride_h", "stride_w", "dil_h",
                              "dil_w", "groups"})
            cells.push_back(i(k));
        for (const char *k : {"flops", "bytes", "flops_per_byte", "runtime_ms", "min_ms", "max_ms", "host_ms"})
            cells.push_back(d(k));
        cells.push_back(i("samples"));
        for (const char *k : {"gbps", "gflops", "pct_copy_bw", "pct_ffma", "rel_l2", "workspace_bytes", "peak_bytes"})
            cells.push_back(d(k));
        cells.push_back(r.value("default", false) ? "true" : "false");
        cells.push_back(s("label"));
        cells.push_back(s("key"));
        csv << fmt::format("{}\n", fmt::join(cells, ","));
    }
    std::ofstream(dir + "/results.json") << doc.dump(1) << "\n";
}

}  // namespace

namespace {
// The run's table: per workload and strategy the median time, GFLOP/s, the modelled compulsory
// DRAM bytes and their rate, the shares of the copy and FFMA ceilings measured in this run, and
// the ratio to the workload's fastest passing layer-by-layer row.
void print_table(const std::vector<Row> &rows, const Ceilings &ceil, Device dev, L2Flush flush) {
    std::map<std::string, double> lbl_ms;  // workload name + key -> fastest passing layer-by-layer time
    size_t sw = 8;
    for (const auto &r : rows) {
        sw = std::max(sw, r.strategy.size() + 1);
        if (r.ok && r.strategy.rfind("layer_by_layer", 0) == 0) {
            auto [it, fresh] = lbl_ms.emplace(r.workload + "|" + r.key, r.median_ms);
            if (!fresh) it->second = std::min(it->second, r.median_ms);
        }
    }
    const std::string head = fmt::format(
        "\n{:<26} {:<{}} {:>10} {:>10} {:>7} {:>10} {:>9} {:>9} {:>8} {:>7} {:>7} {:>7} {:>9}\n", "workload",
        "strategy", sw, "median ms", ceil.measured ? "floor ms" : "", ceil.measured ? "x floor" : "", "GFLOP/s",
        "model MB", "GB/s", ceil.measured ? "%copyBW" : "", ceil.measured ? "%FMA" : "", "vs LBL", "check", "ws MB");
    std::cout << head;
    for (const auto &r : rows) {
        const std::string name = r.strategy + (r.is_default ? "*" : "");
        if (!r.ok) {
            std::cout << fmt::format(
                "{:<26} {:<{}} {:>10} {:>10} {:>7} {:>10} {:>9.1f} {:>9} {:>8} {:>7} {:>7} {:>7}\n", r.workload, name,
                sw, "-", "", "", "-", r.bytes / 1e6, "-", "", "", "", "FAILED");
            continue;
        }
        const double gbps = r.bytes / (r.median_ms * 1e-3) / 1e9, gf = r.flops / (r.median_ms * 1e-3) / 1e9;
        const std::string bw = ceil.measured ? fmt::format("{:.1f}", 100 * gbps / ceil.copy_gbps) : "";
        const std::string ffma = ceil.measured ? fmt::format("{:.1f}", 100 * gf / (ceil.ffma_f32_tflops * 1e3)) : "";
        const std::string floor = ceil.measured ? fmt::format("{:.4f}", r.waterline_ms) : "";
        const std::string over = ceil.measured ? fmt::format("{:.1f}", r.median_ms / r.waterline_ms) : "";
        auto lbl = lbl_ms.find(r.workload + "|" + r.key);
        const std::string vs = lbl == lbl_ms.end() ? "" : fmt::format("{:.2f}x", lbl->second / r.median_ms);
        const std::string ws = r.workspace_bytes >= 0 ? fmt::format("{:.2f}", r.workspace_bytes / 1e6) : "";
        std::cout << fmt::format(
            "{:<26} {:<{}} {:>10.4f} {:>10} {:>7} {:>10.1f} {:>9.1f} {:>9.1f} {:>8} {:>7} {:>7} {:>7} {:>9}\n",
            r.workload, name, sw, r.median_ms, floor, over, gf, r.bytes / 1e6, gbps, bw, ffma, vs, "ok", ws);
    }
    if (ceil.measured)
        std::cout << fmt::format(
            "(floor ms = the waterline of the row's kernels, Eq. 12: the sum over its kernels of max(ops / "
            "{:.4g} TFLOP/s (tensor-core kernels: the mma.sync or wgmma ceiling of their dtype), compulsory bytes / "
            "{:.0f} "
            "GB/s), "
            "the {} measured now; x floor = median over it)\n",
            ceil.ffma_f32_tflops, ceil.copy_gbps,
            dev == Device::cuda ? "FFMA f32 and copy ceilings" : "CPU's FMA f32 and copy ceilings");
    if (ceil.measured && ceil.mma_f16_tflops > 0)
        for (const auto &r : rows)
            if (uses_tensor_cores(r) && r.ok)
                std::cout << fmt::format("tensor cores: {} {}: {:.1f} TFLOP/s = {:.1f}% of the {} {} ceiling ({:.1f}); "
                                         "its floor counts each tensor-core kernel against its instruction's ceiling\n",
                                         r.workload, r.strategy, r.flops / (r.median_ms * 1e-3) / 1e12,
                                         pct_of_mma_ceiling(r, ceil), tensor_instruction(r), r.dtype,
                                         mma_ceiling_tflops(r, ceil));
    std::cout << "(* = the variant the dispatcher picks by default; model MB = modelled compulsory DRAM bytes, GB/s = "
                 "those over the median time; vs LBL = the workload's fastest passing layer-by-layer time over this "
                 "row's (> 1: faster); ws MB = the bytes the call itself allocated, live at once, measured (hidden "
                 "activations, split-K workspaces; none: not counted on OpenCL); times are "
              << (dev == Device::cuda
                      ? std::string("device time from CUDA events, median, L2 flushed before each sample (") +
                            (flush == L2Flush::read ? "read-only eviction, clean" : "memset, left dirty") + ")"
                      : std::string("host wall time, median"))
              << ")\n";
}
}  // namespace

int run_bench(const BenchOptions &opt) {
    std::vector<SuiteEntry> entries;
    if (!opt.suite.empty()) entries = load_suite(resolve_suite(opt.suite));
    for (const auto &k : opt.keys) entries.push_back({k.substr(0, k.find(':')), k});  // named by family
    if (entries.empty()) throw WorkloadError("nothing to run: give --suite NAME or --workload KEY");
    if (opt.variants != "all" && opt.variants != "default")
        throw WorkloadError("--variants '" + opt.variants + "' is not one of all, default");
    for (const auto &a : opt.autoschedulers) check_autoscheduler_name(a);
    const std::vector<std::string> known{"layer_by_layer", "fused",  "depth_first", kLayerByLayerTc,
                                         kFusedTc,         "direct", kTensorCores};
    for (const auto &s : opt.strategies)
        if (std::find(known.begin(), known.end(), s) == known.end())
            throw WorkloadError("--strategies '" + s + "' is not one of " + fmt::format("{}", fmt::join(known, ", ")));
    DType dfilter{};
    if (!opt.dtype.empty() && !parse_dtype(opt.dtype, &dfilter))
        throw WorkloadError("--dtype '" + opt.dtype + "' is not supported (f32, f16, bf16)");

    // Parse everything first: a bad key (or records file) stops the run before any kernel does.
    std::optional<TuningRecords> records;
    if (!opt.no_tuning_records)
        records = TuningRecords::load(opt.tuning_records.empty() ? default_record_files() : opt.tuning_records);
    std::vector<SuiteEntry> work;
    for (const auto &e : entries)
        if (DType d = workload_dtype(e.key); opt.dtype.empty() || d == dfilter) work.push_back(e);

    std::string why;
    Device dev = opt.model_only && opt.device == "cuda" ? Device::cuda : pick_device(opt.device, &why);
    if (opt.model_only) why = "--model-only: the candidates of this device's kernels, nothing runs";
    std::cout << "device: " << device_name(dev) << " -- " << why << "\n";
    if (records && !records->for_target(record_target(dev), BLOCKFUSE_HALIDE_VERSION))
        std::cout << fmt::format(
            "tuning records: none of the {} in {} is for {} with Halide {}: every kernel comes from "
            "the variant data or the shape heuristics\n",
            records->records.size(),
            records->paths.empty() ? std::string("(no file)")
                                   : records->paths.front() + (records->paths.size() > 1 ? " ..." : ""),
            record_target(dev), BLOCKFUSE_HALIDE_VERSION);
    install_halide_error_handler();
    halide_reuse_device_allocations(nullptr, true);  // layer-by-layer intermediates: no cudaMalloc per call
    nlohmann::json ctx = run_context(opt.command_line);
    ctx["device"] = device_name(dev);
    ctx["device_reason"] = why;
    ctx["suite"] = opt.suite;
    Ceilings ceil;
    set_register_policy(opt.max_registers);
    if (dev == Device::cuda && !opt.model_only) {
        ctx["cuda_jit_max_registers"] = register_policy_description();
        std::cout << "registers per thread (CUDA JIT): " << register_policy_description() << "\n";
        cuda::install_halide_hooks();
        cuda::make_current();
        const auto &gpu = ctx["gpu"];
        std::cout << (gpu.contains("driver_version")
                          ? fmt::format("GPU: {}, driver {}, SM clock {} MHz now (board max {}), memory {} MHz\n",
                                        gpu.value("name", ""), gpu.value("driver_version", ""),
                                        gpu.value("sm_clock_mhz_at_start", 0u), gpu.value("sm_clock_mhz_board_max", 0u),
                                        gpu.value("mem_clock_mhz_at_start", 0u))
                          : fmt::format("GPU: {} ({})\n", gpu.value("name", ""), gpu.value("nvml", "")));
        if (opt.ceilings) {
            ceil = measure_ceilings();
            std::cout << fmt::format(
                "ceilings (measured now): copy {:.0f} GB/s, FFMA f32 {:.1f} TFLOP/s, HFMA2 f16 "
                "{:.1f} TFLOP/s (CUDA cores); mma.sync m16n8k16 f16 {:.1f}, bf16 {:.1f} TFLOP/s{} "
                "(tensor cores, the roof of the kernels on them)\n",
                ceil.copy_gbps, ceil.ffma_f32_tflops, ceil.hfma2_f16_tflops, ceil.mma_f16_tflops, ceil.mma_bf16_tflops,
                ceil.wgmma_f16_tflops > 0 ? fmt::format("; wgmma m64n256k16 f16 {:.1f}, bf16 {:.1f} TFLOP/s",
                                                        ceil.wgmma_f16_tflops, ceil.wgmma_bf16_tflops)
                                          : "");
            ctx["ceilings"] = {{"copy_gbps", ceil.copy_gbps},
                               {"ffma_f32_tflops", ceil.ffma_f32_tflops},
                               {"hfma2_f16_tflops", ceil.hfma2_f16_tflops},
                               {"mma_f16_tflops", ceil.mma_f16_tflops},
                               {"mma_bf16_tflops", ceil.mma_bf16_tflops}};
            if (ceil.wgmma_f16_tflops > 0) {
                ctx["ceilings"]["wgmma_f16_tflops"] = ceil.wgmma_f16_tflops;
                ctx["ceilings"]["wgmma_bf16_tflops"] = ceil.wgmma_bf16_tflops;
            }
        }
    }

    if ((dev == Device::cpu || dev == Device::opencl) && !opt.model_only && opt.ceilings) {
        ceil = measure_cpu_ceilings();  // PoCL runs on the same CPU
        std::cout << fmt::format("ceilings (measured now, {} cores): copy {:.1f} GB/s, FMA f32 {:.0f} GFLOP/s\n",
                                 std::thread::hardware_concurrency(), ceil.copy_gbps, ceil.ffma_f32_tflops * 1e3);
        ctx["ceilings"] = {{"copy_gbps", ceil.copy_gbps}, {"fma_f32_tflops", ceil.ffma_f32_tflops}};
    }

    TimingOptions topt;
    topt.min_samples = opt.min_samples;
    topt.min_seconds = opt.min_seconds;
    topt.l2_flush = opt.l2_flush;
    if (dev == Device::cuda) ctx["l2_flush"] = l2_flush_name(opt.l2_flush);
    std::mt19937_64 rng(std::random_device{}());
    std::vector<Row> rows;
    int failures = 0, not_run = 0;
    Selection sel;
    sel.strategies = opt.strategies;
    sel.all_variants = opt.variants == "all";
    sel.only = opt.only;
    sel.heuristics_only = opt.heuristics_only;
    std::unique_ptr<L2ReadEvictor> evictor;  // --single-run on CUDA
    std::string fatal;  // an error outside a candidate (a CUDA context a kernel left unusable): the run stops
    for (const auto &entry : work) {
        try {
            std::vector<ChosenKernel> kernels = choose_kernels(entry.key, dev, sel, records ? &*records : nullptr);
            // Halide's autoschedulers on the same workload, as rows beside ours (a device an autoscheduler does not
            // schedule stops the run here, before anything is timed)
            for (const auto &a : opt.autoschedulers)
                kernels.push_back({keep_variant(autoscheduled_kernel(*parse_op(entry.key), a, dev)),
                                   a + " (Halide autoscheduler)", "autoscheduler"});
            if (kernels.empty()) {  // every kernel filtered out by --variant: the workload did not run
                ++not_run;
                std::cout << fmt::format("{}: no kernel of {} passes --variant -- not run\n", entry.name, entry.key);
                continue;
            }
            std::vector<BenchCandidate> cands = build_candidates(entry, kernels, rng);
            if (opt.model_only) {
                for (auto &c : cands) {
                    c.row.check = "not run: --model-only";
                    std::cout << fmt::format("{} {}: {} [{}] ({}), {} kernels\n", entry.name, c.row.strategy,
                                             c.variant->name, c.variant->knob_summary(), c.variant->why,
                                             c.row.kernels.size());
                    rows.push_back(c.row);
                }
                continue;
            }
            // Each kernel from the prebuilt folder, the cache, or generated now; one line says which and why.
            auto load = [&entry](BenchCandidate &c) {
                const LoadedKernel &k = c.variant->load();
                c.row.origin = k.origin;
                std::cout << fmt::format("{} {}: {} [{}] ({})\n", entry.name, c.row.strategy, k.origin,
                                         c.variant->knob_summary(), c.variant->why);
            };
            if (opt.single_run) {  // one launch sequence per candidate, in order, for an external profiler
                // On CUDA each profiled run is bracketed by read-only L2 evictions (runtime/ceilings.h):
                // the run starts on an L2 of clean lines, and what it leaves dirty is written back
                // during the second eviction, where bench/ncu_compare.py adds it to the run.
                if (dev == Device::cuda && !evictor) evictor = std::make_unique<L2ReadEvictor>();
                for (auto &c : cands) {
                    load(c);
                    c.run();  // warm-up: host-to-device copies, allocations, module load
                    if (evictor) evictor->evict();
                    c.run();  // the profiled run
                    if (evictor) evictor->evict();
                    std::cout << fmt::format("ran once: {} {}\n", entry.name, c.row.strategy);
                    c.row.check = "not checked: --single-run";
                    rows.push_back(c.row);  // keeps the modelled kernels, in launch order, for the profiler's table
                }
                continue;
            }
            std::vector<std::function<void()>> fns;
            std::vector<size_t> row_of;
            for (auto &c : cands) {
                try {
                    load(c);
                    Comparison cmp = c.check();  // correctness before speed: fresh data, poisoned output
                    c.row.ok = cmp.ok();
                    c.row.check = cmp.summary();
                    c.row.rel_l2 = cmp.rel_l2;
                    if (c.row.ok) c.run();  // the timed tensors' first call (allocations, module load)
                    // Then one call counted: its arguments are on the device by now, so what it allocates is its
                    // own (OpenCL's allocations are not counted).
                    if (c.row.ok && dev != Device::opencl) {
                        const CallMemory m = measure_call_memory(dev, c.run);
                        c.row.workspace_bytes = double(m.peak_bytes);
                        c.row.peak_bytes = double(m.argument_bytes + m.peak_bytes);
                    }
                } catch (const std::exception &e) {
                    c.row.ok = false;
                    c.row.check = e.what();
                }
                if (!c.row.ok) {
                    ++failures;
                    std::cout << fmt::format("{} {}: FAILED check: {}\n", entry.name, c.row.strategy, c.row.check);
                } else {
                    fns.push_back(c.run);
                    row_of.push_back(rows.size());
                }
                rows.push_back(c.row);
            }
            auto stats = time_interleaved(fns, dev == Device::cuda, topt);
            for (size_t i = 0; i < stats.size(); ++i) {
                Row &r = rows[row_of[i]];
                r.median_ms = stats[i].median_ms;
                r.min_ms = stats[i].min_ms;
                r.max_ms = stats[i].max_ms;
                r.host_ms = stats[i].host_median_ms;
                r.samples = stats[i].samples();
            }
        } catch (const KernelError &) {
            throw;
        } catch (const WorkloadError &) {
            throw;
        } catch (const std::exception &e) {
            fatal = entry.name + ": " + e.what();
            std::cout << "error: " << fatal << " -- the run stops here; the rows so far are written\n";
            for (Row &r : rows)
                if (r.key == canonical_key(entry.key) && r.ok && r.samples == 0) {
                    r.ok = false;
                    r.check = "not timed: " + fatal;
                }
            ++failures;
            break;
        }
    }

    if (opt.model_only) {
        if (!opt.out_dir.empty()) write_outputs(opt.out_dir, results_document(ctx, rows, ceil, dev));
        return 0;
    }
    if (opt.single_run) {
        std::cout << "(--single-run: each candidate ran twice, warm-up then once between two read-only L2 evictions "
                     "(kernel l2_evict_read); nothing was checked or timed)\n";
        if (!opt.out_dir.empty()) write_outputs(opt.out_dir, results_document(ctx, rows, ceil, dev));
        return 0;
    }
    if (dev == Device::cuda) record_gpu_state(ctx, "end");
    if (ceil.measured)
        for (Row &r : rows)
            r.waterline_ms =
                1e3 * waterline_seconds(r.kernels, ceil.ffma_f32_tflops * 1e12, ceil.copy_gbps * 1e9,
                                        mma_sync_ceiling_tflops(r, ceil) * 1e12, wgmma_ceiling_tflops(r, ceil) * 1e12);
    print_table(rows, ceil, dev, topt.l2_flush);
    const nlohmann::json doc = results_document(ctx, rows, ceil, dev);
    if (!opt.out_dir.empty()) {
        write_outputs(opt.out_dir, doc);
        std::cout << "wrote " << opt.out_dir << "/results.json and results.csv\n";
    }
    if (!opt.record_to.empty()) {  // every kernel measured, as a tuning record
        const auto recs = records_from_results(doc, opt.command_line + " (" + ctx.value("timestamp", "") + ")");
        append_records(opt.record_to, recs);
        std::cout << "appended " << recs.size() << " tuning records to " << opt.record_to << "\n";
    }
    if (not_run && !failures) return 2;
    return failures ? 1 : 0;
}

}  // namespace blockfuse
