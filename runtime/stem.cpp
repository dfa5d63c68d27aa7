#include "runtime/stem.h"
#include "schedules/heuristics.h"
#include <algorithm>
#include <fmt/format.h>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace blockfuse {
namespace {
[[noreturn]] void fail(const std::string &key, const std::string &msg) {
    throw WorkloadError("invalid workload '" + key + "': " + msg);
}
}  // namespace

Conv2dWorkload StemWorkload::conv() const {
    Conv2dWorkload c;
    c.n = n, c.c = this->c, c.h = h, c.w = w, c.k = k, c.r = c.s = 3;
    c.stride_h = c.stride_w = 2;
    c.pad_t = c.pad_b = c.pad_l = c.pad_r = 1;
    c.bias = true;
    c.act = Activation::relu;
    c.dtype = dtype;
    return c;
}

bool is_stem_key(const std::string &key) { return key.rfind("stem:", 0) == 0; }

StemWorkload parse_stem(const std::string &key) {
    KeyFields kf = split_key(key);
    if (kf.family != "stem") fail(key, "family '" + kf.family + "' is not 'stem'");
    StemWorkload w;
    std::map<std::string, std::string> f(kf.fields.begin(), kf.fields.end());
    for (const char *name : {"n", "h", "w", "c", "k"}) {
        auto it = f.find(name);
        const std::string s = name;
        int *dst = s == "n" ? &w.n : s == "h" ? &w.h : s == "w" ? &w.w : s == "c" ? &w.c : &w.k;
        if (it == f.end()) {
            if (s == "n" || s == "h" || s == "w") fail(key, "missing field '" + s + "'");
            continue;
        }
        *dst = parse_key_int(key, s, it->second);
        f.erase(it);
        if (*dst <= 0) fail(key, "field '" + s + "' = " + std::to_string(*dst) + " must be positive");
    }
    if (auto it = f.find("dtype"); it != f.end()) {
        if (!parse_dtype(it->second, &w.dtype))
            fail(key, "field 'dtype' = '" + it->second + "' is not supported (f32, f16, bf16)");
        f.erase(it);
    }
    if (!f.empty()) fail(key, "unknown field '" + f.begin()->first + "'");
    validate(w.conv(), key);
    return w;
}

std::string to_key(const StemWorkload &w) {
    std::ostringstream o;
    o << "stem:n=" << w.n << ",h=" << w.h << ",w=" << w.w << ",c=" << w.c << ",k=" << w.k
      << ",dtype=" << dtype_name(w.dtype);
    return o.str();
}

StemTensors make_stem_tensors(const StemWorkload &w) {
    StemTensors t;
    t.input = make_tensor(w.dtype, {w.c, w.w, w.h, w.n});
    t.weights = make_tensor(w.dtype, {w.k, w.c, 3, 3});
    t.bias = Halide::Runtime::Buffer<float>(w.k);
    t.output = make_tensor(w.dtype, {w.k, w.out_w(), w.out_h(), w.n});
    return t;
}

void randomize(StemTensors &t, const StemWorkload &w, std::mt19937_64 &rng) {
    fill_uniform(t.input, w.dtype, rng, -1.0, 1.0);
    double a = 1.7 / std::sqrt(9.0 * w.c);
    fill_uniform(t.weights, w.dtype, rng, -a, a);
    std::uniform_real_distribution<float> d(-0.5f, 0.5f);
    t.bias.for_each_value([&](float &b) { b = d(rng); });
    t.bias.set_host_dirty();
    poison(t.output, w.dtype);
}

std::vector<const KernelVariant *> stem_candidates(const StemWorkload &w, Device device) {
    std::vector<const KernelVariant *> out;
    for (const auto &v : data_variants())
        if (v.family == "stem" && v.device == device && v.dtype == w.dtype && v.knob("channels", -1) == w.c &&
            v.knob("out_channels", -1) == w.k)
            out.push_back(&v);
    std::stable_sort(out.begin(), out.end(),
                     [](const KernelVariant *a, const KernelVariant *b) { return a->data_default > b->data_default; });
    return out;
}

KernelVariant stem_kernel_for(const StemWorkload &w, const std::string &strategy, Device device,
                              const ScheduleChoice &s) {
    KernelVariant v = make_variant(
        "stem", fmt::format("stem_c{}k{}_{}_{}_{}", w.c, w.k, strategy, dtype_name(w.dtype), device_name(device)),
        device, w.dtype,
        {{"strategy", strategy}, {"channels", std::to_string(w.c)}, {"out_channels", std::to_string(w.k)}}, s.knobs,
        s.max_registers, s.why);
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

std::string stem_launch_error(const KernelVariant &v, const StemWorkload &w, const LaunchLimits &limits) {
    if (v.device == Device::cpu) return "";
    const int tx = v.knob("tile_x"), ty = v.knob("tile_y");
    LaunchShape shape;  // one block (the grid is the workload's, within every limit)
    shape.threads = v.threads_per_block();
    if (v.param("strategy") == "depth_first")  // the conv tile of a pool tile: (2t+1) pixels a side
        shape.shared_bytes = shared_pad8(w.k) * (2 * tx + 1) * (2 * ty + 1) * dtype_bytes(w.dtype);
    return launch_limit_violation(shape, limits);
}

void check_stem_launch(const KernelVariant &v, const StemWorkload &w) {
    if (const std::string why = stem_launch_error(v, w, launch_limits(v.device)); !why.empty())
        throw KernelError("launch rejected before running: stem " + to_key(w) + ", strategy " + v.param("strategy") +
                          " (kernel " + v.name + "): " + why);
}

void run_stem(const KernelVariant &v, const StemWorkload &w, StemTensors &t) {
    check_stem_launch(v, w);
    apply_register_cap(v);
    const LoadedKernel &k = v.load();
    void *args[] = {t.input.raw_buffer(), t.weights.raw_buffer(), t.bias.raw_buffer(), t.output.raw_buffer()};
    clear_halide_error();
    const int rc = k.call(args);
    if (rc != 0) throw KernelError("kernel " + v.name + " failed on " + to_key(w) + ": " + last_halide_error(rc));
}

Comparison check_stem(const StemWorkload &w, StemTensors &t) {
    Conv2dWorkload c = w.conv();
    std::vector<double> in = to_doubles(t.input, w.dtype), wt = to_doubles(t.weights, w.dtype), b(w.k), conv, scale;
    t.bias.copy_to_host();
    for (int k = 0; k < w.k; ++k) b[k] = t.bias(k);
    conv2d_reference(c, in, wt, b, &conv, &scale);
    std::vector<uint16_t> tmp(2);
    for (double &v : conv) {  // the conv output is stored in the storage type, as the kernels do
        store_from_double(tmp.data(), w.dtype, 0, v);
        v = w.dtype == DType::f32 ? double(float(v)) : load_as_double(tmp.data(), w.dtype, 0);
    }
    const int CW = c.out_w(), CH = c.out_h(), PW = w.out_w(), PH = w.out_h();
    std::vector<double> ref(size_t(w.n) * PH * PW * w.k), rscale(ref.size());
    for (int n = 0; n < w.n; ++n)
        for (int y = 0; y < PH; ++y)
            for (int x = 0; x < PW; ++x)
                for (int k = 0; k < w.k; ++k) {
                    double m = -std::numeric_limits<double>::infinity(), s = 0;
                    for (int dy = 0; dy < 3; ++dy)
                        for (int dx = 0; dx < 3; ++dx) {
                            int cx = 2 * x + dx - 1, cy = 2 * y + dy - 1;
                            if (cx < 0 || cx >= CW || cy < 0 || cy >= CH) continue;
                            size_t i = ((size_t(n) * CH + cy) * CW + cx) * w.k + k;
                            if (conv[i] > m) m = conv[i], s = scale[i];
                        }
                    size_t o = ((size_t(n) * PH + y) * PW + x) * w.k + k;
                    ref[o] = m;
                    rscale[o] = s;
                }
    // A conv value within rounding of the max may be picked instead: 2 storage ulps of its scale.
    return compare(to_doubles(t.output, w.dtype), ref, rscale, 9LL * w.c, w.dtype, 4.0 * dtype_unit_roundoff(w.dtype));
}

std::vector<KernelCost> stem_costs(const StemWorkload &w, const std::string &strategy) {
    Conv2dWorkload c = w.conv();
    const double e = dtype_bytes(w.dtype);
    const double out = e * double(w.n) * w.k * w.out_h() * w.out_w();
    const double mid = e * double(w.n) * w.k * c.out_h() * c.out_w();
    if (strategy == "layer_by_layer")
        return {{"conv", conv2d_flops(c), conv2d_bytes(c)}, {"pool", 0, mid + out, {mid}}};
    // Depth-first: each pool tile recomputes the conv rows and columns it shares with its neighbours; how many
    // is not modelled here, so the executed flops are left unknown (NaN: the results leave the field out).
    KernelCost stem{"stem", conv2d_flops(c), conv2d_bytes(c) - mid + out};
    stem.executed_flops = std::nan("");
    return {stem};
}

}  // namespace blockfuse

namespace blockfuse {
namespace {

class StemData : public TensorOpData<StemData, StemWorkload, StemTensors> {
public:
    StemData(const StemWorkload &w, std::mt19937_64 &rng) : TensorOpData(w, rng, make_stem_tensors) {}
    void run(const KernelVariant &v) override { run_stem(v, w_, t_); }
    Comparison check() override { return check_stem(w_, t_); }
};

class StemOp : public Op {
public:
    explicit StemOp(const StemWorkload &w) : w_(w) {}
    std::string key() const override { return to_key(w_); }
    std::string generator() const override { return "stem"; }
    DType dtype() const override { return w_.dtype; }
    std::vector<std::string> strategies() const override { return {"layer_by_layer", "depth_first"}; }
    ScheduleChoice heuristic(const std::string &s, Device d) const override { return stem_heuristic(w_, s, d); }
    KernelVariant kernel_for(const std::string &st, Device d, const ScheduleChoice &s) const override {
        return stem_kernel_for(w_, st, d, s);
    }
    std::vector<const KernelVariant *> named_variants(Device d) const override { return stem_candidates(w_, d); }
    std::vector<KernelCost> costs(const KernelVariant &v) const override { return stem_costs(w_, v.param("strategy")); }
    Problem problem() const override {
        Problem p;
        p.n = w_.n, p.h = w_.h, p.w = w_.w, p.c = w_.c, p.k = w_.k, p.r = p.s = 3, p.stride_h = p.stride_w = 2;
        return p;
    }
    std::unique_ptr<OpData> data(std::mt19937_64 &rng) const override { return std::make_unique<StemData>(w_, rng); }
    std::vector<std::string> tunable_knobs(const std::string &strategy, Device d) const override {
        if (d == Device::cpu) return {"tile_x", "tile_y"};
        if (strategy == "depth_first") return {"tile_x", "tile_y", "vec_k", "conv_vec"};
        return {"tile_x", "tile_y", "vec_k"};
    }
    std::string candidate_error(const KernelVariant &v, const LaunchLimits &limits) const override {
        return stem_launch_error(v, w_, limits);
    }

private:
    StemWorkload w_;
};

}  // namespace

std::unique_ptr<Op> stem_op(const std::string &key) { return std::make_unique<StemOp>(parse_stem(key)); }

}  // namespace blockfuse
