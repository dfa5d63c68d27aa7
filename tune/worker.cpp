#include "tune/worker.h"
#include "runtime/cuda_driver.h"
#include "runtime/dispatch.h"
#include "runtime/errors.h"
#include "runtime/op.h"
#include <HalideRuntime.h>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unistd.h>

namespace blockfuse {

namespace {

using Clock = std::chrono::steady_clock;

// The planted misbehaviour of a candidate (the test hook of worker.h), "" if none.
std::string planted(const std::map<std::string, int> &knobs) {
    const char *e = std::getenv("BLOCKFUSE_TUNE_PLANT");
    if (!e) return "";
    std::string s = e;
    for (size_t start = 0; start < s.size();) {
        size_t end = s.find(';', start);
        if (end == std::string::npos) end = s.size();
        const std::string item = s.substr(start, end - start);
        start = end + 1;
        const size_t colon = item.find(':'), eq = item.find('=');
        if (colon == std::string::npos || eq == std::string::npos || eq < colon) continue;
        auto it = knobs.find(item.substr(colon + 1, eq - colon - 1));
        if (it != knobs.end() && std::to_string(it->second) == item.substr(eq + 1)) return item.substr(0, colon);
    }
    return "";
}

// The current workload's data: made on its first candidate, kept while candidates of it come.
struct WorkloadData {
    std::string key;
    std::unique_ptr<Op> op;
    std::unique_ptr<OpData> timing, checking;
};

// Makes the workload's data (fresh random inputs) and its float64 reference, unless made already.
void prepare(const std::string &key, WorkloadData &wd) {
    if (wd.key == key) return;
    wd = WorkloadData{};
    wd.op = parse_op(key);
    std::mt19937_64 rng(std::random_device{}());
    wd.timing = wd.op->data(rng);
    wd.checking = wd.op->check_data(rng);
    // A check of a poisoned output computes the reference the data keeps for every candidate; its verdict
    // is of no interest.
    wd.checking->with_fresh_output()->check();
    wd.key = key;
}

nlohmann::json measure_one(const nlohmann::json &req, Device device, WorkloadData &wd, bool *restart) {
    const auto start = Clock::now();
    nlohmann::json out;
    auto finish = [&](const std::string &failure, const std::string &check) {
        out["failure"] = failure;
        out["check"] = check;
        out["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
        return out;
    };
    const std::string key = req.at("workload"), strategy = req.at("strategy");
    const auto knobs = req.at("knobs").get<std::map<std::string, int>>();
    const KernelVariant *v = nullptr;
    try {
        v = kernel_with_knobs(key, strategy, device, knobs, req.value("max_registers", 0), "tuner candidate");
        v->load();
    } catch (const std::exception &e) {
        return finish("build", e.what());
    }
    prepare(key, wd);
    const std::string plant = planted(knobs);
    if (plant == "crash") std::raise(SIGSEGV);
    if (plant == "timeout")
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    try {
        std::unique_ptr<OpData> d = wd.checking->with_fresh_output();
        if (plant != "wrong_answer") d->run(*v);
        Comparison cmp = d->check();  // correctness before speed: fresh data, poisoned output
        cmp.note = d->check_note();
        out["rel_l2"] = cmp.rel_l2;
        if (!cmp.ok()) return finish("wrong_answer", cmp.summary());
        out["check"] = cmp.summary();
        std::unique_ptr<OpData> own = wd.timing->with_fresh_output();
        own->run(*v);  // first call: allocations, module load
        TimingOptions topt;
        topt.min_samples = req.value("min_samples", topt.min_samples);
        topt.min_seconds = req.value("min_seconds", topt.min_seconds);
        topt.warmup = req.value("warmup", topt.warmup);
        topt.warmup_seconds = req.value("warmup_seconds", topt.warmup_seconds);
        std::string flush = req.value("l2_flush", std::string(l2_flush_name(topt.l2_flush)));
        parse_l2_flush(flush, topt.l2_flush);
        const auto stats = time_interleaved({[&] { own->run(*v); }}, device == Device::cuda, topt);
        out["median_ms"] = stats[0].median_ms;
        out["min_ms"] = stats[0].min_ms;
        out["max_ms"] = stats[0].max_ms;
        out["samples"] = stats[0].samples();
        const std::string check = out["check"];
        return finish("", check);
    } catch (const std::exception &e) {
        // On a GPU a failed launch may leave the context unusable: the next candidate gets a new worker.
        *restart = device == Device::cuda;
        return finish("launch", e.what());
    }
}

}  // namespace

int run_tune_worker(Device device) {
    // The protocol's channel is the stdout we were given; everything else printed goes to the log.
    FILE *protocol = fdopen(dup(1), "w");
    dup2(2, 1);
    install_halide_error_handler();
    halide_reuse_device_allocations(nullptr, true);
    if (device == Device::cuda) {
        cuda::install_halide_hooks();
        cuda::make_current();
    }
    WorkloadData wd;
    std::string line;
    while (std::getline(std::cin, line)) {
        nlohmann::json reply;
        bool restart = false;
        try {
            const nlohmann::json req = nlohmann::json::parse(line);
            if (req.contains("prepare")) {
                const auto start = Clock::now();
                prepare(req.at("prepare"), wd);
                reply = {{"failure", ""}, {"seconds", std::chrono::duration<double>(Clock::now() - start).count()}};
            } else {
                reply = measure_one(req, device, wd, &restart);
            }
        } catch (const std::exception &e) {
            reply = {{"failure", "launch"}, {"check", std::string("worker: ") + e.what()}};
            restart = true;
        }
        reply["restart"] = restart;
        std::fprintf(protocol, "%s\n", reply.dump().c_str());
        std::fflush(protocol);
        if (restart) return 3;
    }
    return 0;
}

Runner::Runner(std::string argv0, Device device, std::string log_path, double timeout_s)
    : argv0_(std::move(argv0)), log_path_(std::move(log_path)), device_(device), timeout_s_(timeout_s) {}

MeasureResult Runner::exchange(const nlohmann::json &req, double timeout_s, const char *what) {
    if (!child_.running()) {
        child_.start({argv0_, "tune-worker", "--device", device_name(device_)}, log_path_);
        ++started_;
        prepared_.clear();
    }
    MeasureResult m;
    std::string reply;
    ProcessResult ended;
    const auto start = std::chrono::steady_clock::now();
    if (!child_.request(req.dump(), timeout_s, &reply, &ended)) {
        m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        m.failure = ended.timed_out ? "timeout" : "crash";
        m.check = fmt::format("worker {} {} (log: {})", ended.describe(), what, log_path_);
        prepared_.clear();
        return m;
    }
    const nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
    if (j.is_discarded()) {
        child_.stop();
        prepared_.clear();
        m.failure = "crash";
        m.check = "worker replied with something not JSON: " + reply.substr(0, 200);
        return m;
    }
    m.failure = j.value("failure", "");
    m.check = j.value("check", "");
    m.rel_l2 = j.value("rel_l2", 0.0);
    m.median_ms = j.value("median_ms", 0.0);
    m.min_ms = j.value("min_ms", 0.0);
    m.max_ms = j.value("max_ms", 0.0);
    m.samples = j.value("samples", 0);
    m.seconds = j.value("seconds", 0.0);
    if (j.value("restart", false)) {
        child_.stop();
        prepared_.clear();
    }
    return m;
}

MeasureResult Runner::measure(const MeasureRequest &r) {
    if (prepared_ != r.workload || !child_.running()) {
        // The workload's data and float64 reference, made once per worker under a timeout of their own,
        // so that a candidate's timeout bounds the candidate alone.
        MeasureResult p = exchange({{"prepare", r.workload}}, std::max(timeout_s_, kPrepareTimeoutSeconds),
                                   "while making the workload's data and reference");
        if (!p.failure.empty()) return p;
        prepared_ = r.workload;
    }
    const nlohmann::json req = {{"workload", r.workload},
                                {"strategy", r.strategy},
                                {"knobs", r.knobs},
                                {"max_registers", r.max_registers},
                                {"min_samples", r.timing.min_samples},
                                {"min_seconds", r.timing.min_seconds},
                                {"warmup", r.timing.warmup},
                                {"warmup_seconds", r.timing.warmup_seconds},
                                {"l2_flush", l2_flush_name(r.timing.l2_flush)}};
    return exchange(req, timeout_s_, "on this candidate");
}

}  // namespace blockfuse
