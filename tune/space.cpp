#include "tune/space.h"
#include "runtime/dispatch.h"
#include "schedules/gemm_knobs.h"
#include "schedules/heuristics.h"
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace blockfuse {

namespace {
// CUDA JIT register caps the tuner tries (0: the policy's rule, the most the block size allows). The
// fused MBConv mappings ran fastest at 64, the depthwise layers at 255 (bench/results/h200/registers/).
const std::vector<int> kRegisterCaps = {0, 64, 96, 128, 168, 255};
}  // namespace

std::string Candidate::id() const {
    std::string s;
    for (const auto &[k, v] : knobs) s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
    return s + ";regs=" + std::to_string(max_registers);
}

SearchSpace::SearchSpace(const Op &op, const std::string &strategy, Device device, LaunchLimits limits,
                         const std::map<std::string, int> &pinned)
    : op_(op), strategy_(strategy), device_(device), limits_(limits) {
    try {
        const ScheduleChoice h = op.heuristic(strategy, device);
        base_ = h.knobs;
        base_registers_ = h.max_registers;
    } catch (const WorkloadError &) {
        // no heuristic kernel within its limits: the declared defaults are the base
    }
    const KnobTable &table = schedule_knob_table(op.family(strategy), device);
    base_ = table.with_defaults(base_);
    const std::vector<std::string> tunable = op.tunable_knobs(strategy, device);
    for (const auto &[name, v] : pinned) {
        if (name == "max_registers" && device == Device::cuda) {
            base_registers_ = v;
            continue;
        }
        if (std::find(tunable.begin(), tunable.end(), name) == tunable.end())
            throw WorkloadError(
                fmt::format("--knob {}: the {} {} schedule on {} searches no knob of that name (it searches {}{})",
                            name, op.family(strategy), strategy, device_name(device), fmt::join(tunable, ", "),
                            device == Device::cuda ? ", max_registers" : ""));
        base_[name] = v;
    }
    for (const std::string &name : tunable) {
        if (pinned.count(name)) continue;
        const KnobDecl *k = table.find(name);
        if (!k) throw WorkloadError("the " + op.family(strategy) + " schedules declare no knob '" + name + "'");
        Dim d{name, k->values};
        d.values.push_back(base_.at(name));  // the heuristic's value is always a point
        std::sort(d.values.begin(), d.values.end());
        d.values.erase(std::unique(d.values.begin(), d.values.end()), d.values.end());
        if (d.values.size() > 1) dims_.push_back(d);
    }
    if (device == Device::cuda && !pinned.count("max_registers")) {
        Dim d{"max_registers", kRegisterCaps};
        d.values.push_back(base_registers_);
        std::sort(d.values.begin(), d.values.end());
        d.values.erase(std::unique(d.values.begin(), d.values.end()), d.values.end());
        dims_.push_back(d);
    }
    if (!pinned.empty())
        if (const std::string why = invalid(default_candidate()); !why.empty())
            throw WorkloadError(
                fmt::format("--knob: the pinned knobs make no kernel for {} {}: {}", op.key(), strategy, why));
}

double SearchSpace::size() const {
    double n = 1;
    for (const Dim &d : dims_) n *= double(d.values.size());
    return n;
}

int SearchSpace::value_of(const Candidate &c, const Dim &d) const {
    if (d.name == "max_registers") return c.max_registers;
    auto it = c.knobs.find(d.name);
    return it == c.knobs.end() ? base_.at(d.name) : it->second;
}

const KernelVariant *SearchSpace::kernel(const Candidate &c, const std::string &why) const {
    std::map<std::string, int> knobs = base_;
    for (const auto &[k, v] : c.knobs) knobs[k] = v;
    conform_wgmma_knobs(knobs);  // a wgmma point's tiling (warp_m, warps_n, pad, warps_m) is the one wgmma allows
    return kernel_with_knobs(op_.key(), strategy_, device_, knobs, c.max_registers, why);
}

std::string SearchSpace::invalid(const Candidate &c) const {
    for (const auto &[k, v] : c.knobs)
        if (std::none_of(dims_.begin(), dims_.end(), [&](const Dim &d) { return d.name == k; }))
            return "'" + k + "' is not a knob the " + strategy_ + " schedule reads here";
    try {
        return op_.candidate_error(*kernel(c, "tuner candidate"), limits_);
    } catch (const WorkloadError &e) {
        return e.what();
    } catch (const KernelError &e) {
        return e.what();
    }
}

Candidate SearchSpace::project(const std::map<std::string, int> &knobs, int max_registers) const {
    Candidate c;
    c.max_registers = base_registers_;  // unless searched (below): the heuristic's cap, or the one held
    for (const Dim &d : dims_) {
        if (d.name == "max_registers") {
            c.max_registers = max_registers;
            continue;
        }
        auto it = knobs.find(d.name);
        c.knobs[d.name] = it == knobs.end() ? base_.at(d.name) : it->second;
    }
    return c;
}

Candidate SearchSpace::default_candidate() const { return project(base_, base_registers_); }

Candidate SearchSpace::random(std::mt19937_64 &rng) const {
    Candidate c = default_candidate();
    for (const Dim &d : dims_) {
        const int v = d.values[std::uniform_int_distribution<size_t>(0, d.values.size() - 1)(rng)];
        if (d.name == "max_registers") c.max_registers = v;
        else c.knobs[d.name] = v;
    }
    return c;
}

Candidate SearchSpace::mutate(const Candidate &c, std::mt19937_64 &rng, int changes) const {
    Candidate m = c;
    if (dims_.empty()) return m;
    const int n = std::uniform_int_distribution<int>(1, std::max(1, changes))(rng);
    for (int i = 0; i < n; ++i) {
        const Dim &d = dims_[std::uniform_int_distribution<size_t>(0, dims_.size() - 1)(rng)];
        const int cur = value_of(m, d);
        size_t at = size_t(std::lower_bound(d.values.begin(), d.values.end(), cur) - d.values.begin());
        size_t next;
        if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.7) {  // a neighbour: tiles, chunks are ordered
            const bool up = at == 0 || (at + 1 < d.values.size() && std::uniform_int_distribution<int>(0, 1)(rng));
            next = up ? std::min(at + 1, d.values.size() - 1) : at - 1;
        } else {
            next = std::uniform_int_distribution<size_t>(0, d.values.size() - 1)(rng);
        }
        if (d.name == "max_registers") m.max_registers = d.values[next];
        else m.knobs[d.name] = d.values[next];
    }
    return m;
}

Candidate SearchSpace::crossover(const Candidate &a, const Candidate &b, std::mt19937_64 &rng) const {
    Candidate c = a;
    std::bernoulli_distribution coin(0.5);
    for (const Dim &d : dims_) {
        if (!coin(rng)) continue;
        if (d.name == "max_registers") c.max_registers = b.max_registers;
        else c.knobs[d.name] = value_of(b, d);
    }
    return c;
}

}  // namespace blockfuse
