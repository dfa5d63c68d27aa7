// Reading the fields of a workload key one by one (the pooling, conv1d and conv3d keys): required and
// optional integers, 0/1 flags, dtypes, and per-axis fields (`kernel` or `kernel_d`/`kernel_h`/`kernel_w`,
// exclusive); what is left at the end is an unknown field. Every error is one WorkloadError naming the
// field and the value.
#pragma once
#include "runtime/dtype.h"
#include "runtime/workload.h"
#include <array>
#include <map>
#include <string>
#include <vector>

namespace blockfuse {

[[noreturn]] inline void key_error(const std::string &key, const std::string &msg) {
    throw WorkloadError("invalid workload '" + key + "': " + msg);
}

// The spatial axes' names, outermost first (PyTorch's order), the suffixes of their per-axis fields.
inline std::vector<std::string> axis_names(int rank) {
    if (rank == 1) return {"l"};
    if (rank == 2) return {"h", "w"};
    return {"d", "h", "w"};
}

struct KeyReader {
    const std::string &key;
    std::map<std::string, std::string> f;
    KeyReader(const std::string &k, const KeyFields &kf) : key(k), f(kf.fields.begin(), kf.fields.end()) {}
    bool has(const std::string &name) const { return f.count(name) > 0; }
    bool take(const std::string &name, int *dst) {
        auto it = f.find(name);
        if (it == f.end()) return false;
        *dst = parse_key_int(key, name, it->second);
        f.erase(it);
        return true;
    }
    int required(const std::string &name) {
        int v = 0;
        if (!take(name, &v)) key_error(key, "missing field '" + name + "'");
        return v;
    }
    bool flag(const std::string &name, bool dflt) {
        int v = dflt;
        if (take(name, &v) && v != 0 && v != 1)
            key_error(key, "field '" + name + "' = " + std::to_string(v) + " must be 0 or 1");
        return v == 1;
    }
    bool take_str(const std::string &name, std::string *dst) {
        auto it = f.find(name);
        if (it == f.end()) return false;
        *dst = it->second;
        f.erase(it);
        return true;
    }
    DType dtype(const std::string &name, DType dflt) {
        std::string s;
        DType d = dflt;
        if (take_str(name, &s) && !parse_dtype(s, &d))
            key_error(key, "field '" + name + "' = '" + s + "' is not supported (f32, f16, bf16)");
        return d;
    }
    // A symmetric field (`both`) or its per-axis forms (`both`_<axis>), exclusive; rank 1 has only the
    // symmetric one. Returns false if neither is given.
    bool per_axis(const std::string &both, int rank, std::array<int, 3> *dst) {
        const auto names = axis_names(rank);
        int v = 0;
        const bool sym = take(both, &v);
        if (rank == 1) {
            if (sym) (*dst)[0] = v;
            return sym;
        }
        bool any = sym;
        for (int i = 0; i < rank; ++i) {
            const std::string side = both + "_" + names[i];
            if (sym && has(side)) key_error(key, "fields '" + both + "' and '" + side + "' are both given");
            if (sym) (*dst)[i] = v;
            else any |= take(side, &(*dst)[i]);
        }
        return any;
    }
    void done() {
        if (!f.empty()) key_error(key, "unknown field '" + f.begin()->first + "'");
    }
};

// ",kernel=3" where every axis agrees, else ",kernel_h=3,kernel_w=5".
inline std::string axis_fields(const std::string &both, int rank, const std::array<int, 3> &v) {
    bool same = true;
    for (int i = 1; i < rank; ++i) same &= v[i] == v[0];
    if (same) return "," + both + "=" + std::to_string(v[0]);
    std::string s;
    const auto names = axis_names(rank);
    for (int i = 0; i < rank; ++i) s += "," + both + "_" + names[i] + "=" + std::to_string(v[i]);
    return s;
}

}  // namespace blockfuse
