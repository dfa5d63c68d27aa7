#include "runtime/conv2d_tc.h"
#include "schedules/gemm_knobs.h"
#include "schedules/heuristics.h"
#include <fmt/format.h>

namespace blockfuse {

ConvWindows conv_windows(const Conv2dWorkload &w) { return {w.c, w.k, w.groups}; }

bool tensor_cores_apply(const Conv2dWorkload &w) {
    return w.dtype != DType::f32 && w.kind() != ConvKindTag::depthwise && conv_windows(w).error().empty();
}

GemmWorkload implicit_gemm_of(const Conv2dWorkload &w, const TcDepth &z) {
    GemmWorkload g;
    g.m = w.n * z.out() * w.out_h() * w.out_w();
    g.n = w.k;
    g.k = conv_windows(w).reduction(z.t * w.r * w.s);
    g.bias = w.bias;
    g.act = w.act;
    g.dtype = w.dtype;
    return g;
}

Halide::Runtime::Buffer<uint16_t> tensor_core_weights(const Tensor &weights, int k, int c, int taps, int groups) {
    const ConvWindows cw{c, k, groups};
    const int wc = cw.window_channels(), cg = c / groups, kg = k / groups;
    Halide::Runtime::Buffer<uint16_t> out(cw.reduction(taps), k);
    out.fill(0);
    const uint16_t *src = static_cast<const uint16_t *>(weights.data());
    // Row ki holds its window's channels: the first is window x wc (0 for one group), and only those of ki's group
    // (ci in the source's c / groups) are not zero.
    for (int ki = 0; ki < k; ++ki) {
        const int first = groups == 1 ? 0 : ki / cw.window_n() * wc, group_first = ki / kg * cg;
        for (int tap = 0; tap < taps; ++tap)
            for (int ci = 0; ci < cg; ++ci)
                out(cw.reduction_index(tap, group_first + ci - first), ki) = src[(size_t(tap) * cg + ci) * k + ki];
    }
    out.set_host_dirty();
    return out;
}

Halide::Runtime::Buffer<uint16_t> tensor_core_weights(const Tensor &weights, const Conv2dWorkload &w) {
    return tensor_core_weights(weights, w.k, w.c, w.r * w.s, w.groups);
}

void lay_out_tensor_core_weights(Conv2dTensors &t, const Conv2dWorkload &w) {
    if (tensor_cores_apply(w)) t.weights_tc = tensor_core_weights(t.weights, w);
}

KernelVariant conv2d_tc_kernel_for(const Conv2dWorkload &w, Device device, const ScheduleChoice &s, const TcDepth &z) {
    std::map<std::string, std::string> p{{"strategy", kTensorCores}};
    auto set = [&p](const char *k, int v) { p[k] = std::to_string(v); };
    set("channels", w.c), set("height", w.h), set("width", w.w), set("out_channels", w.k);
    set("kernel_h", w.r), set("kernel_w", w.s), set("stride_x", w.stride_w), set("stride_y", w.stride_h);
    set("dil_x", w.dil_w), set("dil_y", w.dil_h), set("pad_l", w.pad_l), set("pad_r", w.pad_r), set("pad_t", w.pad_t);
    set("pad_b", w.pad_b);
    const bool conv3d = z.d > 1 || z.t > 1;
    const std::string g = w.groups > 1 ? fmt::format("g{}", w.groups) : "";
    if (w.groups > 1) set("groups", w.groups);
    std::string name = fmt::format("conv2d_tc_k{}x{}s{}{}_c{}k{}_{}x{}", w.r, w.s, w.stride_h, g, w.c, w.k, w.h, w.w);
    if (conv3d) {
        set("depth", z.d), set("kernel_d", z.t), set("stride_d", z.stride), set("dil_d", z.dil), set("pad_d", z.pad);
        name = fmt::format("conv3d_tc_k{}x{}x{}s{}{}_c{}k{}_{}x{}x{}", z.t, w.r, w.s, w.stride_w, g, w.c, w.k, z.d, w.h,
                           w.w);
    }
    KernelVariant v = make_variant("conv2d_tc", name + "_" + dtype_name(w.dtype) + "_" + device_name(device), device,
                                   w.dtype, p, s.knobs, s.max_registers, s.why);
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

std::string conv2d_tc_launch_error(const KernelVariant &v, const Conv2dWorkload &w, const LaunchLimits &limits,
                                   const TcDepth &z) {
    const GemmWorkload g = implicit_gemm_of(w, z);
    const ConvWindows cw = conv_windows(w);
    if (std::string why = cw.error(); !why.empty()) return why;
    const GemmKnobs kn = gemm_knobs_from(v.knobs);
    if (std::string why = gemm_windows_error(kn, cw.window_n()); !why.empty()) return why;
    // A block's A panels, one per window its columns touch; the cp.async ring's 16-byte rows need whole vectors of
    // channels (the window's and the input's channels multiples of 8).
    const int windows = gemm_windows_in(kn.warp_n * kn.warps_n, cw.window_n());
    const int channels = cw.window_channels() % 8 ? cw.window_channels() : w.c;
    return tensor_core_launch_error(v, g.m, g.n, limits, channels, windows);
}

void run_conv2d_tc(const KernelVariant &v, const Conv2dWorkload &w, Conv2dTensors &t, const TcDepth &z,
                   const std::string &key) {
    const std::string name = key.empty() ? to_key(w) : key;
    if (const std::string why = conv2d_tc_launch_error(v, w, launch_limits(v.device), z); !why.empty())
        throw KernelError("launch rejected before running: kernel " + v.name + " on " + name + ": " + why);
    if (!has_storage(t.weights_tc.raw_buffer()))
        throw KernelError("kernel " + v.name +
                          " reads the tensor-core weight layout: lay_out_tensor_core_weights() was "
                          "not called after the weights of " +
                          name + " were written");
    // ABI order of generators/conv2d_tc_generator.cpp: input, weights, bias, activation, output.
    int act = int(w.act);
    void *args[] = {t.input.raw_buffer(), t.weights_tc.raw_buffer(), t.bias.raw_buffer(), &act, t.output.raw_buffer()};
    call_tensor_core_kernel(v, args, name);
}

}  // namespace blockfuse
