#include "runtime/conv2d.h"
#include "runtime/conv2d_tc.h"
#include "runtime/check.h"
#include "runtime/cuda_driver.h"
#include "schedules/conv2d_knobs.h"
#include "schedules/heuristics.h"
#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace blockfuse {
namespace {
const char *kind_name(ConvKindTag k) {
    switch (k) {
    case ConvKindTag::general: return "general";
    case ConvKindTag::pointwise: return "pointwise";
    case ConvKindTag::depthwise: return "depthwise";
    }
    return "?";
}
long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }
}  // namespace

LaunchLimits launch_limits(Device device) {
    LaunchLimits l;
    if (device != Device::cuda) return l;
    if (cuda::device().available) {
        l.max_threads = cuda::device().max_threads_per_block;
        // with opt-in: Halide's launches get it through runtime/cuda_driver.cpp's cuLaunchKernel
        l.max_shared = cuda::device().max_shared_per_block_optin;
        if (cuda::device().max_registers_per_block > 0) l.max_registers = cuda::device().max_registers_per_block;
        l.compute_capability = 10 * cuda::device().cc_major + cuda::device().cc_minor;
        return l;
    }
    // No GPU here: the GPU the kernels are for (BLOCKFUSE_GPU "NAME:sm_XY"), by its compute capability.
    const char *gpu = std::getenv("BLOCKFUSE_GPU");
    const std::string g = gpu ? gpu : "";
    const size_t at = g.rfind(":sm_");
    if (at == std::string::npos) return l;
    return launch_limits_of_sm(std::atoi(g.c_str() + at + 4));
}

LaunchLimits launch_limits_of_sm(int sm) {
    // The opt-in shared memory per block of a compute capability (CUDA C Programming Guide, technical specifications).
    LaunchLimits l;
    l.compute_capability = sm;
    l.max_shared = sm == 80 || sm == 87    ? 163 * 1024
                   : sm == 90 || sm == 100 ? 227 * 1024
                   : sm >= 80              ? 99 * 1024
                                           : l.max_shared;
    return l;
}

Conv2dTensors make_conv2d_tensors(const Conv2dWorkload &w) {
    Conv2dTensors t;
    t.input = make_tensor(w.dtype, {w.c, w.w, w.h, w.n});
    t.weights = make_tensor(w.dtype, {w.k, w.c / w.groups, w.s, w.r});
    t.bias = Halide::Runtime::Buffer<float>(w.k);
    t.bias.fill(0.0f);
    t.output = make_tensor(w.dtype, {w.k, w.out_w(), w.out_h(), w.n});
    return t;
}

void randomize(Conv2dTensors &t, const Conv2dWorkload &w, std::mt19937_64 &rng) {
    fill_uniform(t.input, w.dtype, rng, -1.0, 1.0);
    fill_uniform(t.weights, w.dtype, rng, -1.0, 1.0);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    if (w.bias) t.bias.for_each_value([&](float &b) { b = d(rng); });
    t.bias.set_host_dirty();
    poison(t.output, w.dtype);
    widen_weights(t, w.dtype);
    lay_out_tensor_core_weights(t, w);
}

void widen_weights(Conv2dTensors &t, DType dtype) {
    t.weights_f32 = Halide::Runtime::Buffer<float>(shape_of(t.weights));
    const std::vector<double> v = to_doubles(t.weights, dtype);  // dense, in the same element order
    std::copy(v.begin(), v.end(), t.weights_f32.data());
    t.weights_f32.set_host_dirty();
}

bool takes_f32_weights(const KernelVariant &v) { return v.param("weights.type") == "float32"; }

std::vector<const KernelVariant *> conv2d_candidates(const Conv2dWorkload &w, Device device) {
    std::vector<const KernelVariant *> out;
    for (const auto &v : data_variants()) {
        if (v.family != "conv2d" || v.device != device || v.dtype != w.dtype) continue;
        if (v.kind != kind_name(w.kind())) continue;
        // Knobs a variant was specialized on must match the workload.
        int ks = v.knob("kernel_size", 0), st = v.knob("static_stride", 0), dl = v.knob("static_dilation", 0);
        int mult = v.knob("multiplier", 0), vec = v.knob("vec_k");
        if (ks != 0 && (w.r != ks || w.s != ks)) continue;
        if (st != 0 && (w.stride_h != st || w.stride_w != st)) continue;
        if (dl != 0 && (w.dil_h != dl || w.dil_w != dl)) continue;
        if (mult != 0 && w.k != w.c * mult) continue;
        if (v.knob("aligned", 0) && (w.c % vec != 0 || w.k % vec != 0)) continue;
        if (int sc = v.knob("static_channels", 0); sc != 0 && (w.c != sc || w.k != sc)) continue;
        if (int sg = v.knob("static_groups", 0); sg != 0 && w.groups != sg) continue;
        if (int sk = v.knob("static_out_channels", 0); sk != 0 && w.k != sk) continue;
        // Whole channel steps per group (the kernel declares its weights' extent a multiple).
        if (v.knob("stage_channels", 0) && (w.c / w.groups) % v.knob("unroll_channels", 1) != 0) continue;
        // A shared tile of too many channels: the next variant serves (other limits stay errors).
        if (conv2d_launch_shape(v, w).shared_bytes > launch_limits(v.device).max_shared) continue;
        if (!flat_tiles_fit(v.knob("flat_threads"), v.knob("tile_x"), v.knob("tile_y"), w.out_w(), w.out_h())) continue;
        out.push_back(&v);
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const KernelVariant *a, const KernelVariant *b) { return a->data_default > b->data_default; });
    return out;
}

KernelVariant conv2d_kernel_for(const Conv2dWorkload &w, Device device, const ScheduleChoice &s,
                                const Conv2dKernelExtras &extras) {
    // Everything the schedules can use is static: the window, stride, dilation and groups, the
    // depthwise multiplier and channel count, aligned channel vectors where the counts allow.
    std::map<std::string, std::string> p = extras.params;
    p["kind"] = kind_name(w.kind());
    auto set = [&p](const char *k, int v) { p[k] = std::to_string(v); };
    if (w.kind() != ConvKindTag::pointwise && w.r == w.s) set("kernel_size", w.r);
    if (w.stride_h == w.stride_w) set("static_stride", w.stride_h);
    if (w.dil_h == w.dil_w) set("static_dilation", w.dil_h);
    if (w.kind() == ConvKindTag::general) set("static_groups", w.groups);
    // Grouped, CPU: K static, so a vector of one group's output channels reads one input value per step (the
    // demo's 32-group 3x3 on a 2-core EPYC: 0.17 ms, against 0.54 with the per-lane group index gathered). Not on
    // the GPUs: Halide 21's OpenCL C from it mixes int4 and int2 vectors (PoCL refuses it), and on CUDA unmeasured.
    if (device == Device::cpu && w.kind() == ConvKindTag::general && w.groups > 1) set("static_out_channels", w.k);
    if (w.kind() == ConvKindTag::depthwise) {
        set("multiplier", w.k / w.c);
        if (w.k == w.c && w.r == w.s) set("static_channels", w.c);
    }
    const auto kv = s.knobs.find("vec_k");
    const int vec = kv == s.knobs.end() ? Conv2dGpuKnobs{}.vec_k : kv->second;
    const int in_c = extras.input_channels ? extras.input_channels : w.c;
    if (device != Device::cpu && vec > 1 && w.c % vec == 0 && in_c % vec == 0 && w.k % vec == 0) set("aligned", 1);
    std::string shape = fmt::format("{}_k{}x{}s{}", kind_name(w.kind()), w.r, w.s, w.stride_h);
    if (w.groups > 1) shape += fmt::format("g{}", w.groups);
    const std::string name = extras.name.empty() ? fmt::format("conv2d_{}_c{}k{}", shape, w.c, w.k) : extras.name;
    KernelVariant v = make_variant("conv2d", fmt::format("{}_{}_{}", name, dtype_name(w.dtype), device_name(device)),
                                   device, w.dtype, p, s.knobs, s.max_registers, s.why);
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

long long staged_tile_bytes(long long channels, int block_x, int block_y, int stride, int kernel, int dilation) {
    long long wx = 1LL * (block_x - 1) * stride + (kernel - 1) * dilation + 1;
    long long wy = 1LL * (block_y - 1) * stride + (kernel - 1) * dilation + 1;
    return 4LL * channels * wx * wy;
}

bool flat_tiles_fit(int flat_threads, int tile_x, int tile_y, int out_w, int out_h) {
    return flat_threads <= 0 || (out_w >= tile_x && out_h >= tile_y);
}

LaunchShape conv2d_launch_shape(const KernelVariant &v, const Conv2dWorkload &w) {
    LaunchShape s;
    if (v.device == Device::cpu) return s;
    int tk = v.knob("threads_k"), vk = v.knob("vec_k"), tx = v.knob("threads_x");
    int rx = v.knob("tile_x"), ry = v.knob("tile_y");
    const int flat = v.knob("flat_threads");
    s.threads = v.threads_per_block();
    if (v.knob("stage_input", 0) == 2) {
        // Channels of the tile: the block's own (depthwise) or every input channel its output
        // channels read (general; exact for one group, an upper bound for several).
        long long ch = 1LL * tk * vk;
        if (v.kind == "general")
            ch = std::min<long long>(w.c, 1LL * (w.c / w.groups) * (ceil_div(ch, w.k / w.groups) + 1));
        s.shared_bytes = staged_tile_bytes(ch, tx * rx, ry, v.knob("static_stride", 1), v.knob("kernel_size", 1),
                                           v.knob("static_dilation", 1));
    }
    if (flat > 0) {  // a row of (channel vector, x tile) pairs, cut into blocks of `flat` threads
        s.grid[0] = ceil_div(ceil_div(w.k, vk) * ceil_div(w.out_w(), rx), flat);
        s.grid[1] = ceil_div(w.out_h(), ry);
        s.grid[2] = w.n;
        return s;
    }
    s.grid[0] = ceil_div(w.k, 1LL * tk * vk);
    s.grid[1] = ceil_div(w.out_w(), 1LL * tx * rx);
    s.grid[2] = ceil_div(w.out_h(), ry) * w.n;
    return s;
}

std::string launch_limit_violation(const LaunchShape &s, const LaunchLimits &limits) {
    const long long max_grid[3] = {2147483647LL, 65535, 65535};
    if (s.threads > limits.max_threads)
        return fmt::format("{} threads per block exceed the device limit of {}", s.threads, limits.max_threads);
    if (s.shared_bytes > limits.max_shared)
        return fmt::format("{} bytes of shared memory exceed the device limit of {}", s.shared_bytes,
                           limits.max_shared);
    for (int d = 0; d < 3; ++d)
        if (s.grid[d] > max_grid[d])
            return fmt::format("grid dimension {} = {} exceeds the limit of {}", "xyz"[d], s.grid[d], max_grid[d]);
    return "";
}

std::string conv2d_launch_error(const KernelVariant &v, const Conv2dWorkload &w, const LaunchLimits &limits) {
    if (v.device == Device::cpu) return "";
    return launch_limit_violation(conv2d_launch_shape(v, w), limits);
}

void check_launch(const KernelVariant &v, const Conv2dWorkload &w) {
    if (const std::string why = conv2d_launch_error(v, w, launch_limits(v.device)); !why.empty())
        throw KernelError("launch rejected before running: kernel " + v.name + " on " + to_key(w) + ": " + why);
}

void run_conv2d(const KernelVariant &v, const Conv2dWorkload &w, Conv2dTensors &t) {
    if (v.family == "conv2d_tc") return run_conv2d_tc(v, w, t);
    check_launch(v, w);
    apply_register_cap(v);
    const LoadedKernel &k = v.load();
    halide_buffer_t *weights = t.weights.raw_buffer();
    if (takes_f32_weights(v) && w.dtype != DType::f32) {
        // (a caller's device memory has no host pointer: runtime/c_api.cpp)
        if ((!t.weights_f32.data() && !t.weights_f32.raw_buffer()->device) ||
            t.weights_f32.dimensions() != t.weights.dimensions() ||
            t.weights_f32.number_of_elements() != t.weights.number_of_elements())
            throw KernelError("kernel " + v.name +
                              " takes f32 weights: widen_weights() was not called after the "
                              "weights of " +
                              to_key(w) + " were written");
        weights = t.weights_f32.raw_buffer();
    }
    // ABI order of generators/conv2d_generator.cpp: input, weights, bias, stride x/y, dilation x/y,
    // pad left/top, groups, activation, output (scalars by pointer, as the _argv entry takes them).
    int scalars[] = {w.stride_w, w.stride_h, w.dil_w, w.dil_h, w.pad_l, w.pad_t, w.groups, int(w.act)};
    void *args[] = {t.input.raw_buffer(), weights,     t.bias.raw_buffer(), &scalars[0],
                    &scalars[1],          &scalars[2], &scalars[3],         &scalars[4],
                    &scalars[5],          &scalars[6], &scalars[7],         t.output.raw_buffer()};
    clear_halide_error();
    const int rc = k.call(args);
    if (rc != 0) throw KernelError("kernel " + v.name + " failed on " + to_key(w) + ": " + last_halide_error(rc));
}

double conv2d_flops(const Conv2dWorkload &w) {
    return 2.0 * w.n * w.k * double(w.out_h()) * w.out_w() * (w.c / w.groups) * w.r * w.s;
}

double conv2d_bytes(const Conv2dWorkload &w, const KernelVariant *v) {
    double e = dtype_bytes(w.dtype), ew = v && takes_f32_weights(*v) ? 4.0 : e;
    double in = double(w.n) * w.c * w.h * w.w, wt = double(w.k) * (w.c / w.groups) * w.r * w.s;
    double out = double(w.n) * w.k * w.out_h() * w.out_w();
    return e * (in + out) + ew * wt + (w.bias ? 4.0 * w.k : 0.0);
}

}  // namespace blockfuse

namespace blockfuse {
namespace {

class Conv2dData : public TensorOpData<Conv2dData, Conv2dWorkload, Conv2dTensors> {
public:
    Conv2dData(const Conv2dWorkload &w, std::mt19937_64 &rng)
        : TensorOpData(w, rng, make_conv2d_tensors), rng_(rng()) {}
    void run(const KernelVariant &v) override { run_conv2d(v, w_, t_); }
    Comparison check() override { return check_conv2d(w_, t_, full() ? size_t(1) << 40 : kSampledPoints, rng_); }
    std::string check_note() const override {
        return full() ? "" : "at " + std::to_string(kSampledPoints) + " sampled outputs, every output scanned for NaN";
    }

private:
    bool full() const { return conv2d_flops(w_) / 2 <= kFullCheckMacs; }
    std::mt19937_64 rng_;  // the sampled check's points
};

class Conv2dOp : public Op {
public:
    explicit Conv2dOp(const Conv2dWorkload &w) : w_(w) {}
    std::string key() const override { return to_key(w_); }
    std::string generator() const override { return "conv2d"; }
    DType dtype() const override { return w_.dtype; }
    // direct: the CUDA-core kernels; tensor_cores: the implicit GEMM on mma.sync, for dense f16/bf16 ones.
    std::vector<std::string> strategies() const override {
        if (tensor_cores_apply(w_)) return {"direct", kTensorCores};
        return {"direct"};
    }
    std::string family(const std::string &strategy) const override {
        return strategy == kTensorCores ? "conv2d_tc" : "conv2d";
    }
    ScheduleChoice heuristic(const std::string &strategy, Device d) const override {
        return strategy == kTensorCores ? conv2d_tc_heuristic(w_, d) : conv2d_heuristic(w_, d);
    }
    KernelVariant kernel_for(const std::string &strategy, Device d, const ScheduleChoice &s) const override {
        return strategy == kTensorCores ? conv2d_tc_kernel_for(w_, d, s) : conv2d_kernel_for(w_, d, s);
    }
    std::vector<const KernelVariant *> named_variants(Device d) const override { return conv2d_candidates(w_, d); }
    std::vector<KernelCost> costs(const KernelVariant &v) const override {
        KernelCost c{v.name, conv2d_flops(w_), conv2d_bytes(w_, &v)};
        c.tensor_cores = v.family == "conv2d_tc";
        c.wgmma = c.tensor_cores && v.knob("wgmma") != 0;
        return {c};
    }
    Problem problem() const override {
        Problem p;
        p.n = w_.n, p.h = w_.h, p.w = w_.w, p.c = w_.c, p.k = w_.k, p.r = w_.r, p.s = w_.s;
        p.stride_h = w_.stride_h, p.stride_w = w_.stride_w, p.dil_h = w_.dil_h, p.dil_w = w_.dil_w,
        p.groups = w_.groups;
        return p;
    }
    std::unique_ptr<OpData> data(std::mt19937_64 &rng) const override { return std::make_unique<Conv2dData>(w_, rng); }
    std::vector<std::string> tunable_knobs(const std::string &strategy, Device d) const override {
        std::vector<std::string> out = Op::tunable_knobs(strategy, d);
        if (d == Device::cpu)
            out.erase(std::remove_if(out.begin(), out.end(),
                                     [&](const std::string &n) { return !conv2d_cpu_knob_applies(n, kind()); }),
                      out.end());
        return out;
    }
    std::string candidate_error(const KernelVariant &v, const LaunchLimits &limits) const override {
        if (v.family == "conv2d_tc") return conv2d_tc_launch_error(v, w_, limits);
        if (v.device == Device::cpu) return conv2d_cpu_knobs_error(conv2d_cpu_knobs_from(v.knobs));
        const ConvKind kind = this->kind();
        const bool static_window = (kind == ConvKind::pointwise || v.knob("kernel_size") > 0) &&
                                   v.knob("static_stride") > 0 && v.knob("static_dilation") > 0;
        if (std::string why = conv2d_gpu_knobs_error(conv2d_gpu_knobs_from(v.knobs), kind, static_window,
                                                     w_.c / w_.groups, w_.k, w_.groups);
            !why.empty())
            return why;
        // The conv2d generator's channel counts are not constants, so Halide bounds a grouped layer's input channels
        // no tighter than the whole input.
        if (kind == ConvKind::general && w_.groups > 1) {
            // A window in registers spans its group's input channels, whose extent Halide cannot bound ("unable to
            // infer constant upper bound on extent of realization conv2d_padded_global_wrapper"; a block's layer,
            // with static channels, builds it).
            if (v.knob("stage_input") == 1)
                return "stage_input=1 (the window in registers) does not build for a grouped conv2d (its group's "
                       "channel range has no constant bound): 0 or 2";
            // A tile in shared memory is bounded from the block's first input channel, as wide as the whole input:
            // every block but the first reads past the input's channels and Halide's bounds check refuses the launch
            // (c=k=128, groups of 8, 64 channels a block: "accessed at 191, which is beyond the max (127)", H200);
            // the knobs' check refuses only partial tiles, all a block's layer needs.
            const int block_k = conv2d_gpu_knobs_from(v.knobs).block_channels(w_.k);
            if (v.knob("stage_input") == 2 && block_k < w_.k)
                return "stage_input=2 (the input tile in shared memory) of a grouped conv2d needs one block of output "
                       "channels (threads_k x vec_k >= K = " +
                       std::to_string(w_.k) +
                       "; its tile's channel range has no tighter bound): " + std::to_string(block_k) + " here";
        }
        if (!flat_tiles_fit(v.knob("flat_threads"), v.knob("tile_x"), v.knob("tile_y"), w_.out_w(), w_.out_h()))
            return "the flat mapping's tile_x x tile_y exceeds the output";
        return conv2d_launch_error(v, w_, limits);
    }

    std::map<std::string, int> shape_estimates() const override {
        return {{"est_n", w_.n},
                {"est_c", w_.c},
                {"est_h", w_.h},
                {"est_w", w_.w},
                {"est_k", w_.k},
                {"est_r", w_.r},
                {"est_s", w_.s},
                {"est_stride_x", w_.stride_w},
                {"est_stride_y", w_.stride_h},
                {"est_dilation_x", w_.dil_w},
                {"est_dilation_y", w_.dil_h},
                {"est_pad_left", w_.pad_l},
                {"est_pad_top", w_.pad_t},
                {"est_groups", w_.groups}};
    }

private:
    ConvKind kind() const {
        return w_.kind() == ConvKindTag::depthwise   ? ConvKind::depthwise
               : w_.kind() == ConvKindTag::pointwise ? ConvKind::pointwise
                                                     : ConvKind::general;
    }
    Conv2dWorkload w_;
};

}  // namespace

std::unique_ptr<Op> conv2d_op(const std::string &key) { return std::make_unique<Conv2dOp>(parse_conv2d(key)); }

}  // namespace blockfuse
