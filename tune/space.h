// The search space of one (workload, strategy, device): the schedule knobs that strategy reads, each with
// the values its declaration lists (schedules/*_knobs.h), and on CUDA the JIT register cap. A candidate
// is a point of it; every other knob keeps the shape heuristic's value, so a candidate is a whole kernel
// (tune/README.md). Invalid points -- the schedule's knob constraints, threads per block, shared memory,
// the launch checks against the target's limits -- are recognised here, before anything is built.
#pragma once
#include "runtime/conv2d.h"
#include "runtime/op.h"
#include <map>
#include <random>
#include <string>
#include <vector>

namespace blockfuse {

struct Candidate {
    std::map<std::string, int> knobs;  // the searched knobs only
    int max_registers = 0;             // CUDA JIT cap (0: the register policy's rule)
    // Identity within a space: "chunk=16,tile_x=8,...;regs=0".
    std::string id() const;
    bool operator==(const Candidate &o) const { return knobs == o.knobs && max_registers == o.max_registers; }
};

class SearchSpace {
public:
    struct Dim {
        std::string name;         // a knob, or "max_registers"
        std::vector<int> values;  // ascending, unique
    };
    // `pinned`: knobs (or "max_registers") held at a value instead of searched (tune --knob); a name the
    // strategy does not search here, or values that make no kernel, throw WorkloadError naming it.
    SearchSpace(const Op &op, const std::string &strategy, Device device, LaunchLimits limits,
                const std::map<std::string, int> &pinned = {});

    const std::vector<Dim> &dims() const { return dims_; }
    double size() const;  // points, valid or not
    const std::string &strategy() const { return strategy_; }
    Device device() const { return device_; }

    // The kernel of a candidate: the heuristic's knobs with the candidate's over them.
    const KernelVariant *kernel(const Candidate &c, const std::string &why) const;
    // Why the candidate cannot run ("" if it can): a value outside its dimension, the schedule's
    // constraints, the launch limits.
    std::string invalid(const Candidate &c) const;
    // The candidate of a full knob set (a record's, a named variant's), restricted to the searched
    // knobs; values outside a dimension are kept (they came from a kernel that ran).
    Candidate project(const std::map<std::string, int> &knobs, int max_registers) const;
    Candidate default_candidate() const;  // the shape heuristic's

    Candidate random(std::mt19937_64 &rng) const;
    // One to `changes` knobs moved: to a neighbouring value mostly, to any value sometimes.
    Candidate mutate(const Candidate &c, std::mt19937_64 &rng, int changes) const;
    Candidate crossover(const Candidate &a, const Candidate &b, std::mt19937_64 &rng) const;

private:
    const Op &op_;
    std::string strategy_;
    Device device_;
    LaunchLimits limits_;
    std::map<std::string, int> base_;  // the heuristic's knobs
    int base_registers_ = 0;
    std::vector<Dim> dims_;
    int value_of(const Candidate &c, const Dim &d) const;
};

}  // namespace blockfuse
