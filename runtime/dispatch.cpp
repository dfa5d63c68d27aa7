#include "runtime/dispatch.h"
#include "build_info.h"
#include "runtime/op.h"
#include "schedules/heuristics.h"
#include <algorithm>

namespace blockfuse {

std::string workload_family(const std::string &key) { return parse_op(key)->generator(); }
std::string canonical_key(const std::string &key) { return parse_op(key)->key(); }
DType workload_dtype(const std::string &key) { return parse_op(key)->dtype(); }
std::vector<std::string> strategies_of(const std::string &key) { return parse_op(key)->strategies(); }

std::string strategy_of(const KernelVariant &v) {
    const std::string s = v.param("strategy");
    return s.empty() ? "direct" : s;
}

namespace {

void require_strategy(const std::string &key, const std::string &strategy) {
    const auto all = strategies_of(key);
    if (std::find(all.begin(), all.end(), strategy) != all.end()) return;
    std::string list;
    for (const auto &s : all) list += (list.empty() ? "" : ", ") + s;
    throw WorkloadError("strategy '" + strategy + "' does not apply to " + canonical_key(key) +
                        " (its strategies: " + list + ")");
}

ScheduleChoice heuristic(const std::string &key, const std::string &strategy, Device device) {
    return parse_op(key)->heuristic(strategy, device);
}

KernelVariant generated(const std::string &key, const std::string &strategy, Device device, const ScheduleChoice &s) {
    return parse_op(key)->kernel_for(strategy, device, s);
}

}  // namespace

std::vector<const KernelVariant *> data_variants_for(const std::string &key, const std::string &strategy,
                                                     Device device) {
    const std::vector<const KernelVariant *> all = parse_op(key)->named_variants(device);
    std::vector<const KernelVariant *> out;
    for (const KernelVariant *v : all)
        if (strategy_of(*v) == strategy) out.push_back(v);
    return out;
}

namespace {
KernelVariant with_knobs(const std::string &key, const std::string &strategy, Device device,
                         const std::map<std::string, int> &knobs, int max_registers, const std::string &why) {
    require_strategy(key, strategy);
    ScheduleChoice s;
    try {
        s = heuristic(key, strategy, device);
    } catch (const WorkloadError &) {
        // the heuristic finds nothing within its limits; the knobs given say everything
    }
    for (const auto &[k, v] : knobs) s.knobs[k] = v;
    if (max_registers > 0) s.max_registers = max_registers;
    s.why = why;
    return generated(key, strategy, device, s);
}

// A record's knobs as the kernel it rebuilds takes them: a knob declared since at its declared default, which is the
// kernel the record measured (not at what the heuristic says now).
std::map<std::string, int> record_knobs(const std::string &key, const TuningRecord &r, Device device) {
    return schedule_knob_table(parse_op(key)->family(r.strategy), device).with_defaults(r.knobs);
}

}  // namespace

bool measured_this_build(const TuningRecord &r) {
    if (r.variant.empty()) return true;
    const Device device = target_device(r.target);
    try {
        return with_knobs(r.workload, r.strategy, device, record_knobs(r.workload, r, device), r.max_registers, "")
                   .name == r.variant;
    } catch (const WorkloadError &) {
        return false;  // knobs the schedule no longer declares
    }
}

const KernelVariant *kernel_with_knobs(const std::string &key, const std::string &strategy, Device device,
                                       const std::map<std::string, int> &knobs, int max_registers,
                                       const std::string &why) {
    return keep_variant(with_knobs(key, strategy, device, knobs, max_registers, why));
}

Pick dispatch(const std::string &key, const std::string &strategy, Device device, const TuningRecords *records,
              bool heuristics_only) {
    require_strategy(key, strategy);
    const std::string canonical = canonical_key(key);
    if (heuristics_only)
        return {keep_variant(generated(key, strategy, device, heuristic(key, strategy, device))), strategy, "heuristic",
                nullptr};
    if (records)
        if (const TuningRecord *r = records->best(canonical, strategy, record_target(device), BLOCKFUSE_HALIDE_VERSION,
                                                  measured_this_build))
            return {kernel_with_knobs(key, strategy, device, record_knobs(key, *r, device), r->max_registers,
                                      "tuning record (" + r->source + ")"),
                    strategy, "tuning record", r};
    for (const KernelVariant *v : data_variants_for(key, strategy, device))
        if (v->data_default) return {v, strategy, "variant data", nullptr};
    const ScheduleChoice s = heuristic(key, strategy, device);
    return {keep_variant(generated(key, strategy, device, s)), strategy, "heuristic", nullptr};
}

std::string default_strategy(const std::string &key, Device device, const TuningRecords *records) {
    if (records)
        if (const TuningRecord *r = records->best(canonical_key(key), "", record_target(device),
                                                  BLOCKFUSE_HALIDE_VERSION, measured_this_build))
            return r->strategy;
    return strategies_of(key).front();
}

}  // namespace blockfuse
