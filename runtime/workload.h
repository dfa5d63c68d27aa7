// Workload keys: text that round-trips through parse and print, e.g.
//   conv2d:n=2,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,groups=1,dtype=f16
// Bad input raises WorkloadError with one message naming the field and the value.
#pragma once
#include "generators/activation.h"
#include "runtime/dtype.h"
#include "runtime/errors.h"
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace blockfuse {

// "family:a=1,b=2" -> family and fields (in order). Rejects empty keys, missing ':',
// empty or duplicate field names, missing '='.
struct KeyFields {
    std::string family;
    std::vector<std::pair<std::string, std::string>> fields;
};
KeyFields split_key(const std::string &key);

// Strict decimal integer for field `field` of `key`; throws WorkloadError naming both.
int parse_key_int(const std::string &key, const std::string &field, const std::string &value);

const char *activation_name(Activation a);
bool parse_activation(const std::string &s, Activation *out);

enum class ConvKindTag { general, pointwise, depthwise };

struct Conv2dWorkload {
    int n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0;
    int stride_h = 1, stride_w = 1;
    int pad_t = 0, pad_b = 0, pad_l = 0, pad_r = 0;
    int dil_h = 1, dil_w = 1;
    int groups = 1;
    bool bias = false;
    Activation act = Activation::none;
    DType dtype = DType::f32;

    int out_h() const { return (h + pad_t + pad_b - dil_h * (r - 1) - 1) / stride_h + 1; }
    int out_w() const { return (w + pad_l + pad_r - dil_w * (s - 1) - 1) / stride_w + 1; }
    long long reduction_length() const { return 1LL * (c / groups) * r * s; }  // terms summed into one output
    // Which kernel family serves it: depthwise (groups == C, C > 1), pointwise (1x1, one
    // group), general (everything else, grouped included).
    ConvKindTag kind() const;
    bool operator==(const Conv2dWorkload &o) const;
};

// Parses and validates; throws WorkloadError. `what` names the source in messages.
Conv2dWorkload parse_conv2d(const std::string &key);
// Canonical key: fields at their defaults (dil=1, bias=0, act=none) are left out.
std::string to_key(const Conv2dWorkload &w);
// Throws WorkloadError if the shape is impossible (non-positive sizes, groups not dividing
// C or K, empty output, tensors beyond 2^31 elements).
void validate(const Conv2dWorkload &w, const std::string &key);

// A suite file: lines "<name> <key>", '#' starts a comment. Throws WorkloadError with
// file:line on a bad line.
struct SuiteEntry {
    std::string name, key;
};
std::vector<SuiteEntry> load_suite(const std::string &path);

}  // namespace blockfuse
