// Schedule knobs, declared once per schedule as an X-macro list (Halide-free, so the runtime, the
// generators, the tuner and the tests read the same declaration):
//
//   #define BLOCKFUSE_FOO_KNOBS(X)       (each line but the last ends in a backslash)
//       X(tile_x, 8, (4, 8, 16), "output pixels per thread block along x")
//       X(chunk, 16, (8, 16, 32), "hidden channels produced per step of the reduction")
//
// Each entry: name, default, the values the search may take, one line of meaning. From the one list:
//   struct FooKnobs { BLOCKFUSE_FOO_KNOBS(BLOCKFUSE_KNOB_FIELD) };          the schedule's struct
//   BLOCKFUSE_FOO_KNOBS(BLOCKFUSE_KNOB_GENERATOR_PARAM)                    GeneratorParams (generator)
//   FooKnobs kn; BLOCKFUSE_FOO_KNOBS(BLOCKFUSE_KNOB_COPY)                   GeneratorParams -> struct `kn`
//   knob_table({BLOCKFUSE_FOO_KNOBS(BLOCKFUSE_KNOB_DECL)})                  the space, defaults, help
#pragma once
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

struct KnobDecl {
    std::string name;
    int default_value = 0;
    std::vector<int> values;  // what the tuner may choose; the default need not be among them
    std::string meaning;
};

// A schedule's knobs by name; a knob set (name -> value) is checked against it.
struct KnobTable {
    std::vector<KnobDecl> knobs;
    const KnobDecl *find(const std::string &name) const {
        for (const auto &k : knobs)
            if (k.name == name) return &k;
        return nullptr;
    }
    // Every knob at its default, overridden by `set` (names not declared are left for the caller to reject).
    std::map<std::string, int> with_defaults(const std::map<std::string, int> &set = {}) const {
        std::map<std::string, int> out;
        for (const auto &k : knobs) out[k.name] = k.default_value;
        for (const auto &[n, v] : set)
            if (find(n)) out[n] = v;
        return out;
    }
};

// The same table with every name prefixed (a block's per-layer conv2d mappings: pw_, full_, layer_).
inline KnobTable prefixed(const KnobTable &t, const std::string &prefix) {
    KnobTable out;
    for (KnobDecl k : t.knobs) {
        k.name = prefix + k.name;
        out.knobs.push_back(k);
    }
    return out;
}

inline KnobTable concat(std::vector<KnobTable> parts) {
    KnobTable out;
    for (auto &p : parts) out.knobs.insert(out.knobs.end(), p.knobs.begin(), p.knobs.end());
    return out;
}

}  // namespace blockfuse

#define BLOCKFUSE_UNPAREN(...) __VA_ARGS__
#define BLOCKFUSE_KNOB_FIELD(name, dflt, values, meaning) int name = dflt;
#define BLOCKFUSE_KNOB_DECL(name, dflt, values, meaning)                                                               \
    ::blockfuse::KnobDecl{#name, dflt, std::vector<int>{BLOCKFUSE_UNPAREN values}, meaning},
// Inside a Halide Generator class: one GeneratorParam<int> per knob, default from the declaration.
#define BLOCKFUSE_KNOB_GENERATOR_PARAM(name, dflt, values, meaning) Halide::GeneratorParam<int> name{#name, dflt};
// Copies each GeneratorParam into the same-named field of a local struct `kn`.
#define BLOCKFUSE_KNOB_COPY(name, dflt, values, meaning) kn.name = name;
// ...and with a prefix (a block generator's per-layer mappings): GeneratorParam pw_vec_k{"pw_vec_k"}.
#define BLOCKFUSE_KNOB_GENERATOR_PARAM_PREFIXED(prefix, name, dflt, values, meaning)                                   \
    Halide::GeneratorParam<int> prefix##name{#prefix #name, dflt};
// A function `fn(set, prefix = "")` making the knob struct `Type` of the list `LIST` from a knob set
// (name -> value; names missing from the set keep their declared defaults); `prefix` selects a block's
// per-layer mapping ("pw_", "full_", "layer_").
#define BLOCKFUSE_KNOB_FROM_SET(name, dflt, values, meaning) get(#name, k.name);
#define BLOCKFUSE_DEFINE_KNOBS_FROM(fn, Type, LIST)                                                                    \
    inline Type fn(const std::map<std::string, int> &set, const std::string &prefix = "") {                            \
        Type k;                                                                                                        \
        auto get = [&](const char *name, int &field) {                                                                 \
            if (auto it = set.find(prefix + name); it != set.end()) field = it->second;                                \
        };                                                                                                             \
        LIST(BLOCKFUSE_KNOB_FROM_SET)                                                                                  \
        return k;                                                                                                      \
    }
