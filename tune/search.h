// How the tuner picks the next candidates of a space (tune/space.h). Two strategies over the same space:
//   random        uniform valid points (the baseline every search must beat at equal trials);
//   evolutionary  seeds first (the heuristic's knobs, the hand-written variants, the nearest records), then
//                 offspring of the fastest measured so far: tournament selection, mutation to neighbouring
//                 values, now and then crossover or a random point; before anything is measured (a first round
//                 planned here and measured on another machine), neighbours of the seeds.
// Both are reproducible: the same seed and the same measurements give the same candidates.
#pragma once
#include "tune/space.h"
#include <limits>
#include <memory>
#include <set>

namespace blockfuse {

constexpr double kFailedScore = std::numeric_limits<double>::infinity();

class Search {
public:
    Search(const SearchSpace &space, uint64_t seed) : space_(space), rng_(seed) {}
    virtual ~Search() = default;
    virtual const char *name() const = 0;
    // A measured candidate (of this run or a record): its median ms, kFailedScore if it failed.
    void observe(const Candidate &c, double ms);
    // Seeds go first, in order (invalid or already measured ones are skipped).
    void add_seed(const Candidate &c) { seeds_.push_back(c); }
    // Up to n valid candidates not measured or proposed before; fewer once the space is exhausted.
    std::vector<Candidate> propose(int n);
    bool measured(const Candidate &c) const { return scores_.count(c.id()) > 0; }
    size_t invalid_filtered() const { return invalid_.size(); }
    // The invalid candidates' reasons, most frequent first (the first line of each).
    std::vector<std::pair<std::string, int>> invalid_reasons() const;
    const std::vector<std::pair<Candidate, double>> &history() const { return history_; }

protected:
    virtual Candidate next() = 0;  // one candidate to consider (it may be invalid or seen)
    const std::vector<Candidate> &seeds() const { return seeds_; }
    const SearchSpace &space_;
    std::mt19937_64 rng_;
    std::vector<std::pair<Candidate, double>> history_;  // in observation order
    std::map<std::string, double> scores_;

private:
    std::vector<Candidate> seeds_;
    size_t next_seed_ = 0;
    std::set<std::string> proposed_;
    std::map<std::string, std::string> invalid_;   // id -> why
    std::vector<Candidate> unseen_valid_points();  // small spaces: enumerate what is left
};

class RandomSearch : public Search {
public:
    using Search::Search;
    const char *name() const override { return "random"; }

protected:
    Candidate next() override { return space_.random(rng_); }
};

class EvolutionarySearch : public Search {
public:
    using Search::Search;
    const char *name() const override { return "evolutionary"; }

protected:
    Candidate next() override;

private:
    const Candidate &tournament(const std::vector<const std::pair<Candidate, double> *> &pool);
};

// "random" | "evolutionary"; throws WorkloadError naming the choices otherwise.
std::unique_ptr<Search> make_search(const std::string &name, const SearchSpace &space, uint64_t seed);

}  // namespace blockfuse
