#include "runtime/block.h"
#include "runtime/conv2d_tc.h"
#include "runtime/mma_ptx.h"
#include "schedules/block_knobs.h"
#include "schedules/heuristics.h"
#include <fmt/format.h>
#include <algorithm>
#include <set>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

namespace blockfuse {
namespace {
[[noreturn]] void fail(const std::string &key, const std::string &msg) {
    throw WorkloadError("invalid workload '" + key + "': " + msg);
}
}  // namespace

bool is_block_key(const std::string &key) {
    BlockFamily f;
    return block_family_from_name(key.substr(0, key.find(':')), &f);
}

BlockSpec BlockWorkload::spec() const { return make_block_spec(family, c, e, k, stride, int(act), se); }

std::vector<Conv2dWorkload> BlockWorkload::layers() const {
    std::vector<Conv2dWorkload> out;
    int ch = h, cw = w;
    for (const LayerSpec &L : spec().layers) {
        Conv2dWorkload cw2;
        cw2.n = n, cw2.c = L.in_ch, cw2.h = ch, cw2.w = cw, cw2.k = L.out_ch, cw2.r = cw2.s = L.ks;
        cw2.stride_h = cw2.stride_w = L.stride;
        cw2.pad_t = cw2.pad_b = cw2.pad_l = cw2.pad_r = L.ks / 2;
        cw2.groups = L.groups;
        cw2.bias = true;
        cw2.act = Activation(L.act);
        cw2.dtype = dtype;
        ch = cw2.out_h();
        cw = cw2.out_w();
        out.push_back(cw2);
    }
    return out;
}
int BlockWorkload::out_h() const { return layers().back().out_h(); }
int BlockWorkload::out_w() const { return layers().back().out_w(); }

BlockWorkload parse_block(const std::string &key) {
    KeyFields kf = split_key(key);
    BlockWorkload w;
    if (!block_family_from_name(kf.family, &w.family))
        fail(key, "family '" + kf.family + "' is not one of mbconv, fused_mbconv, ffn, convfirst, convnext");
    std::map<std::string, std::string> f(kf.fields.begin(), kf.fields.end());
    auto take = [&](const char *name, int *dst, bool required) {
        auto it = f.find(name);
        if (it == f.end()) {
            if (required) fail(key, std::string("missing field '") + name + "'");
            return;
        }
        *dst = parse_key_int(key, name, it->second);
        f.erase(it);
    };
    for (const char *r : {"n", "c", "h", "w", "e"}) {
        std::string s = r;
        take(r, s == "n" ? &w.n : s == "c" ? &w.c : s == "h" ? &w.h : s == "w" ? &w.w : &w.e, true);
    }
    w.k = w.family == BlockFamily::ffn ? 1 : w.family == BlockFamily::convnext ? 7 : 3;
    take("k", &w.k, false);
    take("stride", &w.stride, false);
    take("blocks", &w.blocks, false);
    w.act = w.family == BlockFamily::mbconv         ? Activation::relu6
            : w.family == BlockFamily::fused_mbconv ? Activation::silu
            : w.family == BlockFamily::convnext     ? Activation::gelu
                                                    : Activation::relu;
    if (auto it = f.find("act"); it != f.end()) {
        if (!parse_activation(it->second, &w.act) || w.act == Activation::none)
            fail(key, "field 'act' = '" + it->second + "' is not one of relu, relu6, silu, gelu, gelu_erf, sigmoid");
        f.erase(it);
    }
    if (auto it = f.find("dtype"); it != f.end()) {
        if (!parse_dtype(it->second, &w.dtype))
            fail(key, "field 'dtype' = '" + it->second + "' is not supported (f32, f16, bf16)");
        f.erase(it);
    }
    if (auto it = f.find("se"); it != f.end()) {
        const int se = parse_key_int(key, "se", it->second);
        if (se != 0 && se != 1) fail(key, "field 'se' = " + it->second + " must be 0 or 1");
        w.se = se == 1;
        f.erase(it);
        if (w.se && w.family != BlockFamily::mbconv)
            fail(key, "field 'se' = 1: Squeeze-Excitation is part of mbconv only");
    }
    if (!f.empty()) fail(key, "unknown field '" + f.begin()->first + "'");
    for (auto [name, v] : {std::pair{"n", w.n}, {"c", w.c}, {"h", w.h}, {"w", w.w}, {"e", w.e}, {"k", w.k}})
        if (v <= 0) fail(key, std::string("field '") + name + "' = " + std::to_string(v) + " must be positive");
    if (w.k % 2 == 0) fail(key, "field 'k' = " + std::to_string(w.k) + " must be odd (same padding)");
    if (w.stride != 1 && w.stride != 2) fail(key, "field 'stride' = " + std::to_string(w.stride) + " must be 1 or 2");
    if (w.blocks < 1 || w.blocks > 4) fail(key, "field 'blocks' = " + std::to_string(w.blocks) + " must be 1 to 4");
    if (w.blocks > 1 && w.se)
        fail(key, "a stage (blocks = " + std::to_string(w.blocks) + ") of blocks with se=1 is not supported");
    if (w.blocks > 1 && w.stride != 1)
        fail(key,
             "a stage (blocks = " + std::to_string(w.blocks) + ") needs stride 1: each block's output feeds the next");
    if (w.family == BlockFamily::ffn && (w.k != 1 || w.stride != 1))
        fail(key, "ffn has no spatial kernel: k and stride must be 1");
    if (w.family == BlockFamily::convfirst && w.c % 8)
        fail(key, "field 'c' = " + std::to_string(w.c) + " must be a multiple of the group width 8 for convfirst");
    if (w.family == BlockFamily::convfirst && w.act != Activation::relu) fail(key, "convfirst uses ReLU (act=relu)");
    for (const auto &l : w.layers()) validate(l, key);
    return w;
}

std::string to_key(const BlockWorkload &w) {
    std::ostringstream o;
    o << block_family_name(w.family) << ":n=" << w.n << ",c=" << w.c << ",h=" << w.h << ",w=" << w.w << ",e=" << w.e;
    if (w.family != BlockFamily::ffn) o << ",k=" << w.k << ",stride=" << w.stride;
    if (w.blocks > 1) o << ",blocks=" << w.blocks;
    if (w.se) o << ",se=1";
    o << ",act=" << activation_name(w.act) << ",dtype=" << dtype_name(w.dtype);
    return o.str();
}

BlockTensors make_block_tensors(const BlockWorkload &w) {
    BlockTensors t;
    auto layers = w.layers();
    t.input = make_tensor(w.dtype, {w.c, w.w, w.h, w.n});
    for (int b = 0; b < w.blocks; ++b)
        for (const auto &l : layers) {
            t.weights.push_back(make_tensor(w.dtype, {l.k, l.c / l.groups, l.s, l.r}));
            t.biases.emplace_back(l.k);
        }
    if (const BlockSpec s = w.spec(); s.has_se()) {  // reduce (se_ch x E) and expand (E x se_ch), as 1x1 convs
        const int E = s.layers[s.se_after].out_ch;
        t.weights.push_back(make_tensor(w.dtype, {s.se_ch, E, 1, 1}));
        t.biases.emplace_back(s.se_ch);
        t.weights.push_back(make_tensor(w.dtype, {E, s.se_ch, 1, 1}));
        t.biases.emplace_back(E);
    }
    const auto &last = layers.back();
    t.output = make_tensor(w.dtype, {last.k, last.out_w(), last.out_h(), w.n});
    return t;
}

void randomize(BlockTensors &t, const BlockWorkload &w, std::mt19937_64 &rng) {
    auto layers = w.layers();
    fill_uniform(t.input, w.dtype, rng, -1.0, 1.0);
    std::uniform_real_distribution<float> d(-0.5f, 0.5f);
    for (size_t j = 0; j < t.weights.size(); ++j) {
        const double fan_in =
            double(t.weights[j].dim(1).extent()) * t.weights[j].dim(2).extent() * t.weights[j].dim(3).extent();
        double a = 1.0 / std::sqrt(fan_in);
        fill_uniform(t.weights[j], w.dtype, rng, -a * 1.7, a * 1.7);
        t.biases[j].for_each_value([&](float &b) { b = d(rng); });
        t.biases[j].set_host_dirty();
    }
    const BlockSpec spec = w.spec();
    t.weights_tc.assign(t.weights.size(), {});
    if (w.dtype != DType::f32)  // mma.sync's storage types; grouped layers too, for knob tc_grouped
        for (size_t j = 0; j < size_t(w.blocks) * layers.size(); ++j)
            if (tensor_core_capable_layer(spec.layers[j % layers.size()]))
                t.weights_tc[j] = tensor_core_weights(t.weights[j], layers[j % layers.size()]);
    poison(t.output, w.dtype);
}

bool fused_tc_serves(const BlockWorkload &w) {
    return w.dtype != DType::f32 && fused_tc_applies(w.spec());  // mma.sync takes f16 and bf16
}

std::vector<const KernelVariant *> block_candidates(const BlockWorkload &w, Device device) {
    std::vector<const KernelVariant *> out;
    const auto layers = w.layers();
    for (const auto &v : data_variants()) {
        if (v.family != "block" || v.device != device || v.dtype != w.dtype) continue;
        if (v.param("family") != block_family_name(w.family)) continue;
        if (v.knob("channels", -1) != w.c || v.knob("expansion", -1) != w.e) continue;
        if (v.knob("kernel_size", w.family == BlockFamily::ffn ? 1 : 3) != w.k && w.family != BlockFamily::ffn)
            continue;
        if (v.knob("stride", 1) != w.stride || v.knob("act", -1) != int(w.act)) continue;
        if (v.knob("blocks", 1) != w.blocks || (v.knob("se", 0) == 1) != w.se) continue;
        // A flat layer mapping must fit the output of every layer it serves.
        if (!std::all_of(layers.begin(), layers.end(), [&v](const Conv2dWorkload &l) {
                const std::string p = knob_prefix(layer_mapping(l.r, l.groups));
                return flat_tiles_fit(v.knob(p + "flat_threads"), v.knob(p + "tile_x"), v.knob(p + "tile_y"), l.out_w(),
                                      l.out_h());
            }))
            continue;
        out.push_back(&v);
    }
    // The variant the data marks the default of its configuration comes first; the others keep data order.
    std::stable_sort(out.begin(), out.end(),
                     [](const KernelVariant *a, const KernelVariant *b) { return a->data_default > b->data_default; });
    return out;
}

KernelVariant block_kernel_for(const BlockWorkload &w, const std::string &strategy, Device device,
                               const ScheduleChoice &s) {
    // The CUDA-core layers compute in the storage type's native half (the tensor-core ones only move its bits):
    // Halide's OpenCL target needs CLHalf for that, which PoCL, the OpenCL device tested, does not offer.
    if (device == Device::opencl && w.dtype != DType::f32)
        throw WorkloadError("block " + to_key(w) + ": " + dtype_name(w.dtype) +
                            " blocks do not run on OpenCL (their kernels need the half type, CLHalf); use f32 there, "
                            "or CUDA or the CPU");
    const std::map<std::string, std::string> p{
        {"family", block_family_name(w.family)}, {"strategy", strategy},
        {"channels", std::to_string(w.c)},       {"expansion", std::to_string(w.e)},
        {"kernel_size", std::to_string(w.k)},    {"stride", std::to_string(w.stride)},
        {"act", std::to_string(int(w.act))},     {"se", std::to_string(int(w.se))},
        {"blocks", std::to_string(w.blocks)}};
    std::map<std::string, std::string> params = p;
    const bool static_image = tensor_core_strategy(strategy);  // the GEMMs divide by it
    if (static_image) params["height"] = std::to_string(w.h), params["width"] = std::to_string(w.w);
    std::string shape = fmt::format("{}_c{}e{}", block_family_name(w.family), w.c, w.e);
    if (w.family != BlockFamily::ffn) shape += fmt::format("k{}s{}", w.k, w.stride);
    if (w.se) shape += "se";
    if (w.blocks > 1) shape += fmt::format("x{}", w.blocks);
    // Knobs the kernel does not read take their defaults: choices that differ only there are one kernel (one name).
    std::map<std::string, int> knobs = s.knobs;
    const BlockSpec spec = w.spec();
    const BlockKnobs kn = block_knobs_from(knobs);
    for (auto it = knobs.begin(); it != knobs.end();)
        it = block_layer_knob_read(spec, strategy, kn, it->first) ? std::next(it) : knobs.erase(it);
    KernelVariant v = make_variant("block",
                                   fmt::format("{}_{}_{}_{}_{}", shape, activation_name(w.act), strategy,
                                               dtype_name(w.dtype), device_name(device)),
                                   device, w.dtype, params, knobs, s.max_registers, s.why);
    if (static_image) v.name += fmt::format("_{}x{}", w.h, w.w);
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

namespace {
// layer_by_layer_tc: why dense layer i's implicit GEMM cannot launch ("" if it can), from its tc<i>_ knobs.
std::string tensor_core_layer_launch_error(const KernelVariant &v, const BlockWorkload &w, size_t i,
                                           const LaunchLimits &limits) {
    KernelVariant g = v;  // the layer's tiling under the GEMM's own knob names, at the module's register cap
    g.family = "gemm";
    g.max_registers = v.jit_register_cap();
    g.knobs.clear();
    const std::string prefix = tensor_core_prefix(i);
    for (const auto &[name, value] : v.knobs)
        if (name.rfind(prefix, 0) == 0) g.knobs[name.substr(prefix.size())] = value;
    const std::string why = conv2d_tc_launch_error(g, w.layers()[i], limits);  // a grouped layer's windows too
    return why.empty() ? "" : "layer " + std::to_string(i) + " (" + prefix + "): " + why;
}
}  // namespace

void check_block_launch(const KernelVariant &v, const BlockWorkload &w) {
    check_block_launch(v, w, launch_limits(v.device));
}

void check_block_launch(const KernelVariant &v, const BlockWorkload &w, const LaunchLimits &limits) {
    // (made only on failure: this runs before every launch)
    auto what = [&] {
        return "launch rejected before running: block " + to_key(w) + ", strategy " + v.param("strategy") +
               " (kernel " + v.name + "): ";
    };
    const std::string strategy = v.param("strategy");
    const BlockSpec spec = w.spec();
    const BlockKnobs kn = block_knobs_from(v.knobs);
    LaunchShape shape;  // one block (the grid is the workload's, within every limit)
    shape.threads = v.threads_per_block();
    auto check_shape = [&] {
        if (const std::string why = launch_limit_violation(shape, limits); !why.empty())
            throw KernelError(what() + why);
    };
    check_shape();  // threads first: past the limit, the tiling's other errors are its consequences
    if (strategy == kFusedTc) {
        if (const std::string why = fused_tc_error(spec, kn); !why.empty()) throw KernelError(what() + why);
        shape.shared_bytes = fused_tc_shared_bytes(spec, kn);
    } else if (tensor_core_strategy(strategy)) {
        // (layer by layer: each tensor-core layer's own launch, checked below)
    } else if (strategy != "layer_by_layer") {
        shape.shared_bytes = fused_block_shared_bytes(spec, v.knob("tile_x"), v.knob("tile_y"), v.knob("chunk"),
                                                      dtype_bytes(w.dtype), strategy == "depth_first" ? w.blocks : 1,
                                                      v.knob("stage_weights"), v.knob("stage_padded") != 0);
    } else if (v.knob("full_stage_input") == 2) {  // the dense k x k layers' input tile + halo
        for (const Conv2dWorkload &l : w.layers())
            if (layer_mapping(l.r, l.groups) == LayerMapping::full)
                shape.shared_bytes = std::max(shape.shared_bytes,
                                              staged_tile_bytes(l.c, v.knob("full_threads_x") * v.knob("full_tile_x"),
                                                                v.knob("full_tile_y"), l.stride_w, l.r, 1));
    }
    check_shape();  // and the shared memory
    if (!tensor_core_strategy(strategy)) return;
    // The module's kernels share one JIT register cap (by default raised for mma.sync, runtime/mma_ptx.h): the
    // largest thread block at that cap must fit the register file.
    const long long regs = v.jit_register_cap(), threads = shape.threads;
    if (v.device == Device::cuda && regs * threads > limits.max_registers)
        throw KernelError(what() + std::to_string(threads) + " threads (its largest kernel) x " + std::to_string(regs) +
                          " registers (the module's cap" +
                          (regs != register_cap(v)
                               ? ", the rule's raised to " + std::to_string(mma_ptx::kMinRegisters) + " for mma.sync"
                               : "") +
                          ") exceed the " + std::to_string(limits.max_registers) + " registers per block");
    for (size_t i = 0; strategy == kLayerByLayerTc && i < spec.layers.size(); ++i)
        if (tensor_core_layer(spec.layers[i], kn))
            if (const std::string why = tensor_core_layer_launch_error(v, w, i, limits); !why.empty())
                throw KernelError(what() + why);
}

void run_block(const KernelVariant &v, const BlockWorkload &w, BlockTensors &t) {
    if (v.device != Device::cpu) check_block_launch(v, w);
    apply_register_cap(v);
    // ABI order of generators/block_generator.cpp: input, (weights, bias) per layer of each block, output.
    std::vector<void *> args{t.input.raw_buffer()};
    for (size_t j = 0; j < t.weights.size(); ++j) {
        args.push_back(t.weights[j].raw_buffer());
        args.push_back(t.biases[j].raw_buffer());
    }
    args.push_back(t.output.raw_buffer());
    if (tensor_core_strategy(v.param("strategy"))) {
        // the dense layers read their tensor-core layout
        const BlockSpec spec = w.spec();
        const BlockKnobs kn = block_knobs_from(v.knobs);
        const size_t L = spec.layers.size();
        for (size_t j = 0; j < size_t(w.blocks) * L; ++j) {
            if (!tensor_core_layer(spec.layers[j % L], kn)) continue;
            if (j >= t.weights_tc.size() || !has_storage(t.weights_tc[j].raw_buffer()))
                throw KernelError("kernel " + v.name + " reads the tensor-core weight layout of layer " +
                                  std::to_string(j % L) + ": randomize() did not lay it out for " + to_key(w));
            args[1 + 2 * j] = t.weights_tc[j].raw_buffer();
        }
        call_tensor_core_kernel(v, args.data(), to_key(w));
        return;
    }
    const LoadedKernel &k = v.load();
    clear_halide_error();
    const int rc = k.call(args.data());
    if (rc != 0) throw KernelError("kernel " + v.name + " failed on " + to_key(w) + ": " + last_halide_error(rc));
}

namespace {

void round_to_storage(std::vector<double> &v, DType d) {
    std::vector<uint16_t> tmp(2);
    for (double &x : v) {
        store_from_double(tmp.data(), d, 0, x);
        x = load_as_double(tmp.data(), d, 0);
    }
}

// LayerNorm over the innermost (channel) dimension, no affine.
void layer_norm_reference(std::vector<double> &v, int channels, double eps) {
    for (size_t p = 0; p < v.size(); p += channels) {
        double m = 0, q = 0;
        for (int c = 0; c < channels; ++c) m += v[p + c];
        m /= channels;
        for (int c = 0; c < channels; ++c) q += (v[p + c] - m) * (v[p + c] - m);
        double r = 1 / std::sqrt(q / channels + eps);
        for (int c = 0; c < channels; ++c) v[p + c] = (v[p + c] - m) * r;
    }
}

// Squeeze-Excitation on h (n, pixels, E channels innermost), in place: the gate per (n, e) from the
// spatial mean, then h * gate rounded to storage (the kernels store the gated layer).
void squeeze_excitation_reference(std::vector<double> &h, const BlockWorkload &w, int pixels, BlockTensors &t,
                                  size_t first_weight) {
    const BlockSpec s = w.spec();
    const int E = s.layers[s.se_after].out_ch, R = s.se_ch;
    std::vector<double> wr = to_doubles(t.weights[first_weight], w.dtype),
                        we = to_doubles(t.weights[first_weight + 1], w.dtype);
    t.biases[first_weight].copy_to_host();
    t.biases[first_weight + 1].copy_to_host();
    for (int n = 0; n < w.n; ++n) {
        double *hn = h.data() + size_t(n) * pixels * E;
        std::vector<double> mean(E, 0.0), z(R), gate(E);
        for (int p = 0; p < pixels; ++p)
            for (int e = 0; e < E; ++e) mean[e] += hn[size_t(p) * E + e];
        for (double &m : mean) m /= pixels;
        for (int j = 0; j < R; ++j) {  // weights (k, cg, 1, 1): k innermost
            double a = t.biases[first_weight](j);
            for (int e = 0; e < E; ++e) a += wr[size_t(e) * R + j] * mean[e];
            z[j] = activation_ref(a, Activation(s.se_act));
        }
        for (int e = 0; e < E; ++e) {
            double a = t.biases[first_weight + 1](e);
            for (int j = 0; j < R; ++j) a += we[size_t(j) * E + e] * z[j];
            gate[e] = 1.0 / (1.0 + std::exp(-a));
        }
        for (int p = 0; p < pixels; ++p)
            for (int e = 0; e < E; ++e) hn[size_t(p) * E + e] *= gate[e];
    }
    round_to_storage(h, w.dtype);
}
}  // namespace

Comparison check_block(const BlockWorkload &w, BlockTensors &t) {
    return compare_to_reference(w, t, block_reference(w, t));
}

BlockReference block_reference(const BlockWorkload &w, BlockTensors &t) {
    auto layers = w.layers();
    const size_t L = layers.size();
    std::vector<double> x = to_doubles(t.input, w.dtype), y, scale;
    // err: the bound on the error the kernel's value of x may carry (BlockReference::carried says how it grows).
    const double u_store = dtype_unit_roundoff(w.dtype);
    std::vector<double> err(x.size(), 0.0), carried, unused;
    for (int blk = 0; blk < w.blocks; ++blk) {
        if (blk > 0) {  // the previous block's output, stored
            round_to_storage(x, w.dtype);
            for (size_t e = 0; e < x.size(); ++e) err[e] += u_store * std::fabs(x[e]);
        }
        const std::vector<double> input = x, input_err = err;
        for (size_t i = 0; i < L; ++i) {
            const size_t j = blk * L + i;
            std::vector<double> wt = to_doubles(t.weights[j], w.dtype), b(layers[i].k);
            t.biases[j].copy_to_host();
            for (int k = 0; k < layers[i].k; ++k) b[k] = t.biases[j](k);
            conv2d_reference(layers[i], x, wt, b, &y, &scale);
            // The input's error through this layer: the same convolution of it with |weights|, no bias or activation.
            Conv2dWorkload linear = layers[i];
            linear.act = Activation::none;
            for (double &v : wt) v = std::fabs(v);
            conv2d_reference(linear, err, wt, std::vector<double>(layers[i].k, 0.0), &carried, &unused);
            for (double &v : carried) v *= kActivationLipschitz;
            if (i + 1 < L) {  // a hidden layer: its own accumulation and its rounding to storage join the error
                const double gamma = accumulation_bound(layers[i].reduction_length());
                for (size_t e = 0; e < carried.size(); ++e)
                    carried[e] += gamma * scale[e] + 2 * u_store * std::fabs(y[e]);
            }
            err = carried;
            if (i + 1 < L) {  // hidden layers are stored in the storage type
                round_to_storage(y, w.dtype);
                if (w.spec().layers[i].norm_after) {
                    layer_norm_reference(y, layers[i].k, kLayerNormEps);
                    round_to_storage(y, w.dtype);
                }
                if (w.spec().se_after == int(i))
                    squeeze_excitation_reference(y, w, layers[i].out_h() * layers[i].out_w(), t, w.blocks * L);
            }
            x = y;
        }
        if (w.spec().residual)
            for (size_t i = 0; i < y.size(); ++i) {
                y[i] += input[i];
                scale[i] += std::fabs(input[i]);
                err[i] += input_err[i];
            }
        x = y;
    }
    return {std::move(y), std::move(scale), std::move(err)};
}

Comparison compare_to_reference(const BlockWorkload &w, BlockTensors &t, const BlockReference &ref) {
    auto layers = w.layers();
    const size_t L = layers.size();
    const auto &last = layers.back();
    // Hidden values rounded to storage may differ by an ulp between kernel and reference:
    // 4 storage ulps of the last layer's scale per hidden layer cover it. In a stage, an earlier
    // block's rounding differences pass through the later blocks: counted as more hidden layers;
    // Squeeze-Excitation's gated layer is one more stored rounding.
    double extra = 4.0 * 2 * dtype_unit_roundoff(w.dtype) * double(w.blocks * L - 1 + (w.se ? 1 : 0));
    return compare(to_doubles(t.output, w.dtype), ref.out, ref.scale, last.reduction_length(), w.dtype, extra,
                   ref.carried.empty() ? nullptr : &ref.carried);
}

namespace {
// Squeeze-Excitation's two small matrix-vector products per image: reduce (E -> R, from the pooled
// sums) and gate (R -> E), each with its weights and bias, f32 vectors in and out.
KernelCost se_matvec_cost(const BlockWorkload &w, const std::string &name, double in, double out) {
    const double e = dtype_bytes(w.dtype);
    return {name, 2.0 * w.n * in * out, e * in * out + 4.0 * out + 4.0 * w.n * (in + out)};
}
}  // namespace

// The kernels are listed as the schedules launch them (block_schedule.cpp), so that each row
// meets one kernel of an Nsight Compute run (bench/ncu_compare.py).
std::vector<KernelCost> block_costs(const BlockWorkload &w, const std::string &strategy, int tile_x, int tile_y,
                                    bool tc_grouped, const std::vector<bool> &wgmma_layers) {
    auto layers = w.layers();
    std::vector<KernelCost> out;
    const double e = dtype_bytes(w.dtype);
    const BlockSpec spec = w.spec();
    const double block_io = e * double(w.n) * w.c * w.h * w.w;  // a block's input (and, in a stage, output)
    auto block_name = [&](int blk) { return w.blocks > 1 ? "b" + std::to_string(blk) + "_" : std::string(); };
    if (strategy == "layer_by_layer" || strategy == kLayerByLayerTc) {
        for (int blk = 0; blk < w.blocks; ++blk) {
            double prev_out = blk > 0 ? block_io : 0;  // the tensor the previous kernel wrote (0: the run's input)
            for (size_t i = 0; i < layers.size(); ++i) {
                const std::string pre = block_name(blk), li = std::to_string(i);
                const double in = e * double(w.n) * layers[i].c * layers[i].h * layers[i].w;
                KernelCost c{pre + "layer" + li, conv2d_flops(layers[i]), conv2d_bytes(layers[i])};
                BlockKnobs kn;
                kn.tc_grouped = tc_grouped;
                c.tensor_cores = strategy == kLayerByLayerTc && tensor_core_layer(spec.layers[i], kn);
                c.wgmma = c.tensor_cores && i < wgmma_layers.size() && wgmma_layers[i];
                if (prev_out > 0) c.rereads.push_back(in);
                if (i + 1 == layers.size() && spec.residual) {
                    c.bytes += block_io;
                    c.rereads.push_back(block_io);  // the block input, read by its first layer
                }
                const double P = double(w.n) * layers[i].out_h() * layers[i].out_w(), K = layers[i].k;
                prev_out = e * K * P;
                if (i > 0 && spec.se_after == int(i) - 1) c.rereads.push_back(4.0 * w.n * layers[i - 1].k);  // the gate
                out.push_back(c);
                if (spec.layers[i].norm_after) {
                    // LayerNorm as its own three kernels (layer_norm_own_kernels): the mean and the
                    // reciprocal deviation per pixel (f32), each reading the layer's output, then the
                    // normalized layer.
                    out.push_back({pre + "norm" + li + "_mean", 0, e * K * P + 4 * P, {prev_out}});
                    out.push_back({pre + "norm" + li + "_rstd", 0, e * K * P + 8 * P, {prev_out, 4 * P}});
                    out.push_back({pre + "norm" + li, 0, 2 * e * K * P + 8 * P, {prev_out, 4 * P, 4 * P}});
                }
                if (spec.se_after == int(i)) {
                    // se_layer_by_layer: the pooled sums zeroed, then summed from the stored layer
                    // (one thread per channel and image), then the reduce and gate kernels.
                    const double pooled = 4.0 * w.n * K, reduced = 4.0 * w.n * spec.se_ch;
                    out.push_back({"se_pool_init", 0, pooled});
                    out.push_back({"se_pool", 0, e * K * P + 2 * pooled, {prev_out, pooled}});
                    KernelCost r = se_matvec_cost(w, "se_reduce", K, spec.se_ch),
                               g = se_matvec_cost(w, "se_gate", spec.se_ch, K);
                    r.rereads = {pooled};
                    g.rereads = {reduced};
                    out.push_back(r);
                    out.push_back(g);
                }
            }
        }
        return out;
    }
    // Executed flops of layers [0, upto) of `nb` consecutive blocks computed tile by tile: each
    // layer on its tile region grown by the halos of the layers (and blocks) after it, the constant
    // extents of schedules/block_schedule.cpp (hidden_layers_gpu, depth_first_block_gpu), on every
    // output tile, the image border's included.
    const auto &last = layers.back();
    const double tiles = double(w.n) * ((last.out_w() + tile_x - 1) / tile_x) * ((last.out_h() + tile_y - 1) / tile_y);
    auto executed = [&](int nb, size_t upto) {
        double f = 0;
        long long bx = tile_x, by = tile_y;  // the region of the current block's output
        for (int blk = nb - 1; blk >= 0; --blk) {
            for (size_t i = 0; i < upto; ++i) {
                long long rx = bx, ry = by;
                grow_through_layers(spec, rx, ry, i + 1);
                const double per_pixel =
                    conv2d_flops(layers[i]) / (double(w.n) * layers[i].out_h() * layers[i].out_w());
                f += per_pixel * double(rx) * double(ry) * tiles;
            }
            grow_through_layers(spec, bx, by);
        }
        return f;
    };
    // One fused kernel: `nb` blocks' flops and weights, its input and output once (the residual
    // re-read is not compulsory).
    auto fused_kernel = [&](const std::string &name, int nb) {
        KernelCost c{name, 0, 0};
        for (const auto &l : layers) {
            c.flops += nb * conv2d_flops(l);
            c.bytes += nb * (e * double(l.k) * (l.c / l.groups) * l.r * l.s + 4.0 * l.k);
        }
        c.bytes += block_io;
        c.bytes += e * double(w.n) * layers.back().k * layers.back().out_h() * layers.back().out_w();
        c.executed_flops = executed(nb, layers.size());
        return c;
    };
    if (strategy == "depth_first") return {fused_kernel("stage", w.blocks)};
    // One kernel a block, no halo: every op executed once, on the tensor cores (ConvFirst's grouped 3x3 runs on CUDA
    // cores: 9 / (c + 9) of the block's ops at e = 4, 12% at c = 64, 3% at c = 256; with tc_grouped on mma, its K of
    // taps x 8 padded to whole steps of 16: 80 / 72 of its ops for a 3x3); a stage's later blocks read the output the
    // block before wrote.
    if (strategy == kFusedTc) {
        const int taps = layers[0].r * layers[0].s;
        const double grouped_padding =
            tc_grouped && w.family == BlockFamily::convfirst
                ? conv2d_flops(layers[0]) * ((taps * 8 + 15) / 16 * 16 - taps * 8) / (taps * 8)
                : 0.0;
        if (w.se) {
            // MBConv with Squeeze-Excitation: a pooling kernel (the expand and the depthwise layer again over each
            // tile, its channels summed: executed, not counted, as the tensor machine counts each op once; the
            // input and those sums its bytes), the mean, reduce and gate kernels, then the block reading the gate.
            const auto &se_layer = layers[spec.se_after];
            const double E = se_layer.k;
            const double se_tiles =
                double((se_layer.out_w() + tile_x - 1) / tile_x) * ((se_layer.out_h() + tile_y - 1) / tile_y);
            const double partials = 4.0 * w.n * E * se_tiles;
            KernelCost pool{"se_pool", 0, block_io + partials};
            pool.executed_flops = 0;
            for (int i = 0; i <= spec.se_after; ++i) {
                const auto &l = layers[i];
                pool.bytes += e * double(l.k) * (l.c / l.groups) * l.r * l.s + 4.0 * l.k;
                pool.executed_flops += conv2d_flops(l);
            }
            pool.tensor_cores = true;
            KernelCost gate{"se_gate", 2.0 * w.n * 2 * E * spec.se_ch,
                            partials + e * 2 * E * spec.se_ch + 4.0 * (E + spec.se_ch) + 4.0 * w.n * E};
            gate.rereads = {partials};
            KernelCost block = fused_kernel("block", 1);
            block.executed_flops = block.flops;
            block.tensor_cores = true;
            block.bytes += 4.0 * w.n * E;  // the gate
            block.rereads = {block_io, 4.0 * w.n * E};
            return {pool, gate, block};
        }
        for (int blk = 0; blk < w.blocks; ++blk) {
            out.push_back(fused_kernel(block_name(blk) + "block", 1));
            out.back().executed_flops = out.back().flops + grouped_padding;
            out.back().tensor_cores = true;
            if (blk > 0) out.back().rereads = {block_io};
        }
        return out;
    }
    if (w.se) {  // se_fused: split around the global mean into two kernels (schedules/block_schedule.cpp)
        const double E = spec.layers[spec.se_after].out_ch;
        const auto &se_layer = layers[spec.se_after];
        // the partial sums' tiles per image, over the SE layer's output
        const double se_tiles =
            double((se_layer.out_w() + tile_x - 1) / tile_x) * ((se_layer.out_h() + tile_y - 1) / tile_y);
        const double partials = 4.0 * w.n * E * se_tiles;  // f32 sum per channel, image and output tile
        // The layers up to SE recomputed per tile and summed into the partial sums: their ops are
        // not counted (the tensor machine counts each op once, as for the depth-first halos); its
        // bytes are the block input, the weights it reads and the partial sums.
        KernelCost pool{"se_pool", 0, block_io + partials};
        for (int i = 0; i <= spec.se_after; ++i) {
            const auto &l = layers[i];
            pool.bytes += e * double(l.k) * (l.c / l.groups) * l.r * l.s + 4.0 * l.k;
        }
        pool.executed_flops = executed(1, spec.se_after + 1);  // the layers up to SE, again
        // The block: each tile first sums its image's partial sums and computes the reduce and gate
        // layers (recomputed per tile: counted once, as the tensor machine counts each op), then the
        // fused block. Compulsory bytes: the partial sums and the SE weights, read once.
        KernelCost block = fused_kernel("block", 1);
        block.flops += 2.0 * w.n * 2 * E * spec.se_ch;
        block.executed_flops += 2.0 * tiles * 2 * E * spec.se_ch;  // the gate, once per block tile (all images)
        block.bytes += partials + e * 2 * E * spec.se_ch + 4.0 * (E + spec.se_ch);
        block.rereads = {block_io, partials};  // the block input and the partial sums (written by se_pool)
        return {pool, block};
    }
    for (int blk = 0; blk < w.blocks; ++blk) {
        out.push_back(fused_kernel(block_name(blk) + "block", 1));
        if (blk > 0) out.back().rereads = {block_io};  // the previous block's output
    }
    return out;
}

}  // namespace blockfuse

namespace blockfuse {
namespace {

// Above this many MACs the float64 reference (every layer over the whole tensor, one thread) would
// take minutes: such blocks are checked on a few images of the call as timed (the batch's first and last, and
// one between), against the reference of those images alone. (Not a call at n=1: an autoscheduler's kernel
// splits the batch for the size it was scheduled for, and a smaller batch reads before its start.)
constexpr double kCheckMacs = 2e8;

// The images `images` of an (x, y, c, n)-shaped tensor (innermost c), as a tensor of their own.
Tensor images_of(Tensor &t, const std::vector<int> &images) {
    t.copy_to_host();
    std::vector<int> shape = shape_of(t);
    shape[3] = int(images.size());
    Tensor out(t.type(), shape);
    for (size_t j = 0; j < images.size(); ++j) {
        Tensor one = t.cropped(3, images[j], 1);
        one.translate(3, int(j) - images[j]);
        out.copy_from(one);
    }
    return out;
}

class BlockData : public TensorOpData<BlockData, BlockWorkload, BlockTensors> {
public:
    // images: the ones checked (empty: all).
    BlockData(const BlockWorkload &w, std::mt19937_64 &rng, std::string note, std::vector<int> images = {})
        : TensorOpData(w, rng, make_block_tensors), note_(std::move(note)), images_(std::move(images)),
          ref_(std::make_shared<std::optional<BlockReference>>()) {}
    void run(const KernelVariant &v) override { run_block(v, w_, t_); }
    Comparison check() override {
        if (images_.empty()) {
            if (!*ref_) *ref_ = block_reference(w_, t_);
            return compare_to_reference(w_, t_, **ref_);
        }
        BlockWorkload few = w_;
        few.n = int(images_.size());
        BlockTensors s = t_;  // the weights and biases shared
        if (!*ref_) {
            s.input = images_of(t_.input, images_);
            *ref_ = block_reference(few, s);
        }
        s.output = images_of(t_.output, images_);
        return compare_to_reference(few, s, **ref_);
    }
    std::string check_note() const override { return note_; }

private:
    std::string note_;
    std::vector<int> images_;
    std::shared_ptr<std::optional<BlockReference>> ref_;  // one reference for every kernel on these inputs
};

class BlockOp : public Op {
public:
    explicit BlockOp(const BlockWorkload &w) : w_(w) {}
    std::string key() const override { return to_key(w_); }
    std::string generator() const override { return "block"; }
    DType dtype() const override { return w_.dtype; }
    std::vector<std::string> strategies() const override {
        std::vector<std::string> out{"layer_by_layer", "fused"};
        if (w_.blocks > 1) out.push_back("depth_first");
        if (w_.dtype != DType::f32) out.push_back(kLayerByLayerTc);  // mma.sync takes f16 and bf16
        if (fused_tc_serves(w_)) out.push_back(kFusedTc);
        return out;
    }
    ScheduleChoice heuristic(const std::string &s, Device d) const override { return block_heuristic(w_, s, d); }
    KernelVariant kernel_for(const std::string &st, Device d, const ScheduleChoice &s) const override {
        return block_kernel_for(w_, st, d, s);
    }
    std::vector<const KernelVariant *> named_variants(Device d) const override { return block_candidates(w_, d); }
    std::vector<KernelCost> costs(const KernelVariant &v) const override {
        std::vector<bool> wgmma_layers;
        for (size_t i = 0; i < w_.layers().size(); ++i)
            wgmma_layers.push_back(v.knob(tensor_core_prefix(i) + "wgmma") != 0);
        return block_costs(w_, v.param("strategy"), v.knob("tile_x"), v.knob("tile_y"), v.knob("tc_grouped") != 0,
                           wgmma_layers);
    }
    Problem problem() const override {
        Problem p;
        p.n = w_.n, p.h = w_.h, p.w = w_.w, p.c = w_.c, p.k = w_.c, p.r = p.s = w_.k;
        p.stride_h = p.stride_w = w_.stride, p.groups = w_.c * w_.e;
        return p;
    }
    std::unique_ptr<OpData> data(std::mt19937_64 &rng) const override {
        return std::make_unique<BlockData>(w_, rng, "");
    }
    std::unique_ptr<OpData> check_data(std::mt19937_64 &rng) const override {
        double macs = 0;
        for (const auto &l : w_.layers()) macs += w_.blocks * conv2d_flops(l) / 2;
        if (macs <= kCheckMacs || w_.n <= 3) return data(rng);
        const int mid = std::uniform_int_distribution<int>(1, w_.n - 2)(rng);
        return std::make_unique<BlockData>(w_, rng,
                                           fmt::format("on images 0, {} and {} of {} (the float64 reference of all "
                                                       "would take minutes)",
                                                       mid, w_.n - 1, w_.n),
                                           std::vector<int>{0, mid, w_.n - 1});
    }
    std::string strategy_note(const std::string &s) const override {
        return w_.se && s == "fused" ? " [split at SE: tile sums, then the block with the gate]" : "";
    }
    std::vector<std::string> tunable_knobs(const std::string &strategy, Device d) const override {
        const BlockSpec spec = w_.spec();
        std::vector<std::string> out;
        const bool tc = strategy == kLayerByLayerTc;
        if (strategy == kFusedTc) {
            if (spec.family == BlockFamily::mbconv) return {"chunk", "tc_warps", "tile_x", "tile_y"};
            out = {"chunk", "tc_warps", "tc_warp_m", "tc_prefetch"};
            if (spec.family == BlockFamily::convfirst) out.push_back("tc_grouped");  // its grouped layer on mma
            return out;
        }
        if (d == Device::cpu && strategy != "layer_by_layer" && !tc)  // the CPU's fused and depth-first read these
            return {"tile_x", "tile_y", "chunk"};
        if (strategy == "layer_by_layer" || tc) {             // the knobs of each mapping its layers use
            std::map<std::string, std::set<ConvKind>> kinds;  // by prefix
            for (size_t i = 0; i < spec.layers.size(); ++i) {
                const LayerSpec &l = spec.layers[i];
                if (tc && tensor_core_capable_layer(l)) {  // its implicit GEMM's tiling
                    for (const KnobDecl &k : gemm_knob_table().knobs) out.push_back(tensor_core_prefix(i) + k.name);
                    if (l.groups == 1) continue;
                    // a grouped layer: on that GEMM, or on its mapping (below)
                    if (std::find(out.begin(), out.end(), "tc_grouped") == out.end()) out.push_back("tc_grouped");
                }
                kinds[knob_prefix(layer_mapping(l.ks, l.groups))].insert(layer_conv_kind(l));
            }
            for (const auto &[p, ks] : kinds)
                for (const KnobDecl &k : (d == Device::cpu ? conv2d_cpu_knobs() : conv2d_gpu_knobs()).knobs)
                    if (d != Device::cpu || std::any_of(ks.begin(), ks.end(), [&](ConvKind c) {
                            return conv2d_cpu_knob_applies(k.name, c, true);
                        }))
                        out.push_back(p + k.name);
            return out;
        }
        const bool full_width =
            std::any_of(spec.layers.begin(), spec.layers.end() - 1, [](const LayerSpec &l) { return !l.hidden; });
        const bool pointwise_hidden = std::any_of(spec.layers.begin(), spec.layers.end(), pointwise_hidden_layer);
        for (const KnobDecl &k : block_fused_knobs().knobs)
            if ((k.name != "full_vec" || full_width) && (k.name != "input_vec" || pointwise_hidden) &&
                (k.name != "stage_padded" || strategy == "fused") && k.name != "tc_grouped")  // layer_by_layer_tc's
                out.push_back(k.name);
        return out;
    }
    std::string candidate_error(const KernelVariant &v, const LaunchLimits &limits) const override {
        const BlockSpec spec = w_.spec();
        const std::string strategy = v.param("strategy");
        if (std::string why = block_knobs_error(spec, strategy, block_knobs_from(v.knobs), v.device != Device::cpu);
            !why.empty())
            return why;
        if (v.device == Device::cpu) return "";
        const BlockKnobs kn = block_knobs_from(v.knobs);
        if (strategy == "depth_first")
            if (std::string why = depth_first_one_point_per_thread(spec, w_.blocks, kn.tile_x, kn.tile_y, kn.vec_k,
                                                                   kn.chunk, kn.hidden_vec);
                !why.empty())
                return why;
        const auto layers = w_.layers();
        for (size_t i = 0; i < layers.size(); ++i) {
            const Conv2dWorkload &l = layers[i];
            const std::string p = knob_prefix(layer_mapping(l.r, l.groups));
            const bool mapped =
                strategy == "layer_by_layer" || (strategy == kLayerByLayerTc && !tensor_core_layer(spec.layers[i], kn));
            if (mapped && !flat_tiles_fit(v.knob(p + "flat_threads"), v.knob(p + "tile_x"), v.knob(p + "tile_y"),
                                          l.out_w(), l.out_h()))
                return p + " mapping: the flat mapping's tile exceeds a layer's output";
        }
        try {
            check_block_launch(v, w_, limits);
        } catch (const KernelError &e) {
            return e.what();
        }
        return "";
    }

    std::map<std::string, int> shape_estimates() const override {
        return {{"est_n", w_.n}, {"est_h", w_.h}, {"est_w", w_.w}};
    }

private:
    BlockWorkload w_;
};

}  // namespace

std::unique_ptr<Op> block_op(const std::string &key) { return std::make_unique<BlockOp>(parse_block(key)); }

}  // namespace blockfuse
