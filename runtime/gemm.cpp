#include "runtime/gemm.h"
#include "runtime/cuda_driver.h"
#include "schedules/gemm_knobs.h"
#include "schedules/heuristics.h"
#include <fmt/format.h>
#include <algorithm>
#include <climits>
#include <cmath>
#include <sstream>

namespace blockfuse {
namespace {

[[noreturn]] void fail(const std::string &key, const std::string &msg) {
    throw WorkloadError("invalid workload '" + key + "': " + msg);
}

long long round_up8(long long x) { return (x + 7) / 8 * 8; }
long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

// Element (i, row) of a (cols, rows) bit-pattern matrix as double.
double element(const Halide::Runtime::Buffer<uint16_t> &t, DType d, int i, int row) {
    const uint16_t bits = t(i, row);
    return load_as_double(&bits, d, 0);
}

// The first `cols` columns of every row from value(); the rest of a padded row zero.
template <class F>
void fill(Halide::Runtime::Buffer<uint16_t> &t, int cols, DType d, F value) {
    for (int r = 0; r < t.dim(1).extent(); ++r)
        for (int i = 0; i < t.dim(0).extent(); ++i) {
            uint16_t bits = 0;
            if (i < cols) store_from_double(&bits, d, 0, value());
            t(i, r) = bits;
        }
    t.set_host_dirty();
}

}  // namespace

bool is_gemm_key(const std::string &key) { return key.rfind("gemm:", 0) == 0; }

GemmWorkload parse_gemm(const std::string &key) {
    KeyFields kf = split_key(key);
    if (kf.family != "gemm") fail(key, "family '" + kf.family + "' is not 'gemm'");
    GemmWorkload w;
    bool has_m = false, has_n = false, has_k = false;
    for (const auto &[name, value] : kf.fields) {
        if (name == "m") w.m = parse_key_int(key, name, value), has_m = true;
        else if (name == "n") w.n = parse_key_int(key, name, value), has_n = true;
        else if (name == "k") w.k = parse_key_int(key, name, value), has_k = true;
        else if (name == "bias") {
            const int b = parse_key_int(key, name, value);
            if (b != 0 && b != 1) fail(key, "field 'bias' = " + value + " must be 0 or 1");
            w.bias = b == 1;
        } else if (name == "act") {
            if (!parse_activation(value, &w.act))
                fail(key, "field 'act' = '" + value + "' is not one of none, relu, relu6, silu, gelu, sigmoid");
        } else if (name == "dtype") {
            if (!parse_dtype(value, &w.dtype) || w.dtype == DType::f32)
                fail(key, "field 'dtype' = '" + value + "' is not supported by the tensor-core GEMM (f16, bf16)");
        } else {
            fail(key, "unknown field '" + name + "'");
        }
    }
    for (auto [name, has] : {std::pair{"m", has_m}, {"n", has_n}, {"k", has_k}})
        if (!has) fail(key, std::string("missing field '") + name + "'");
    for (auto [name, v] : {std::pair{"m", w.m}, {"n", w.n}, {"k", w.k}})
        if (v <= 0) fail(key, std::string("field '") + name + "' = " + std::to_string(v) + " must be positive");
    auto fits = [&](const char *what, long long cols, long long rows) {
        if (round_up8(cols) * rows > INT_MAX) fail(key, std::string(what) + " tensor has more than 2^31 elements");
    };
    fits("A", w.k, w.m);
    fits("B", w.k, w.n);
    fits("C", w.n, w.m);
    return w;
}

std::string to_key(const GemmWorkload &w) {
    std::ostringstream o;
    o << "gemm:m=" << w.m << ",n=" << w.n << ",k=" << w.k;
    if (w.bias) o << ",bias=1";
    if (w.act != Activation::none) o << ",act=" << activation_name(w.act);
    o << ",dtype=" << dtype_name(w.dtype);
    return o.str();
}

Halide::Runtime::Buffer<uint16_t> make_gemm_matrix(int cols, int rows, bool padded) {
    Halide::Runtime::Buffer<uint16_t> t(int(round_up8(cols)), rows);
    if (!padded) t.crop(0, 0, cols);  // the padding stays allocated, outside the tensor
    return t;
}

GemmTensors make_gemm_tensors(const GemmWorkload &w) {
    GemmTensors t;
    t.a = make_gemm_matrix(w.k, w.m, true);
    t.b = make_gemm_matrix(w.k, w.n, true);
    t.output = make_gemm_matrix(w.n, w.m, false);
    t.bias = Halide::Runtime::Buffer<float>(w.n);
    t.bias.fill(0.0f);
    return t;
}

void randomize(GemmTensors &t, const GemmWorkload &w, std::mt19937_64 &rng) {
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    fill(t.a, w.k, w.dtype, [&] { return d(rng); });
    fill(t.b, w.k, w.dtype, [&] { return d(rng); });
    t.bias.fill(0.0f);
    if (w.bias) t.bias.for_each_value([&](float &b) { b = float(d(rng)); });
    t.bias.set_host_dirty();
    fill(t.output, w.n, w.dtype, [] { return std::nan(""); });
}

void randomize_integers(GemmTensors &t, const GemmWorkload &w, std::mt19937_64 &rng, int lo, int hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    fill(t.a, w.k, w.dtype, [&] { return double(d(rng)); });
    fill(t.b, w.k, w.dtype, [&] { return double(d(rng)); });
    t.bias.fill(0.0f);
    if (w.bias) t.bias.for_each_value([&](float &b) { b = float(d(rng)); });
    t.bias.set_host_dirty();
    fill(t.output, w.n, w.dtype, [] { return std::nan(""); });
}

GemmTensors with_own_output(const GemmTensors &t, DType dtype) {
    GemmTensors o = t;
    const int n = t.output.dim(0).extent(), m = t.output.dim(1).extent();
    o.output = make_gemm_matrix(n, m, false);
    fill(o.output, n, dtype, [] { return std::nan(""); });
    return o;
}

std::vector<const KernelVariant *> gemm_candidates(const GemmWorkload &w, Device device) {
    std::vector<const KernelVariant *> out;
    for (const auto &v : data_variants())
        if (v.family == "gemm" && v.device == device && v.dtype == w.dtype) out.push_back(&v);
    std::stable_sort(out.begin(), out.end(),
                     [](const KernelVariant *a, const KernelVariant *b) { return a->data_default > b->data_default; });
    return out;
}

KernelVariant gemm_kernel_for(const GemmWorkload &w, Device device, const ScheduleChoice &s) {
    KernelVariant v = make_variant("gemm", fmt::format("gemm_{}_{}", dtype_name(w.dtype), device_name(device)), device,
                                   w.dtype, {}, s.knobs, s.max_registers, s.why);
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

GemmLaunch tensor_core_launch(const KernelVariant &v, long long m, long long n, int a_windows) {
    GemmLaunch l;
    if (v.device == Device::cpu) return l;
    const GemmKnobs kn = gemm_knobs_from(v.knobs);
    const long long bm = 1LL * kn.warp_m * kn.warps_m, bn = 1LL * kn.warp_n * kn.warps_n;
    l.shape.threads = kn.threads_per_block();
    l.shape.grid[0] = ceil_div(n, bn);
    l.shape.grid[1] = ceil_div(m, bm);
    l.shape.grid[2] = kn.split_k;  // the accumulators' kernel (the epilogue's has one split)
    // The A and B panels of one K step (padded rows), once per copy of the cp.async ring, and on OpenCL the
    // emulation's block arrays too: the accumulators and the fragments of one K step (schedules/gemm_schedule.cpp).
    // A grouped convolution's block holds an A panel per window of its columns (a_windows).
    l.shape.shared_bytes = 2 * (bm * a_windows + bn) * (kn.k_step + kn.pad) * kn.stages;
    // The staged C tile (stage_c): its rows padded by 8 elements, counted as if it had shared memory of its own.
    if (kn.stage_c) l.shape.shared_bytes += 2 * bm * (bn + 8);
    if (v.device == Device::opencl)
        l.shape.shared_bytes += 4 * bm * bn + 4 * (bm * a_windows * kn.k_step / 2) + 4 * (bn * kn.k_step / 2);
    l.registers = v.jit_register_cap();
    return l;
}

GemmLaunch gemm_launch(const KernelVariant &v, const GemmWorkload &w) { return tensor_core_launch(v, w.m, w.n); }

std::string tensor_core_launch_error(const KernelVariant &v, long long m, long long n, const LaunchLimits &limits,
                                     int channels, int a_windows) {
    const GemmKnobs kn = gemm_knobs_from(v.knobs);
    if (std::string why = gemm_knobs_error(kn); !why.empty()) return why;
    if (kn.stages > 1 && channels % 8)
        return fmt::format("stages = {} needs input channels that are a multiple of 8 (cp.async copies whole 16-byte "
                           "rows of them), not {}",
                           kn.stages, channels);
    if (v.device == Device::cpu) return "";
    if (kn.stage_c && v.device == Device::opencl)
        return "stage_c = 1 is for CUDA and the CPU (OpenCL's emulation keeps the accumulators in shared memory)";
    if (kn.wgmma && limits.compute_capability && limits.compute_capability != 90)
        return fmt::format("wgmma = 1 needs a GPU of compute capability 9.0 (its sm_90a instructions), not {}.{}",
                           limits.compute_capability / 10, limits.compute_capability % 10);
    const GemmLaunch l = tensor_core_launch(v, m, n, a_windows);
    // One wgmma names all warp_n / 2 accumulators of a thread: ptxas refuses a cap below them plus its addresses
    // (C7602: an m64n128k16 needed 90, an m64n256k16 154, CUDA 13.0).
    if (const int need = kn.warp_n / 2 + 32; kn.wgmma && v.device == Device::cuda && l.registers < need)
        return fmt::format("a register cap of {} is below the {} a wgmma of m64n{}k16 needs ({} accumulators a thread "
                           "in one instruction)",
                           l.registers, need, kn.warp_n, kn.warp_n / 2);
    std::string why = launch_limit_violation(l.shape, limits);
    if (why.empty() && 1LL * l.registers * l.shape.threads > limits.max_registers)
        why = std::to_string(l.registers) + " registers x " + std::to_string(l.shape.threads) +
              " threads = " + std::to_string(1LL * l.registers * l.shape.threads) + " exceed the device limit of " +
              std::to_string(limits.max_registers) + " registers per block";
    return why;
}

void check_gemm_launch(const KernelVariant &v, const GemmWorkload &w) {
    if (std::string why = tensor_core_launch_error(v, w.m, w.n, launch_limits(v.device)); !why.empty())
        throw KernelError("launch rejected before running: kernel " + v.name + " on " + to_key(w) + ": " + why);
}

void call_tensor_core_kernel(const KernelVariant &v, void **args, const std::string &key) {
    apply_register_cap(v);
    const LoadedKernel &k = v.load();
    clear_halide_error();
    if (const int rc = k.call(args); rc != 0)
        throw KernelError("kernel " + v.name + " failed on " + key + ": " + last_halide_error(rc));
}

void run_gemm(const KernelVariant &v, const GemmWorkload &w, GemmTensors &t) {
    check_gemm_launch(v, w);
    // ABI order of generators/gemm_generator.cpp: a, b, bias, k_size, activation, output.
    int k_size = w.k, act = int(w.act);
    void *args[] = {t.a.raw_buffer(), t.b.raw_buffer(), t.bias.raw_buffer(), &k_size, &act, t.output.raw_buffer()};
    call_tensor_core_kernel(v, args, to_key(w));
}

Comparison check_gemm(const GemmWorkload &w, GemmTensors &t, size_t max_points, std::mt19937_64 &rng) {
    clear_halide_error();
    if (int rc = t.output.copy_to_host())
        throw KernelError("copying a result from the device failed (a kernel before it failed there): " +
                          last_halide_error(rc));
    auto ref_point = [&](int n, int m, double *scale) {
        double acc = t.bias(n), sc = std::fabs(acc);
        for (int k = 0; k < w.k; ++k) {
            const double p = element(t.a, w.dtype, k, m) * element(t.b, w.dtype, k, n);
            acc += p;
            sc += std::fabs(p);
        }
        *scale = sc;
        return activation_ref(acc, w.act);
    };
    std::vector<double> got, ref, scale;
    const size_t total = size_t(w.m) * w.n;
    auto add = [&](int n, int m) {
        double s;
        ref.push_back(ref_point(n, m, &s));
        scale.push_back(s);
        got.push_back(element(t.output, w.dtype, n, m));
    };
    if (total <= max_points) {
        for (int m = 0; m < w.m; ++m)
            for (int n = 0; n < w.n; ++n) add(n, m);
        return compare(got, ref, scale, w.k, w.dtype);
    }
    std::uniform_int_distribution<int> pm(0, w.m - 1), pn(0, w.n - 1);
    for (size_t s = 0; s < max_points; ++s) add(pn(rng), pm(rng));
    Comparison c = compare(got, ref, scale, w.k, w.dtype);
    c.elements = total;
    c.unwritten = 0;
    for (int m = 0; m < w.m; ++m)
        for (int n = 0; n < w.n; ++n)
            if (!std::isfinite(element(t.output, w.dtype, n, m))) ++c.unwritten;
    return c;
}

double gemm_flops(const GemmWorkload &w) { return 2.0 * w.m * w.n * double(w.k); }

double gemm_bytes(const GemmWorkload &w) {
    return 2.0 * (double(w.m) * w.k + double(w.n) * w.k + double(w.m) * w.n) + (w.bias ? 4.0 * w.n : 0.0);
}

}  // namespace blockfuse

namespace blockfuse {
namespace {

// Outputs are compared at every point up to this many (the float64 reference costs K per point), else at
// this many sampled points, every output still scanned for being written.
constexpr size_t kGemmCheckPoints = 1 << 16;
constexpr size_t kGemmSampledPoints = 4096;

class GemmData : public TensorOpData<GemmData, GemmWorkload, GemmTensors> {
public:
    GemmData(const GemmWorkload &w, std::mt19937_64 &rng) : TensorOpData(w, rng, make_gemm_tensors), rng_(rng()) {}
    void run(const KernelVariant &v) override { run_gemm(v, w_, t_); }
    Comparison check() override { return check_gemm(w_, t_, full() ? kGemmCheckPoints : kGemmSampledPoints, rng_); }
    std::string check_note() const override {
        return full() ? ""
                      : "at " + std::to_string(kGemmSampledPoints) + " sampled outputs, every output scanned for NaN";
    }

private:
    bool full() const { return size_t(w_.m) * w_.n <= kGemmCheckPoints; }
    std::mt19937_64 rng_;
};

class GemmOp : public Op {
public:
    explicit GemmOp(const GemmWorkload &w) : w_(w) {}
    std::string key() const override { return to_key(w_); }
    std::string generator() const override { return "gemm"; }
    DType dtype() const override { return w_.dtype; }
    std::vector<std::string> strategies() const override { return {"direct"}; }
    ScheduleChoice heuristic(const std::string &, Device d) const override { return gemm_heuristic(w_, d); }
    KernelVariant kernel_for(const std::string &, Device d, const ScheduleChoice &s) const override {
        return gemm_kernel_for(w_, d, s);
    }
    std::vector<const KernelVariant *> named_variants(Device d) const override { return gemm_candidates(w_, d); }
    std::vector<KernelCost> costs(const KernelVariant &v) const override {
        KernelCost c{v.name, gemm_flops(w_), gemm_bytes(w_)};
        c.tensor_cores = true;
        c.wgmma = v.knob("wgmma") != 0;
        return {c};
    }
    // As the pointwise convolution it serves: M pixels, K input channels, N output channels.
    Problem problem() const override {
        Problem p;
        p.n = 1, p.h = 1, p.w = w_.m, p.c = w_.k, p.k = w_.n, p.r = p.s = 1;
        return p;
    }
    std::unique_ptr<OpData> data(std::mt19937_64 &rng) const override { return std::make_unique<GemmData>(w_, rng); }
    std::string candidate_error(const KernelVariant &v, const LaunchLimits &limits) const override {
        return tensor_core_launch_error(v, w_.m, w_.n, limits);
    }

private:
    GemmWorkload w_;
};

}  // namespace

std::unique_ptr<Op> gemm_op(const std::string &key) { return std::make_unique<GemmOp>(parse_gemm(key)); }

}  // namespace blockfuse
