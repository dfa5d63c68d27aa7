#include "runtime/conv_nd.h"
#include "runtime/check.h"
#include "runtime/key_fields.h"
#include "runtime/reference.h"
#include "schedules/heuristics.h"
#include <climits>
#include <cmath>
#include <fmt/format.h>
#include <sstream>

namespace blockfuse {

// ---------------------------------------------------------------------------------------------
// Keys

bool is_conv1d_key(const std::string &key) { return key.rfind("conv1d:", 0) == 0; }
bool is_conv3d_key(const std::string &key) { return key.rfind("conv3d:", 0) == 0; }

Conv2dWorkload Conv1dWorkload::as_conv2d() const {
    Conv2dWorkload w;
    w.n = n, w.c = c, w.h = 1, w.w = l, w.k = k, w.r = 1, w.s = kernel;
    w.stride_h = w.stride_w = stride;  // one static stride (the height's is never used: one row)
    w.dil_h = w.dil_w = dil;
    w.pad_l = w.pad_r = pad;
    w.groups = groups, w.bias = bias, w.dtype = dtype;
    return w;
}

namespace {
// The conv2d key's validation, its messages' field names as the conv1d / conv3d key spells them.
void validate_as_conv2d(const Conv2dWorkload &w, const std::string &key) {
    try {
        validate(w, key);
    } catch (const WorkloadError &e) {
        std::string m = e.what();
        for (auto [from, to] : {std::pair<std::string, std::string>{"padded width", "padded length"},
                                {"kernel width", "kernel"},
                                {"stride_w", "stride"},
                                {"dil_w", "dil"},
                                {"'s'", "'kernel'"}})
            if (auto at = m.find(from); at != std::string::npos) m.replace(at, from.size(), to);
        throw WorkloadError(m);
    }
}
}  // namespace

Conv1dWorkload parse_conv1d(const std::string &key) {
    KeyFields kf = split_key(key);
    if (kf.family != "conv1d") key_error(key, "family '" + kf.family + "' is not 'conv1d'");
    KeyReader f(key, kf);
    Conv1dWorkload w;
    w.n = f.required("n"), w.c = f.required("c"), w.l = f.required("l"), w.k = f.required("k");
    w.kernel = f.required("kernel");
    f.take("stride", &w.stride);
    f.take("pad", &w.pad);
    f.take("dil", &w.dil);
    f.take("groups", &w.groups);
    w.bias = f.flag("bias", false);
    w.dtype = f.dtype("dtype", w.dtype);
    f.done();
    for (auto [name, v] : {std::pair{"n", w.n}, {"c", w.c}, {"l", w.l}, {"k", w.k}, {"kernel", w.kernel}})
        if (v <= 0) key_error(key, std::string("field '") + name + "' = " + std::to_string(v) + " must be positive");
    validate_as_conv2d(w.as_conv2d(), key);
    return w;
}

std::string to_key(const Conv1dWorkload &w) {
    std::string s = fmt::format("conv1d:n={},c={},l={},k={},kernel={},stride={},pad={}", w.n, w.c, w.l, w.k, w.kernel,
                                w.stride, w.pad);
    if (w.dil != 1) s += fmt::format(",dil={}", w.dil);
    s += fmt::format(",groups={}", w.groups);
    if (w.bias) s += ",bias=1";
    return s + ",dtype=" + dtype_name(w.dtype);
}

int Conv3dWorkload::out(int a) const { return (in[a] + 2 * pad[a] - dil[a] * (kernel[a] - 1) - 1) / stride[a] + 1; }

Conv2dWorkload Conv3dWorkload::as_conv2d() const {
    Conv2dWorkload w;
    w.n = out(0) * n, w.c = kernel[0] * c, w.h = in[1], w.w = in[2], w.k = k, w.r = kernel[1], w.s = kernel[2];
    w.stride_h = stride[1], w.stride_w = stride[2], w.dil_h = dil[1], w.dil_w = dil[2];
    w.pad_t = w.pad_b = pad[1], w.pad_l = w.pad_r = pad[2];
    w.groups = groups, w.bias = bias, w.dtype = dtype;
    return w;
}

Conv2dWorkload Conv3dWorkload::plane() const {
    Conv2dWorkload w = as_conv2d();
    w.n = n, w.c = c;
    return w;
}

TcDepth Conv3dWorkload::depth() const { return TcDepth{in[0], kernel[0], stride[0], dil[0], pad[0]}; }

bool Conv3dWorkload::on_tensor_cores() const { return tensor_cores_apply(plane()) && !(in[0] == 1 && pad[0] > 0); }

Conv3dWorkload parse_conv3d(const std::string &key) {
    KeyFields kf = split_key(key);
    if (kf.family != "conv3d") key_error(key, "family '" + kf.family + "' is not 'conv3d'");
    KeyReader f(key, kf);
    Conv3dWorkload w;
    w.n = f.required("n"), w.c = f.required("c");
    const auto names = axis_names(3);
    for (int a = 0; a < 3; ++a) w.in[a] = f.required(names[a]);
    w.k = f.required("k");
    const bool has_kernel = f.per_axis("kernel", 3, &w.kernel);
    f.per_axis("stride", 3, &w.stride);
    f.per_axis("pad", 3, &w.pad);
    f.per_axis("dil", 3, &w.dil);
    f.take("groups", &w.groups);
    w.bias = f.flag("bias", false);
    w.dtype = f.dtype("dtype", w.dtype);
    f.done();
    if (!has_kernel) key_error(key, "missing field 'kernel' (or its per-axis forms)");
    auto positive = [&](const std::string &name, int v) {
        if (v <= 0) key_error(key, "field '" + name + "' = " + std::to_string(v) + " must be positive");
    };
    positive("n", w.n), positive("c", w.c), positive("k", w.k), positive("groups", w.groups);
    for (int a = 0; a < 3; ++a) {
        positive(names[a], w.in[a]);
        positive("kernel_" + names[a], w.kernel[a]), positive("stride_" + names[a], w.stride[a]);
        positive("dil_" + names[a], w.dil[a]);
        if (w.pad[a] < 0)
            key_error(key, "field 'pad_" + names[a] + "' = " + std::to_string(w.pad[a]) + " must not be negative");
        const long long span = 1LL * w.dil[a] * (w.kernel[a] - 1) + 1;
        if (w.in[a] + 2LL * w.pad[a] < span)
            key_error(key, fmt::format("empty output along {}: padded size {} is smaller than the dilated kernel {}",
                                       names[a], w.in[a] + 2LL * w.pad[a], span));
    }
    if (w.c % w.groups) key_error(key, fmt::format("field 'groups' = {} does not divide c = {}", w.groups, w.c));
    const long long lim = INT_MAX;
    if (1LL * w.n * w.c * w.in[0] * w.in[1] > lim || 1LL * w.n * w.c * w.in[0] * w.in[1] * w.in[2] > lim)
        key_error(key, "input tensor has more than 2^31 elements");
    validate(w.as_conv2d(), key);  // k, the output and the weights as the kernel sees them
    return w;
}

std::string to_key(const Conv3dWorkload &w) {
    std::ostringstream o;
    o << "conv3d:n=" << w.n << ",c=" << w.c << ",d=" << w.in[0] << ",h=" << w.in[1] << ",w=" << w.in[2] << ",k=" << w.k
      << axis_fields("kernel", 3, w.kernel) << axis_fields("stride", 3, w.stride) << axis_fields("pad", 3, w.pad);
    if (w.dil != std::array<int, 3>{1, 1, 1}) o << axis_fields("dil", 3, w.dil);
    o << ",groups=" << w.groups;
    if (w.bias) o << ",bias=1";
    o << ",dtype=" << dtype_name(w.dtype);
    return o.str();
}

// ---------------------------------------------------------------------------------------------
// Conv3d tensors and reference

Conv3dTensors make_conv3d_tensors(const Conv3dWorkload &w) {
    Conv3dTensors t;
    const int cg = w.c / w.groups;
    t.input = make_tensor(w.dtype, {w.c, w.in[2], w.in[1], w.in[0] * w.n});
    t.weights5 = make_tensor(w.dtype, {w.k, cg, w.kernel[2], w.kernel[1], w.kernel[0]});
    t.weights = make_tensor(w.dtype, {w.k, cg * w.kernel[0], w.kernel[2], w.kernel[1]});
    t.bias = Halide::Runtime::Buffer<float>(w.k);
    t.bias.fill(0.0f);
    t.output = make_tensor(w.dtype, {w.k, w.out(2), w.out(1), w.out(0) * w.n});
    return t;
}

void pack_conv3d_weights(Conv3dTensors &t, const Conv3dWorkload &w) {
    const std::vector<double> v = to_doubles(t.weights5, w.dtype);
    const int K = w.k, Cg = w.c / w.groups, S = w.kernel[2], R = w.kernel[1], T = w.kernel[0];
    for (int kz = 0; kz < T; ++kz)
        for (int ky = 0; ky < R; ++ky)
            for (int kx = 0; kx < S; ++kx)
                for (int cg = 0; cg < Cg; ++cg)
                    for (int k = 0; k < K; ++k)
                        store_from_double(t.weights.data(), w.dtype,
                                          ((size_t(ky) * S + kx) * (T * Cg) + kz * Cg + cg) * K + k,
                                          v[(((size_t(kz) * R + ky) * S + kx) * Cg + cg) * K + k]);
    t.weights.set_host_dirty();
    widen_weights(t, w.dtype);
    if (w.on_tensor_cores())
        t.weights_tc = tensor_core_weights(t.weights5, w.k, w.c, w.kernel[0] * w.kernel[1] * w.kernel[2], w.groups);
}

void randomize(Conv3dTensors &t, const Conv3dWorkload &w, std::mt19937_64 &rng) {
    fill_uniform(t.input, w.dtype, rng, -1.0, 1.0);
    fill_uniform(t.weights5, w.dtype, rng, -1.0, 1.0);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    if (w.bias) t.bias.for_each_value([&](float &b) { b = d(rng); });
    t.bias.set_host_dirty();
    poison(t.output, w.dtype);
    pack_conv3d_weights(t, w);
}

double conv3d_reference_point(const Conv3dWorkload &w, const std::vector<double> &in, const std::vector<double> &wt5,
                              const std::vector<double> &bias, int k, int ox, int oy, int oz, int n, double *scale) {
    const int Cg = w.c / w.groups, Kg = w.k / w.groups, g = k / Kg;
    const int D = w.in[0], H = w.in[1], W = w.in[2], T = w.kernel[0], R = w.kernel[1], S = w.kernel[2];
    double acc = bias[k], sc = std::fabs(bias[k]);
    for (int kz = 0; kz < T; ++kz) {
        const int iz = oz * w.stride[0] + kz * w.dil[0] - w.pad[0];
        if (iz < 0 || iz >= D) continue;
        for (int ky = 0; ky < R; ++ky) {
            const int iy = oy * w.stride[1] + ky * w.dil[1] - w.pad[1];
            if (iy < 0 || iy >= H) continue;
            for (int kx = 0; kx < S; ++kx) {
                const int ix = ox * w.stride[2] + kx * w.dil[2] - w.pad[2];
                if (ix < 0 || ix >= W) continue;
                for (int cg = 0; cg < Cg; ++cg) {
                    const double x = in[(((size_t(n) * D + iz) * H + iy) * W + ix) * w.c + g * Cg + cg];
                    const double ww = wt5[((((size_t(kz) * R + ky) * S + kx) * Cg) + cg) * w.k + k];
                    acc += x * ww;
                    sc += std::fabs(x * ww);
                }
            }
        }
    }
    *scale = sc;
    return acc;
}

// ---------------------------------------------------------------------------------------------
// The Ops

namespace {

class Conv3dData : public TensorOpData<Conv3dData, Conv3dWorkload, Conv3dTensors> {
public:
    Conv3dData(const Conv3dWorkload &w, std::mt19937_64 &rng)
        : TensorOpData(w, rng, make_conv3d_tensors), rng_(rng()) {}
    void run(const KernelVariant &v) override {
        if (v.family == "conv2d_tc") return run_conv2d_tc(v, w_.plane(), t_, w_.depth(), to_key(w_));
        run_conv2d(v, w_.as_conv2d(), t_);
    }
    Comparison check() override {
        std::vector<double> in = to_doubles(t_.input, w_.dtype), wt = to_doubles(t_.weights5, w_.dtype);
        std::vector<double> bias(size_t(w_.k));
        t_.bias.copy_to_host();
        for (int k = 0; k < w_.k; ++k) bias[size_t(k)] = t_.bias(k);
        const std::vector<double> out = to_doubles(t_.output, w_.dtype);
        const int OW = w_.out(2), OH = w_.out(1), OD = w_.out(0), K = w_.k;
        const long long L = 1LL * (w_.c / w_.groups) * w_.kernel[0] * w_.kernel[1] * w_.kernel[2];
        return compare_points(
            out, full() ? out.size() : kSampledPoints, rng_,
            [&](size_t o, double *sc) {
                return conv3d_reference_point(w_, in, wt, bias, int(o % K), int(o / K % OW), int(o / K / OW % OH),
                                              int(o / K / OW / OH % OD), int(o / K / OW / OH / OD), sc);
            },
            L, w_.dtype);
    }
    std::string check_note() const override {
        return full() ? "" : "at " + std::to_string(kSampledPoints) + " sampled outputs, every output scanned for NaN";
    }

private:
    bool full() const { return conv2d_flops(w_.as_conv2d()) / 2 <= kFullCheckMacs; }
    std::mt19937_64 rng_;
};

// Conv1d: the conv2d op of its height-1 key, under its own key and problem columns.
class Conv1dOp : public Op {
public:
    explicit Conv1dOp(const Conv1dWorkload &w) : w_(w), c2_(conv2d_op(to_key(w.as_conv2d()))) {}
    std::string key() const override { return to_key(w_); }
    std::string generator() const override { return c2_->generator(); }
    std::string family(const std::string &strategy) const override { return c2_->family(strategy); }
    DType dtype() const override { return w_.dtype; }
    std::vector<std::string> strategies() const override { return c2_->strategies(); }
    ScheduleChoice heuristic(const std::string &s, Device d) const override { return c2_->heuristic(s, d); }
    KernelVariant kernel_for(const std::string &s, Device d, const ScheduleChoice &c) const override {
        return c2_->kernel_for(s, d, c);
    }
    std::vector<const KernelVariant *> named_variants(Device d) const override { return c2_->named_variants(d); }
    std::vector<KernelCost> costs(const KernelVariant &v) const override { return c2_->costs(v); }
    Problem problem() const override {
        Problem p = c2_->problem();
        p.h = 1;
        return p;
    }
    std::unique_ptr<OpData> data(std::mt19937_64 &rng) const override { return c2_->data(rng); }
    std::vector<std::string> tunable_knobs(const std::string &s, Device d) const override {
        return c2_->tunable_knobs(s, d);
    }
    std::string candidate_error(const KernelVariant &v, const LaunchLimits &l) const override {
        return c2_->candidate_error(v, l);
    }

private:
    Conv1dWorkload w_;
    std::unique_ptr<Op> c2_;
};

// Conv3d: direct, the conv2d kernels with the depth decoding (depth_* params), whose schedules, heuristics and
// launch checks are those of the conv2d it computes (as_conv2d); tensor_cores, the implicit GEMM with the depth
// in its reduction (runtime/conv2d_tc.h). The data and the reference are its own.
class Conv3dOp : public Op {
public:
    explicit Conv3dOp(const Conv3dWorkload &w) : w_(w), c2_(conv2d_op(to_key(w.as_conv2d()))) {}
    std::string key() const override { return to_key(w_); }
    std::string generator() const override { return "conv2d"; }
    std::string family(const std::string &strategy) const override {
        return strategy == kTensorCores ? "conv2d_tc" : "conv2d";
    }
    DType dtype() const override { return w_.dtype; }
    std::vector<std::string> strategies() const override {
        if (w_.on_tensor_cores()) return {"direct", kTensorCores};
        return {"direct"};
    }
    ScheduleChoice heuristic(const std::string &s, Device d) const override {
        return s == kTensorCores ? conv2d_tc_heuristic(w_.plane(), d, w_.depth()) : c2_->heuristic(s, d);
    }
    KernelVariant kernel_for(const std::string &strategy, Device d, const ScheduleChoice &s) const override {
        if (strategy == kTensorCores) return conv2d_tc_kernel_for(w_.plane(), d, s, w_.depth());
        Conv2dKernelExtras x;
        auto set = [&](const char *k, int v) { x.params[k] = std::to_string(v); };
        set("depth_kernel", w_.kernel[0]);
        set("depth_cg", w_.c / w_.groups);
        set("depth_in", w_.in[0]);
        set("depth_out", w_.out(0));
        set("depth_stride", w_.stride[0]);
        set("depth_dilation", w_.dil[0]);
        set("depth_pad", w_.pad[0]);
        x.input_channels = w_.c;
        x.name = fmt::format("conv3d_k{}x{}x{}s{}", w_.kernel[0], w_.kernel[1], w_.kernel[2], w_.stride[2]);
        if (w_.groups > 1) x.name += fmt::format("g{}", w_.groups);
        x.name += fmt::format("_c{}k{}d{}", w_.c, w_.k, w_.in[0]);
        return conv2d_kernel_for(w_.as_conv2d(), d, s, x);
    }
    std::vector<const KernelVariant *> named_variants(Device) const override { return {}; }
    std::vector<KernelCost> costs(const KernelVariant &v) const override {
        const double e = dtype_bytes(w_.dtype), ew = takes_f32_weights(v) ? 4.0 : e;
        const double in = double(w_.n) * w_.c * w_.in[0] * w_.in[1] * w_.in[2];
        const double wt = double(w_.k) * (w_.c / w_.groups) * w_.kernel[0] * w_.kernel[1] * w_.kernel[2];
        const double out = double(w_.n) * w_.k * w_.out(0) * w_.out(1) * w_.out(2);
        KernelCost c{v.name, conv2d_flops(w_.as_conv2d()), e * (in + out) + ew * wt + (w_.bias ? 4.0 * w_.k : 0.0)};
        c.tensor_cores = v.family == "conv2d_tc";
        c.wgmma = c.tensor_cores && v.knob("wgmma") != 0;
        return {c};
    }
    Problem problem() const override {
        Problem p;
        p.n = w_.n, p.d = w_.in[0], p.h = w_.in[1], p.w = w_.in[2], p.c = w_.c, p.k = w_.k;
        p.t = w_.kernel[0], p.r = w_.kernel[1], p.s = w_.kernel[2];
        p.stride_d = w_.stride[0], p.stride_h = w_.stride[1], p.stride_w = w_.stride[2];
        p.dil_h = w_.dil[1], p.dil_w = w_.dil[2], p.groups = w_.groups;
        return p;
    }
    std::unique_ptr<OpData> data(std::mt19937_64 &rng) const override { return std::make_unique<Conv3dData>(w_, rng); }
    std::vector<std::string> tunable_knobs(const std::string &s, Device d) const override {
        return c2_->tunable_knobs(s, d);
    }
    std::string candidate_error(const KernelVariant &v, const LaunchLimits &l) const override {
        if (v.family == "conv2d_tc") return conv2d_tc_launch_error(v, w_.plane(), l, w_.depth());
        return c2_->candidate_error(v, l);
    }

private:
    Conv3dWorkload w_;
    std::unique_ptr<Op> c2_;
};

}  // namespace

std::unique_ptr<Op> conv1d_op(const std::string &key) { return std::make_unique<Conv1dOp>(parse_conv1d(key)); }
std::unique_ptr<Op> conv3d_op(const std::string &key) { return std::make_unique<Conv3dOp>(parse_conv3d(key)); }

}  // namespace blockfuse
