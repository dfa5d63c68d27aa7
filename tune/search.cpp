#include "tune/search.h"
#include <algorithm>

namespace blockfuse {

namespace {
constexpr double kEnumerateBelow = 4096;  // spaces this small are enumerated once random draws stop finding points
constexpr int kPopulation = 16;           // parents: the fastest measured so far
constexpr int kTournament = 3;
}  // namespace

void Search::observe(const Candidate &c, double ms) {
    const std::string id = c.id();
    if (scores_.count(id)) return;  // a record measured twice: the first counts
    scores_[id] = ms;
    history_.push_back({c, ms});
}

std::vector<std::pair<std::string, int>> Search::invalid_reasons() const {
    std::map<std::string, int> n;
    for (const auto &[id, why] : invalid_) ++n[why.substr(0, why.find('\n'))];
    std::vector<std::pair<std::string, int>> out(n.begin(), n.end());
    std::stable_sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
    return out;
}

std::vector<Candidate> Search::unseen_valid_points() {
    std::vector<Candidate> out;
    const auto &dims = space_.dims();
    std::vector<size_t> at(dims.size(), 0);
    for (;;) {
        Candidate c = space_.default_candidate();
        for (size_t i = 0; i < dims.size(); ++i) {
            if (dims[i].name == "max_registers") c.max_registers = dims[i].values[at[i]];
            else c.knobs[dims[i].name] = dims[i].values[at[i]];
        }
        const std::string id = c.id();
        if (!scores_.count(id) && !proposed_.count(id) && !invalid_.count(id)) {
            if (std::string why = space_.invalid(c); why.empty()) out.push_back(c);
            else invalid_[id] = why;
        }
        size_t i = 0;
        while (i < dims.size() && ++at[i] == dims[i].values.size()) at[i++] = 0;
        if (i == dims.size()) break;
    }
    return out;
}

std::vector<Candidate> Search::propose(int n) {
    std::vector<Candidate> out;
    auto consider = [&](const Candidate &c) {
        const std::string id = c.id();
        if (scores_.count(id) || proposed_.count(id) || invalid_.count(id)) return;
        if (std::string why = space_.invalid(c); !why.empty()) {
            invalid_[id] = why;
            return;
        }
        proposed_.insert(id);
        out.push_back(c);
    };
    while (int(out.size()) < n && next_seed_ < seeds_.size()) consider(seeds_[next_seed_++]);
    // Draws until the batch is full; a space that yields nothing new for many draws is nearly exhausted.
    for (int misses = 0; int(out.size()) < n && misses < 400 + 50 * n;) {
        const size_t before = out.size();
        consider(next());
        misses = out.size() > before ? 0 : misses + 1;
    }
    if (int(out.size()) < n && space_.size() <= kEnumerateBelow) {
        std::vector<Candidate> rest = unseen_valid_points();
        std::shuffle(rest.begin(), rest.end(), rng_);
        for (const Candidate &c : rest) {
            if (int(out.size()) >= n) break;
            proposed_.insert(c.id());
            out.push_back(c);
        }
    }
    return out;
}

const Candidate &EvolutionarySearch::tournament(const std::vector<const std::pair<Candidate, double> *> &pool) {
    const std::pair<Candidate, double> *best = nullptr;
    std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
    for (int i = 0; i < kTournament; ++i) {
        const auto *p = pool[pick(rng_)];
        if (!best || p->second < best->second) best = p;
    }
    return best->first;
}

Candidate EvolutionarySearch::next() {
    std::vector<const std::pair<Candidate, double> *> pool;
    for (const auto &h : history_)
        if (h.second < kFailedScore) pool.push_back(&h);
    std::uniform_real_distribution<double> u(0, 1);
    if (u(rng_) < 0.1) return space_.random(rng_);  // exploration
    if (pool.empty()) {
        // Nothing measured yet: the seeds' neighbours. H100, layer_by_layer_tc blocks, 12 points a row
        // (bench/results/h100/tuner-first-round/): faster than the heuristic in 4 of 5 rows, random points in none.
        if (seeds().empty()) return space_.random(rng_);
        return space_.mutate(seeds()[std::uniform_int_distribution<size_t>(0, seeds().size() - 1)(rng_)], rng_, 2);
    }
    std::stable_sort(pool.begin(), pool.end(), [](const auto *a, const auto *b) { return a->second < b->second; });
    if (pool.size() > size_t(kPopulation)) pool.resize(kPopulation);
    const Candidate &a = tournament(pool);
    if (pool.size() > 1 && u(rng_) < 0.15) return space_.mutate(space_.crossover(a, tournament(pool), rng_), rng_, 1);
    return space_.mutate(a, rng_, 2);
}

std::unique_ptr<Search> make_search(const std::string &name, const SearchSpace &space, uint64_t seed) {
    if (name == "random") return std::make_unique<RandomSearch>(space, seed);
    if (name == "evolutionary") return std::make_unique<EvolutionarySearch>(space, seed);
    throw WorkloadError("--search '" + name + "' is not one of evolutionary, random");
}

}  // namespace blockfuse
