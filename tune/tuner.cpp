#include "tune/tuner.h"
#include "bench/harness.h"
#include "build_info.h"
#include "runtime/cuda_driver.h"
#include "runtime/dispatch.h"
#include "runtime/tuning_records.h"
#include "tune/search.h"
#include "tune/worker.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <iostream>
#include <thread>

namespace blockfuse {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Task {
    std::string name, key, strategy;
};

// FNV-1a: a task's search seed from the run's seed and the task, stable across runs and machines.
unsigned long long task_seed(unsigned long long seed, const Task &t) {
    unsigned long long h = 1469598103934665603ULL ^ seed;
    for (char c : t.key + "|" + t.strategy) h = (h ^ (unsigned char)c) * 1099511628211ULL;
    return h;
}

// How far apart two workloads of a family are, for seeding from the nearest records: log-ratios of the
// sizes, and a penalty where the window or stride differ.
double distance(const Problem &a, const Problem &b) {
    auto lr = [](int x, int y) { return std::abs(std::log(double(std::max(x, 1)) / std::max(y, 1))); };
    return lr(a.n, b.n) + lr(a.h, b.h) + lr(a.w, b.w) + lr(a.c, b.c) + lr(a.k, b.k) + lr(a.groups, b.groups) +
           lr(a.d, b.d) + 4.0 * (a.r != b.r || a.s != b.s || a.t != b.t) +
           4.0 * (a.stride_h != b.stride_h || a.stride_w != b.stride_w);
}

// Whether two record targets are GPUs of one architecture: "cuda:NAME:sm_XY" with the same sm_XY.
bool same_architecture(const std::string &a, const std::string &b) {
    auto arch = [](const std::string &t) {
        const size_t at = t.rfind(":sm_");
        return t.rfind("cuda:", 0) == 0 && at != std::string::npos ? t.substr(at) : std::string();
    };
    return !arch(a).empty() && arch(a) == arch(b);
}

// What one measurement times: a kernel (its name: the knobs it reads) at the register cap its module JITs at. Two
// such caps of one kernel are one build but two measurements; caps a tensor-core module raises to its floor are one.
std::string measured_kernel(const KernelVariant &k) { return k.name + ";regs=" + std::to_string(k.jit_register_cap()); }

std::string minutes_or_seconds(double s) {
    return s >= 120 ? fmt::format("{:.0f} min", s / 60) : fmt::format("{:.0f} s", s);
}

struct TaskReport {
    Task task;
    int trials = 0, resumed = 0, failed = 0;
    int aliases = 0;  // candidates that build a kernel measured already (knobs it does not read): not trials
    std::map<std::string, int> failures;
    size_t invalid = 0;
    double space = 0;
    double best_ms = 0, heuristic_ms = 0, best_named_ms = 0;
    std::string best_named, best_knobs;
    double seconds = 0, build_wall = 0, measure_wall = 0;
    std::string note;
};

class Tuner {
public:
    Tuner(const TuneOptions &opt, Device dev) : opt_(opt), dev_(dev) {
        if (opt.records.empty()) throw WorkloadError("--records FILE is required (the tuning records appended to)");
        std::vector<std::string> files;
        if (std::filesystem::exists(opt.records)) files.push_back(opt.records);
        own_ = TuningRecords::load(files);
        if (!opt.no_seed_records) {
            std::vector<std::string> seeds = opt.seed_records.empty() ? default_record_files() : opt.seed_records;
            seeds.erase(std::remove_if(seeds.begin(), seeds.end(),
                                       [&](const std::string &f) {
                                           std::error_code ec;
                                           return std::filesystem::exists(opt.records) &&
                                                  std::filesystem::equivalent(f, opt.records, ec);
                                       }),
                        seeds.end());
            others_ = TuningRecords::load(seeds);
        }
        target_ = record_target(dev);
        const std::string log = opt.records + ".worker.log";
        runner_ = std::make_unique<Runner>(opt.argv0, dev, log, opt.timeout_s);
    }

    TaskReport tune(const Task &t, const std::string &label);
    void measure_plan(const std::string &plan);

private:
    const TuneOptions &opt_;
    Device dev_;
    std::string target_;
    TuningRecords own_, others_;
    std::unique_ptr<Runner> runner_;

    bool same_target(const TuningRecord &r, const Task &t) const {
        return r.workload == t.key && r.strategy == t.strategy && r.target == target_ &&
               r.halide_version == BLOCKFUSE_HALIDE_VERSION;
    }
    void seed_and_resume(const Task &t, const SearchSpace &space, Search &search, TaskReport &rep);
    TuningRecord measure(const Task &t, const KernelVariant &v, const BuildOutcome &built, const std::string &searcher,
                         int trial);
};

void Tuner::seed_and_resume(const Task &t, const SearchSpace &space, Search &search, TaskReport &rep) {
    auto observe_record = [&](const TuningRecord &r, bool own) {
        const Candidate c = space.project(r.knobs, r.max_registers);
        // A record of exactly this space's kernel resumes; one whose other knobs differ (another heuristic
        // then), or whose kernel was built from other sources (its name's hash differs: the algorithm or a schedule
        // changed since it was measured), is a seed only.
        const KernelVariant *k = space.kernel(c, "record");
        if (k->schedule_knobs() != r.knobs || k->name != r.variant) {
            if (r.ok()) search.add_seed(c);
            return;
        }
        if (search.measured(c)) return;
        search.observe(c, r.ok() ? r.median_ms : kFailedScore);
        if (own) ++rep.resumed;
    };
    for (const TuningRecord &r : own_.records)
        if (same_target(r, t)) observe_record(r, true);
    // The fastest passing record of this strategy and Halide version in each group (`group_of`) of those `keep` takes.
    auto fastest_by = [&](auto keep, auto group_of) {
        std::map<std::string, const TuningRecord *> best;
        for (const TuningRecords *rs : {&own_, &others_})
            for (const TuningRecord &r : rs->records)
                if (r.ok() && r.strategy == t.strategy && r.halide_version == BLOCKFUSE_HALIDE_VERSION && keep(r)) {
                    const TuningRecord *&b = best[group_of(r)];
                    if (!b || r.median_ms < b->median_ms) b = &r;
                }
        return best;
    };
    const bool seeded = std::string(search.name()) != "random";
    if (seeded) {
        search.add_seed(space.default_candidate());
        // This workload's best record on each other GPU of this architecture (another sm_90 card's tiling is the
        // likeliest good start): a seed, measured here like any candidate, never applied.
        const auto siblings = fastest_by(
            [&](const TuningRecord &r) {
                return r.workload == t.key && r.target != target_ && same_architecture(r.target, target_);
            },
            [](const TuningRecord &r) { return r.target; });
        for (const auto &[target, r] : siblings) search.add_seed(space.project(r->knobs, r->max_registers));
        for (const KernelVariant *v : data_variants_for(t.key, t.strategy, dev_))
            search.add_seed(space.project(v->schedule_knobs(), v->max_registers));
    }
    for (const TuningRecord &r : others_.records)
        if (same_target(r, t)) observe_record(r, false);
    if (!seeded) return;
    // The nearest other workloads' best records of this family, strategy and target.
    const auto op = parse_op(t.key);
    const auto best_of = fastest_by(
        [&](const TuningRecord &r) {
            return r.workload != t.key && r.family == op->family(t.strategy) && r.target == target_;
        },
        [](const TuningRecord &r) { return r.workload; });
    std::vector<std::pair<double, const TuningRecord *>> near;
    for (const auto &[w, r] : best_of)
        if (parse_op(w)->dtype() == op->dtype()) near.push_back({distance(parse_op(w)->problem(), op->problem()), r});
    std::sort(near.begin(), near.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    for (size_t i = 0; i < near.size() && i < 3; ++i)
        search.add_seed(space.project(near[i].second->knobs, near[i].second->max_registers));
}

TuningRecord Tuner::measure(const Task &t, const KernelVariant &v, const BuildOutcome &built,
                            const std::string &searcher, int trial) {
    TuningRecord rec = record_of(v, t.key, t.strategy);
    rec.searcher = searcher;
    rec.trial = trial;
    rec.build_seconds = built.built ? built.seconds : 0;
    if (dev_ == Device::cuda) rec.l2_flush = l2_flush_name(opt_.timing.l2_flush);
    rec.source = fmt::format("blockfuse tune --search {} --seed {} ({})", searcher, opt_.seed, BLOCKFUSE_GIT_COMMIT);
    if (!built.ok) {
        rec.failure = "build";
        rec.check = built.message;
        rec.tuning_seconds = rec.build_seconds;
        return rec;
    }
    MeasureRequest req{t.key, t.strategy, v.schedule_knobs(), v.max_registers, opt_.timing};
    const MeasureResult m = runner_->measure(req);
    rec.failure = m.failure;
    rec.check = m.failure.empty() ? m.check : m.check.substr(0, 600);
    rec.rel_l2 = m.rel_l2;
    rec.median_ms = m.median_ms, rec.min_ms = m.min_ms, rec.max_ms = m.max_ms, rec.samples = m.samples;
    rec.tuning_seconds = rec.build_seconds + m.seconds;
    return rec;
}

TaskReport Tuner::tune(const Task &t, const std::string &label) {
    TaskReport rep;
    rep.task = t;
    const auto op = parse_op(t.key);
    const SearchSpace space(*op, t.strategy, dev_, launch_limits(dev_), opt_.pinned);
    rep.space = space.size();
    auto search = make_search(opt_.search, space, task_seed(opt_.seed, t));
    seed_and_resume(t, space, *search, rep);
    const Candidate dflt = space.default_candidate();
    const auto start = Clock::now();
    int done = rep.resumed, this_run = 0;
    const int batch = opt_.batch > 0 ? opt_.batch : 8;
    const int jobs = opt_.jobs > 0 ? opt_.jobs : std::max(1u, std::thread::hardware_concurrency());
    double best = 0;
    std::string best_knobs;
    // Each kernel measured once a register cap: candidates whose differing knobs the kernel does not read build the
    // same kernel (one name), and take the score it has (block_kernel_for gives unread knobs their defaults).
    std::map<std::string, double> kernel_score;
    for (const auto &[c, ms] : search->history()) {
        const KernelVariant *k = space.kernel(c, "");
        kernel_score.emplace(measured_kernel(*k), ms);
        if (ms < kFailedScore && (best == 0 || ms < best)) best = ms, best_knobs = k->knob_summary();
    }
    if (rep.resumed) std::cout << fmt::format("{} resumed: {} candidates measured before\n", label, rep.resumed);
    std::ofstream plan;
    if (!opt_.plan_out.empty()) {
        plan.open(opt_.plan_out, std::ios::app);
        if (!plan)
            throw WorkloadError("--plan-out '" + opt_.plan_out + "': cannot write to it (does its folder exist?)");
    }
    // --plan-out: one round (nothing is measured here to breed from) of trials up to `round_end`, each a distinct
    // kernel: a candidate that builds a kernel planned already in the round is no trial, another takes its place.
    const int round_end = done + std::min(batch, opt_.trials - done);
    int written = 0;
    while (done < opt_.trials && (opt_.minutes <= 0 || since(start) < opt_.minutes * 60)) {
        const int want = opt_.plan_out.empty() ? std::min(batch, opt_.trials - done) : round_end - done;
        const std::vector<Candidate> proposed = search->propose(want);
        if (proposed.empty()) {
            rep.note = fmt::format("the space is exhausted ({} valid points)", done);
            break;
        }
        std::vector<Candidate> cands;
        std::set<std::string> claimed;
        std::vector<std::pair<Candidate, std::string>> batch_aliases;
        std::vector<const KernelVariant *> vs;
        std::vector<KernelRequest> reqs;  // each build once: register caps of one kernel share it
        std::map<std::string, size_t> req_of_hash;
        std::vector<size_t> req_of;  // per candidate, its build in reqs
        for (const Candidate &c : proposed) {
            const KernelVariant *k = space.kernel(c, fmt::format("tuner candidate ({})", search->name()));
            const std::string id = measured_kernel(*k);
            if (const auto known = kernel_score.find(id); known != kernel_score.end()) {
                search->observe(c, known->second);  // another point of the same kernel: no trial
                ++rep.aliases;
                continue;
            }
            if (!claimed.insert(id).second) {  // an alias of a kernel of this batch: its score once measured
                batch_aliases.emplace_back(c, id);
                continue;
            }
            cands.push_back(c);
            vs.push_back(k);
            const auto [it, fresh] = req_of_hash.emplace(k->request().hash(), reqs.size());
            if (fresh) reqs.push_back(k->request());
            req_of.push_back(it->second);
        }
        if (cands.empty()) continue;
        const auto b0 = Clock::now();
        const std::vector<BuildOutcome> builds = ensure_built_all(reqs, kernel_cache_dir(), jobs, opt_.build_timeout_s);
        std::vector<BuildOutcome> built;
        for (size_t r : req_of) built.push_back(builds[r]);
        rep.build_wall += since(b0);
        if (!opt_.plan_out.empty()) {  // one round, built here, measured elsewhere
            for (size_t i = 0; i < vs.size(); ++i) {
                if (!built[i].ok) {
                    TuningRecord rec = measure(t, *vs[i], built[i], search->name(), ++done);
                    append_records(opt_.records, {rec});
                    ++rep.failed, ++rep.failures["build"];
                    continue;
                }
                plan << nlohmann::json{{"workload", t.key},
                                       {"strategy", t.strategy},
                                       {"knobs", vs[i]->schedule_knobs()},
                                       {"max_registers", vs[i]->max_registers},
                                       {"searcher", search->name()},
                                       {"trial", ++done},
                                       {"seed", opt_.seed},
                                       {"target", target_}}
                            .dump()
                     << "\n";
                ++written;
            }
            if (!plan.flush()) throw WorkloadError("--plan-out '" + opt_.plan_out + "': writing the plan failed");
            rep.aliases += int(batch_aliases.size());
            rep.note = fmt::format("planned {} candidates into {}", written, opt_.plan_out);
            if (done >= round_end) break;  // build failures count as the round's trials (recorded above)
            continue;
        }
        const auto m0 = Clock::now();
        for (size_t i = 0; i < cands.size(); ++i) {
            TuningRecord rec = measure(t, *vs[i], built[i], search->name(), ++done);
            ++this_run;
            append_records(opt_.records, {rec});
            search->observe(cands[i], rec.ok() ? rec.median_ms : kFailedScore);
            kernel_score[measured_kernel(*vs[i])] = rec.ok() ? rec.median_ms : kFailedScore;
            if (!rec.ok()) ++rep.failed, ++rep.failures[rec.failure];
            if (cands[i] == dflt && rec.ok()) rep.heuristic_ms = rec.median_ms;
            if (rec.ok() && (best == 0 || rec.median_ms < best))
                best = rec.median_ms, best_knobs = vs[i]->knob_summary();
            const double elapsed = since(start);
            const double eta = elapsed / this_run * (opt_.trials - done);
            std::cout << fmt::format("{} {} trial {}/{} | current {} | best {} ({}) | {} failed | {} | ETA {}\n", label,
                                     t.strategy, done, opt_.trials,
                                     rec.ok() ? fmt::format("{:.4g} ms", rec.median_ms) : rec.failure,
                                     best > 0 ? fmt::format("{:.4g} ms", best) : "-", best_knobs, rep.failed,
                                     minutes_or_seconds(elapsed), minutes_or_seconds(eta))
                      << std::flush;
        }
        rep.measure_wall += since(m0);
        for (const auto &[c, name] : batch_aliases) {
            search->observe(c, kernel_score.at(name));
            ++rep.aliases;
        }
    }
    rep.trials = done;
    rep.invalid = search->invalid_filtered();
    rep.seconds = since(start);
    rep.best_ms = best;
    rep.best_knobs = best_knobs;
    // The default and the named variants, as measured (this run or before), for the summary.
    for (const auto &[c, ms] : search->history()) {
        if (ms >= kFailedScore) continue;
        if (c == dflt) rep.heuristic_ms = ms;
        for (const KernelVariant *v : data_variants_for(t.key, t.strategy, dev_))
            if (space.project(v->schedule_knobs(), v->max_registers) == c &&
                (rep.best_named_ms == 0 || ms < rep.best_named_ms))
                rep.best_named_ms = ms, rep.best_named = v->name;
    }
    return rep;
}

void Tuner::measure_plan(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw WorkloadError("--measure '" + path + "': no such file (or it cannot be read)");
    std::vector<nlohmann::json> lines;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("workload") || !j.contains("strategy") || !j.contains("knobs"))
            throw WorkloadError(
                fmt::format("--measure '{}', line {}: not a plan line (workload, strategy, knobs)", path, n));
        lines.push_back(j);
    }
    std::set<std::string> warned;
    int n = 0, skipped = 0;
    const auto start = Clock::now();
    for (const auto &j : lines) {
        ++n;
        const Task t{"", canonical_key(j["workload"]), j["strategy"]};
        const auto knobs = j["knobs"].get<std::map<std::string, int>>();
        const int regs = j.value("max_registers", 0);
        if (std::any_of(own_.records.begin(), own_.records.end(), [&](const TuningRecord &r) {
                return same_target(r, t) && r.knobs == knobs && r.max_registers == regs;
            })) {
            ++skipped;
            continue;
        }
        if (const std::string planned = j.value("target", ""); planned != target_ && warned.insert(planned).second)
            std::cout << fmt::format("note: the plan was made for {}, this is {}: the records are keyed by this one\n",
                                     planned, target_);
        const KernelVariant *v = kernel_with_knobs(t.key, t.strategy, dev_, knobs, regs, "tuner candidate (plan)");
        BuildOutcome here;
        here.ok = true;  // it is loaded from the carried cache by the worker, or fails there as a build failure
        TuningRecord rec = measure(t, *v, here, j.value("searcher", ""), j.value("trial", 0));
        rec.source = fmt::format("blockfuse tune --measure {} (planned by --search {} --seed {})", path, rec.searcher,
                                 j.value("seed", 0ULL));
        append_records(opt_.records, {rec});
        own_.records.push_back(rec);
        std::cout << fmt::format("[{}/{}] {} {} {} | {} | {}\n", n, lines.size(), t.key, t.strategy, v->knob_summary(),
                                 rec.ok() ? fmt::format("{:.4g} ms", rec.median_ms)
                                          : rec.failure + ": " + rec.check.substr(0, 160),
                                 minutes_or_seconds(since(start)))
                  << std::flush;
    }
    std::cout << fmt::format("measured {} planned candidates ({} skipped: in {} already) in {}\n", n - skipped, skipped,
                             opt_.records, minutes_or_seconds(since(start)));
}

std::string failures_text(const std::map<std::string, int> &f) {
    std::string s;
    for (const auto &[k, n] : f) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, k);
    return s;
}

}  // namespace

int run_tune(const TuneOptions &opt) {
    if (opt.shards < 1 || opt.shard < 0 || opt.shard >= opt.shards)
        throw WorkloadError(fmt::format("--shard {}/{}: want i/N with 0 <= i < N", opt.shard, opt.shards));
    if (opt.trials < 1) throw WorkloadError("--trials must be at least 1");
    if (!opt.plan_out.empty() && !opt.measure_plan.empty())
        throw WorkloadError("--plan-out and --measure exclude each other");
    if (!opt.gpu.empty()) setenv("BLOCKFUSE_GPU", opt.gpu.c_str(), 1);
    std::string why;
    Device dev;
    if (!opt.plan_out.empty()) {  // building only: the device need not be here
        if (!parse_device(opt.device, &dev) || dev == Device::opencl)
            throw WorkloadError("--plan-out needs --device cuda or cpu");
        if (dev == Device::cuda && opt.gpu.empty() && !cuda::device().available)
            throw WorkloadError(
                "--plan-out for CUDA without a GPU here: name the GPU, e.g. --gpu \"NVIDIA H200:sm_90\"");
        why = "--plan-out: building for it, measuring elsewhere";
    } else {
        dev = pick_device(opt.device, &why);
        if (dev == Device::opencl) throw WorkloadError("--device opencl: the tuner measures on cpu or cuda");
    }
    Tuner tuner(opt, dev);
    std::cout << fmt::format("device: {} -- {}\ntarget: {} (Halide {}); records: {}\n", device_name(dev), why,
                             record_target(dev), BLOCKFUSE_HALIDE_VERSION, opt.records);
    if (!opt.measure_plan.empty()) {
        tuner.measure_plan(opt.measure_plan);
        return 0;
    }
    std::vector<SuiteEntry> entries;
    if (!opt.suite.empty()) entries = load_suite(resolve_suite(opt.suite));
    for (const auto &k : opt.keys) entries.push_back({k.substr(0, k.find(':')), k});
    if (entries.empty()) throw WorkloadError("nothing to tune: give --suite NAME or --workload KEY");
    std::vector<Task> tasks;
    for (const auto &e : entries) {
        const std::string key = canonical_key(e.key);
        for (const std::string &s : strategies_of(key))
            if (opt.strategies.empty() ||
                std::find(opt.strategies.begin(), opt.strategies.end(), s) != opt.strategies.end())
                tasks.push_back({e.name, key, s});
    }
    if (tasks.empty()) throw WorkloadError("--strategies: none applies to the workloads given");
    std::vector<Task> mine;
    for (size_t i = 0; i < tasks.size(); ++i)
        if (int(i % opt.shards) == opt.shard) mine.push_back(tasks[i]);
    std::cout << fmt::format(
        "{} tasks (workload x strategy){}; {} search, seed {}, {} trials each{}\n", mine.size(),
        opt.shards > 1 ? fmt::format(", shard {}/{} of {}", opt.shard, opt.shards, tasks.size()) : "", opt.search,
        opt.seed, opt.trials, opt.minutes > 0 ? fmt::format(" or {} min", opt.minutes) : "");
    std::vector<TaskReport> reports;
    int not_tuned = 0;
    for (size_t i = 0; i < mine.size(); ++i) {
        const std::string label = fmt::format("[{}/{} {}]", i + 1, mine.size(), mine[i].name);
        try {
            reports.push_back(tuner.tune(mine[i], label));
        } catch (const WorkloadError &e) {  // a strategy that cannot serve the workload: the others go on
            TaskReport r;
            r.task = mine[i];
            r.note = std::string("not tuned: ") + e.what();
            std::cout << label << " " << mine[i].strategy << ": " << r.note << "\n";
            reports.push_back(r);
            ++not_tuned;
        }
    }
    nlohmann::json summary = nlohmann::json::array();
    std::cout << "\n";
    for (const auto &r : reports) {
        std::cout << fmt::format(
            "{} {}: best {} ({}) | heuristic {} | best named {} | {} trials ({} resumed), {} failed{}, {} invalid "
            "filtered, {} aliases of measured kernels, space {:.3g} | {}: build {:.0f}%, measure {:.0f}%{}\n",
            r.task.name, r.task.strategy, r.best_ms > 0 ? fmt::format("{:.4g} ms", r.best_ms) : "-", r.best_knobs,
            r.heuristic_ms > 0 ? fmt::format("{:.4g} ms ({:.2f}x)", r.heuristic_ms, r.heuristic_ms / r.best_ms) : "-",
            r.best_named_ms > 0 ? fmt::format("{:.4g} ms ({:.2f}x)", r.best_named_ms, r.best_named_ms / r.best_ms)
                                : "-",
            r.trials, r.resumed, r.failed, r.failures.empty() ? "" : " (" + failures_text(r.failures) + ")", r.invalid,
            r.aliases, r.space, minutes_or_seconds(r.seconds), r.seconds > 0 ? 100 * r.build_wall / r.seconds : 0,
            r.seconds > 0 ? 100 * r.measure_wall / r.seconds : 0, r.note.empty() ? "" : " | " + r.note);
        summary.push_back({{"workload", r.task.key},
                           {"name", r.task.name},
                           {"strategy", r.task.strategy},
                           {"trials", r.trials},
                           {"resumed", r.resumed},
                           {"failed", r.failed},
                           {"failures", r.failures},
                           {"invalid_filtered", r.invalid},
                           {"aliases", r.aliases},
                           {"space_points", r.space},
                           {"best_ms", r.best_ms},
                           {"best_knobs", r.best_knobs},
                           {"heuristic_ms", r.heuristic_ms},
                           {"best_named_ms", r.best_named_ms},
                           {"best_named", r.best_named},
                           {"seconds", r.seconds},
                           {"build_seconds", r.build_wall},
                           {"measure_seconds", r.measure_wall},
                           {"note", r.note}});
    }
    if (!opt.out_dir.empty()) {
        std::filesystem::create_directories(opt.out_dir);
        nlohmann::json doc = {{"schema", "blockfuse.tune.v1"},
                              {"context", run_context(opt.command_line)},
                              {"target", record_target(dev)},
                              {"search", opt.search},
                              {"seed", opt.seed},
                              {"records", opt.records},
                              {"tasks", summary}};
        std::ofstream file(opt.out_dir + "/summary.json");
        if (!(file << doc.dump(1) << "\n"))
            throw WorkloadError("--out '" + opt.out_dir + "': cannot write summary.json there");
        std::cout << "wrote " << opt.out_dir << "/summary.json\n";
    }
    if (not_tuned) {  // asked for and not done: the exit status says so
        std::cerr << fmt::format("error: {} of {} tasks not tuned (their lines above say why)\n", not_tuned,
                                 mine.size());
        return 2;
    }
    return 0;
}

int print_best_records(const std::vector<std::string> &files, const std::string &target_filter, bool json) {
    const TuningRecords recs = TuningRecords::load(files.empty() ? default_record_files() : files);
    struct Group {
        const TuningRecord *best = nullptr;
        int n = 0, failed = 0;
    };
    std::map<std::tuple<std::string, std::string, std::string, std::string>, Group> groups;
    for (const auto &r : recs.records) {
        if (!target_filter.empty() && r.target.find(target_filter) == std::string::npos) continue;
        Group &g = groups[{r.target, r.halide_version, r.workload, r.strategy}];
        ++g.n;
        if (!r.ok()) ++g.failed;
    }
    // The pick is dispatch's (TuningRecords::best: a kernel by its latest record, the default L2 flush first, this
    // build's kernels before older builds').
    for (auto &[k, g] : groups) {
        const auto &[target, halide, workload, strategy] = k;
        g.best = recs.best(workload, strategy, target, halide, measured_this_build);
    }
    if (json) {  // the picks as records, one JSON line each, for scripts
        for (const auto &[k, g] : groups)
            if (g.best) std::cout << record_json(*g.best).dump() << "\n";
        return 0;
    }
    std::string last_target;
    for (const auto &[k, g] : groups) {
        const auto &[target, halide, workload, strategy] = k;
        if (target + halide != last_target) std::cout << "\n" << target << " (Halide " << halide << ")\n";
        last_target = target + halide;
        std::string knobs;
        if (g.best)
            knobs = knob_summary(schedule_knob_table(g.best->family, target_device(target)), g.best->knobs,
                                 g.best->max_registers);
        std::cout << fmt::format("  {:<72} {:<15} {:>10} {:>4} records ({} failed) {}\n", workload, strategy,
                                 g.best ? fmt::format("{:.4g} ms", g.best->median_ms) : "-", g.n, g.failed, knobs);
    }
    return 0;
}

}  // namespace blockfuse
