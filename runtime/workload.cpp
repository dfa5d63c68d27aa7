#include "runtime/workload.h"
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace blockfuse {
namespace {

[[noreturn]] void fail(const std::string &key, const std::string &msg) {
    throw WorkloadError("invalid workload '" + key + "': " + msg);
}

int parse_int(const std::string &key, const std::string &field, const std::string &v) {
    if (v.empty()) fail(key, "field '" + field + "' has no value");
    size_t i = (v[0] == '-' || v[0] == '+') ? 1 : 0;
    if (i == v.size()) fail(key, "field '" + field + "' = '" + v + "' is not an integer");
    for (size_t j = i; j < v.size(); ++j)
        if (v[j] < '0' || v[j] > '9') fail(key, "field '" + field + "' = '" + v + "' is not an integer");
    errno = 0;
    long long x = std::strtoll(v.c_str(), nullptr, 10);
    if (errno == ERANGE || x > INT_MAX || x < INT_MIN) fail(key, "field '" + field + "' = '" + v + "' is out of range");
    return int(x);
}

}  // namespace

int parse_key_int(const std::string &key, const std::string &field, const std::string &value) {
    return parse_int(key, field, value);
}

KeyFields split_key(const std::string &key) {
    KeyFields kf;
    size_t colon = key.find(':');
    if (key.empty()) fail(key, "empty key");
    if (colon == std::string::npos) fail(key, "expected 'family:field=value,...' (no ':' found)");
    kf.family = key.substr(0, colon);
    if (kf.family.empty()) fail(key, "missing family before ':'");
    std::set<std::string> seen;
    std::string rest = key.substr(colon + 1);
    if (rest.empty()) fail(key, "no fields after ':'");
    std::stringstream ss(rest);
    std::string item;
    while (std::getline(ss, item, ',')) {
        size_t eq = item.find('=');
        if (item.empty()) fail(key, "empty field (two commas in a row?)");
        if (eq == std::string::npos) fail(key, "field '" + item + "' has no '='");
        std::string name = item.substr(0, eq), value = item.substr(eq + 1);
        if (name.empty()) fail(key, "field with empty name ('" + item + "')");
        if (!seen.insert(name).second) fail(key, "field '" + name + "' given twice");
        kf.fields.emplace_back(name, value);
    }
    if (!rest.empty() && rest.back() == ',') fail(key, "trailing ','");
    return kf;
}

const char *activation_name(Activation a) {
    switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::relu6: return "relu6";
    case Activation::silu: return "silu";
    case Activation::gelu: return "gelu";
    case Activation::sigmoid: return "sigmoid";
    case Activation::gelu_erf: return "gelu_erf";
    }
    return "?";
}

bool parse_activation(const std::string &s, Activation *out) {
    for (Activation a : {Activation::none, Activation::relu, Activation::relu6, Activation::silu, Activation::gelu,
                         Activation::sigmoid, Activation::gelu_erf}) {
        if (s == activation_name(a)) {
            *out = a;
            return true;
        }
    }
    return false;
}

ConvKindTag Conv2dWorkload::kind() const {
    if (groups == c && c > 1) return ConvKindTag::depthwise;
    if (r == 1 && s == 1 && groups == 1) return ConvKindTag::pointwise;
    return ConvKindTag::general;
}

bool Conv2dWorkload::operator==(const Conv2dWorkload &o) const { return to_key(*this) == to_key(o); }

Conv2dWorkload parse_conv2d(const std::string &key) {
    KeyFields kf = split_key(key);
    if (kf.family != "conv2d") fail(key, "family '" + kf.family + "' is not 'conv2d'");
    Conv2dWorkload w;
    std::map<std::string, std::string> f(kf.fields.begin(), kf.fields.end());
    auto take_int = [&](const char *name, int *dst) {
        auto it = f.find(name);
        if (it == f.end()) return false;
        *dst = parse_int(key, name, it->second);
        f.erase(it);
        return true;
    };
    for (const char *req : {"n", "c", "h", "w", "k", "r", "s"}) {
        int *dst = std::string(req) == "n"   ? &w.n
                   : std::string(req) == "c" ? &w.c
                   : std::string(req) == "h" ? &w.h
                   : std::string(req) == "w" ? &w.w
                   : std::string(req) == "k" ? &w.k
                   : std::string(req) == "r" ? &w.r
                                             : &w.s;
        if (!take_int(req, dst)) fail(key, std::string("missing field '") + req + "'");
    }
    // A symmetric field and its per-side forms are exclusive.
    auto pair_field = [&](const char *both, std::initializer_list<std::pair<const char *, int *>> sides) {
        int v;
        bool has_both = take_int(both, &v);
        for (auto &[name, dst] : sides) {
            if (f.count(name) && has_both)
                fail(key, std::string("fields '") + both + "' and '" + name + "' are both given");
            if (has_both) *dst = v;
            else take_int(name, dst);
        }
    };
    pair_field("stride", {{"stride_h", &w.stride_h}, {"stride_w", &w.stride_w}});
    pair_field("pad", {{"pad_t", &w.pad_t}, {"pad_b", &w.pad_b}, {"pad_l", &w.pad_l}, {"pad_r", &w.pad_r}});
    pair_field("dil", {{"dil_h", &w.dil_h}, {"dil_w", &w.dil_w}});
    take_int("groups", &w.groups);
    int b = 0;
    if (take_int("bias", &b)) {
        if (b != 0 && b != 1) fail(key, "field 'bias' = " + std::to_string(b) + " must be 0 or 1");
        w.bias = b == 1;
    }
    if (auto it = f.find("act"); it != f.end()) {
        if (!parse_activation(it->second, &w.act) || w.act == Activation::gelu_erf)
            fail(key, "field 'act' = '" + it->second +
                          "' is not one of none, relu, relu6, silu, gelu, sigmoid (gelu_erf: block families only)");
        f.erase(it);
    }
    if (auto it = f.find("dtype"); it != f.end()) {
        if (!parse_dtype(it->second, &w.dtype))
            fail(key, "field 'dtype' = '" + it->second + "' is not supported (f32, f16, bf16)");
        f.erase(it);
    }
    if (!f.empty()) fail(key, "unknown field '" + f.begin()->first + "'");
    validate(w, key);
    return w;
}

void validate(const Conv2dWorkload &w, const std::string &key) {
    auto positive = [&](const char *name, int v) {
        if (v <= 0) fail(key, std::string("field '") + name + "' = " + std::to_string(v) + " must be positive");
    };
    positive("n", w.n);
    positive("c", w.c);
    positive("h", w.h);
    positive("w", w.w);
    positive("k", w.k);
    positive("r", w.r);
    positive("s", w.s);
    positive("stride_h", w.stride_h);
    positive("stride_w", w.stride_w);
    positive("dil_h", w.dil_h);
    positive("dil_w", w.dil_w);
    positive("groups", w.groups);
    for (auto [name, v] : {std::pair{"pad_t", w.pad_t}, {"pad_b", w.pad_b}, {"pad_l", w.pad_l}, {"pad_r", w.pad_r}})
        if (v < 0) fail(key, std::string("field '") + name + "' = " + std::to_string(v) + " must not be negative");
    if (w.c % w.groups)
        fail(key, "field 'groups' = " + std::to_string(w.groups) + " does not divide c = " + std::to_string(w.c));
    if (w.k % w.groups)
        fail(key, "field 'groups' = " + std::to_string(w.groups) + " does not divide k = " + std::to_string(w.k));
    long long span_h = 1LL * w.dil_h * (w.r - 1) + 1, span_w = 1LL * w.dil_w * (w.s - 1) + 1;
    if (w.h + w.pad_t + w.pad_b < span_h)
        fail(key, "empty output: padded height " + std::to_string(w.h + w.pad_t + w.pad_b) +
                      " is smaller than the dilated kernel height " + std::to_string(span_h));
    if (w.w + w.pad_l + w.pad_r < span_w)
        fail(key, "empty output: padded width " + std::to_string(w.w + w.pad_l + w.pad_r) +
                      " is smaller than the dilated kernel width " + std::to_string(span_w));
    const long long lim = INT_MAX;
    auto fits = [&](const char *what, long long a, long long b, long long c, long long d) {
        if (a * b > lim || a * b * c > lim || a * b * c * d > lim)
            fail(key, std::string(what) + " tensor has more than 2^31 elements");
    };
    fits("input", w.n, w.c, w.h, w.w);
    fits("weight", w.k, w.c / w.groups, w.r, w.s);
    fits("output", w.n, w.k, w.out_h(), w.out_w());
}

std::string to_key(const Conv2dWorkload &w) {
    std::ostringstream o;
    o << "conv2d:n=" << w.n << ",c=" << w.c << ",h=" << w.h << ",w=" << w.w << ",k=" << w.k << ",r=" << w.r
      << ",s=" << w.s;
    if (w.stride_h == w.stride_w) o << ",stride=" << w.stride_h;
    else o << ",stride_h=" << w.stride_h << ",stride_w=" << w.stride_w;
    if (w.pad_t == w.pad_b && w.pad_t == w.pad_l && w.pad_t == w.pad_r) o << ",pad=" << w.pad_t;
    else o << ",pad_t=" << w.pad_t << ",pad_b=" << w.pad_b << ",pad_l=" << w.pad_l << ",pad_r=" << w.pad_r;
    if (w.dil_h != w.dil_w) o << ",dil_h=" << w.dil_h << ",dil_w=" << w.dil_w;
    else if (w.dil_h != 1) o << ",dil=" << w.dil_h;
    o << ",groups=" << w.groups;
    if (w.bias) o << ",bias=1";
    if (w.act != Activation::none) o << ",act=" << activation_name(w.act);
    o << ",dtype=" << dtype_name(w.dtype);
    return o.str();
}

std::vector<SuiteEntry> load_suite(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw WorkloadError("cannot open suite file '" + path + "'");
    std::vector<SuiteEntry> out;
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
        ++lineno;
        if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        std::istringstream ss(line);
        SuiteEntry e;
        if (!(ss >> e.name)) continue;
        std::string extra;
        if (!(ss >> e.key) || (ss >> extra))
            throw WorkloadError(path + ":" + std::to_string(lineno) + ": expected '<name> <key>'");
        out.push_back(e);
    }
    return out;
}

}  // namespace blockfuse
