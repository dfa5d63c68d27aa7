// Every workload family (conv2d, the block families, the stem, pooling...) behind one interface, so that
// dispatch, the harness, the tests and the tuner treat them alike. A family is one parsed key: what
// strategies it has, which kernel serves a strategy (its shape heuristics, the variant data's named
// kernels), what the kernels cost in the tensor machine, and data to run and check a kernel on.
#pragma once
#include "runtime/cost.h"
#include "runtime/kernel_registry.h"
#include "runtime/reference.h"
#include "runtime/tensor.h"
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace blockfuse {

struct ScheduleChoice;  // schedules/heuristics.h
struct LaunchLimits;    // runtime/conv2d.h

// Problem columns of a result row (CUTLASS-profiler style). Blocks: k = output channels, r = s = the block's
// spatial kernel, groups = hidden width; 3-D ops fill d, t (kernel depth) and stride_d.
struct Problem {
    int n = 0, d = 1, h = 0, w = 0, c = 0, k = 0, t = 1, r = 0, s = 0;
    int stride_d = 1, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, groups = 1;
};

// Tensors of one workload: inputs drawn at random once, an output poisoned with NaN, and what runs a
// kernel on them and compares its output with the float64 reference.
class OpData {
public:
    virtual ~OpData() = default;
    virtual void run(const KernelVariant &v) = 0;  // one complete call (throws KernelError)
    virtual Comparison check() = 0;                // the output of the last run against the reference
    // The same inputs (and reference, once computed) with an output of its own, poisoned.
    virtual std::unique_ptr<OpData> with_fresh_output() const = 0;
    // What check() compares, e.g. "all 4096 outputs" or "at n=1 (the reference of n=128 is too slow)".
    virtual std::string check_note() const { return ""; }
};

// The common part of a family's data: the tensors (inputs randomized once and shared by every copy, an
// output of each copy's own, poisoned) for a workload W. Derived: the family's OpData.
template <class Derived, class W, class Tensors>
class TensorOpData : public OpData {
public:
    TensorOpData(const W &w, std::mt19937_64 &rng, Tensors (*make)(const W &)) : w_(w) {
        inputs_ = std::make_shared<Tensors>(make(w));
        randomize(*inputs_, w, rng);
        t_ = *inputs_;
    }
    std::unique_ptr<OpData> with_fresh_output() const override {
        auto d = std::make_unique<Derived>(static_cast<const Derived &>(*this));
        d->t_ = with_own_output(*inputs_, w_.dtype);
        return d;
    }

protected:
    W w_;
    std::shared_ptr<Tensors> inputs_;
    Tensors t_;
};

class Op {
public:
    virtual ~Op() = default;
    virtual std::string key() const = 0;        // canonical
    virtual std::string generator() const = 0;  // the generator (and family) of its kernels
    // The family of a strategy's kernels (its knobs and generator), where strategies differ in it.
    virtual std::string family(const std::string &) const { return generator(); }
    virtual DType dtype() const = 0;
    virtual std::vector<std::string> strategies() const = 0;  // the first is the default
    virtual ScheduleChoice heuristic(const std::string &strategy, Device d) const = 0;
    virtual KernelVariant kernel_for(const std::string &strategy, Device d, const ScheduleChoice &s) const = 0;
    virtual std::vector<const KernelVariant *> named_variants(Device d) const = 0;  // variant data that fits
    virtual std::vector<KernelCost> costs(const KernelVariant &v) const = 0;        // tensor-machine accounting
    virtual Problem problem() const = 0;
    // Data to time kernels on (the workload as given), and data to check them on (the same workload, or a
    // smaller batch where the float64 reference would take too long; the note says which).
    virtual std::unique_ptr<OpData> data(std::mt19937_64 &rng) const = 0;
    virtual std::unique_ptr<OpData> check_data(std::mt19937_64 &rng) const { return data(rng); }
    // A note on a strategy's row (e.g. Squeeze-Excitation splits a fused block in two kernels).
    virtual std::string strategy_note(const std::string &) const { return ""; }
    // What the tuner searches: the schedule knobs that `strategy` reads on device d (the family's other
    // knobs do not change its kernels). Default: every knob the family declares for d.
    virtual std::vector<std::string> tunable_knobs(const std::string &strategy, Device d) const;
    // Why kernel v cannot serve this workload within `limits` ("" if it can): the schedule's constraints
    // on its knobs and the launch checks, so that the tuner never builds a candidate that cannot run.
    virtual std::string candidate_error(const KernelVariant &, const LaunchLimits &) const { return ""; }
    // The workload's shape as the generator's est_* params, for Halide's autoschedulers
    // (runtime/autoscheduler.h); empty: the family's generator takes none.
    virtual std::map<std::string, int> shape_estimates() const { return {}; }
};

// The op of a key of any family; throws WorkloadError naming the field if the key is invalid.
std::unique_ptr<Op> parse_op(const std::string &key);

}  // namespace blockfuse
