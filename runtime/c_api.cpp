// runtime/blockfuse_c.h: kernels opened by key and run on a caller's memory. The argument order and
// the launch checks are run_conv2d's and run_block's: the caller's tensors become unmanaged Halide
// buffers (a device pointer wrapped, never copied, never freed here) in the same Conv2dTensors and
// BlockTensors the harness uses.
#include "runtime/blockfuse_c.h"
#include "build_info.h"
#include "runtime/block.h"
#include "runtime/call_memory.h"
#include "runtime/conv2d.h"
#include "runtime/conv2d_tc.h"
#include "runtime/cuda_driver.h"
#include "runtime/dispatch.h"
#include "runtime/kernel_cache.h"
#include "runtime/tuning_records.h"
#include "schedules/block_knobs.h"
#include <HalideRuntimeCuda.h>
#include <atomic>
#include <cstdint>
#include <fmt/format.h>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

using namespace blockfuse;

namespace {

thread_local std::string last_error, text;

struct TensorSpec {
    std::string name;
    DType dtype;
    std::vector<int> extents;  // innermost first
    // A tensor-core layout's dense form (k, c, kx, ky) innermost first: what a caller lays out from, and its groups
    // (> 1: each output channel's row holds its window's channels, generators/conv_windows.h).
    std::vector<int> dense_extents = {};
    int groups = 1;
};

struct Handle {
    std::string key, family, strategy, source;
    Device device = Device::cpu;
    const KernelVariant *variant = nullptr;
    bool loaded = false;
    std::string origin, description;
    std::optional<Conv2dWorkload> conv;
    std::optional<BlockWorkload> block;
    std::vector<TensorSpec> tensors;
    // The device workspace a call needs (bf_workspace_bytes): measured on the first CUDA run, -1 until then.
    std::atomic<int64_t> workspace{-1};
};

std::mutex open_mutex;
std::mutex measure_mutex;  // measure_call_memory counts one call at a time

const TuningRecords &records() {
    static const TuningRecords r = TuningRecords::load(default_record_files());
    return r;
}

void init_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        install_halide_error_handler();
        if (cuda::device().available) {
            cuda::install_halide_hooks();
            // A kernel's own device buffers (layer-by-layer intermediates, split-K workspaces) from Halide's free
            // list after the first call instead of a cuMemAlloc / cuMemFree per call, as in the harness.
            halide_reuse_device_allocations(nullptr, true);
        }
    });
}

// A layer's weights as the tensor-core kernels read them (tensor_core_weights(), runtime/conv2d_tc.h):
// (Kr, k) innermost first, the reduction index tap x Cp + c innermost (Cp = the channels rounded up to 8 with
// zeros, taps kx fastest; grouped: those of k's window), Kr = R*S*Cp; one group of C <= 4 channels: g = 8 / C
// taps to each 8 of the row, tap / g * 8 + tap % g * C + c, Kr = 8 ceil(R*S / g) (generators/conv_windows.h):
// a caller's (R, S, C / groups, K) weights as (K, Kr).
TensorSpec tensor_core_weight_spec(const std::string &name, const Conv2dWorkload &l) {
    return {
        name + "_tc", l.dtype, {conv_windows(l).reduction(l.r * l.s), l.k}, {l.k, l.c / l.groups, l.s, l.r}, l.groups};
}

std::vector<TensorSpec> conv2d_specs(const Conv2dWorkload &w, const KernelVariant &v) {
    return {{"input", w.dtype, {w.c, w.w, w.h, w.n}},
            v.family == "conv2d_tc"
                ? tensor_core_weight_spec("weights", w)
                : TensorSpec{"weights", takes_f32_weights(v) ? DType::f32 : w.dtype, {w.k, w.c / w.groups, w.s, w.r}},
            {"bias", DType::f32, {w.k}},
            {"output", w.dtype, {w.k, w.out_w(), w.out_h(), w.n}}};
}

// ABI order of generators/block_generator.cpp: input, (weights, bias) per layer of each block, the
// Squeeze-Excitation reduce and expand (weights, bias), output. The dense layers of a tensor-core strategy
// take their weights in the tensor-core layout.
std::vector<TensorSpec> block_specs(const BlockWorkload &w, const KernelVariant &v) {
    std::vector<TensorSpec> out{{"input", w.dtype, {w.c, w.w, w.h, w.n}}};
    const auto layers = w.layers();
    const BlockSpec spec = w.spec();
    for (int b = 0; b < w.blocks; ++b)
        for (size_t i = 0; i < layers.size(); ++i) {
            const auto &l = layers[i];
            const std::string pre = (w.blocks > 1 ? "b" + std::to_string(b) + "_" : "");
            const std::string name = pre + "weights" + std::to_string(i);
            if (tensor_core_strategy(v.param("strategy")) &&
                tensor_core_layer(spec.layers[i], block_knobs_from(v.knobs)))
                out.push_back(tensor_core_weight_spec(name, l));
            else out.push_back({name, w.dtype, {l.k, l.c / l.groups, l.s, l.r}});
            out.push_back({pre + "bias" + std::to_string(i), DType::f32, {l.k}});
        }
    if (spec.has_se()) {
        const int E = spec.layers[spec.se_after].out_ch;
        out.push_back({"se_weights0", w.dtype, {spec.se_ch, E, 1, 1}});
        out.push_back({"se_bias0", DType::f32, {spec.se_ch}});
        out.push_back({"se_weights1", w.dtype, {E, spec.se_ch, 1, 1}});
        out.push_back({"se_bias1", DType::f32, {E}});
    }
    const auto &last = layers.back();
    out.push_back({"output", w.dtype, {last.k, last.out_w(), last.out_h(), w.n}});
    return out;
}

void describe(Handle &h) {
    nlohmann::json t = nlohmann::json::array();
    for (const auto &s : h.tensors) {
        t.push_back({{"name", s.name}, {"dtype", dtype_name(s.dtype)}, {"extents", s.extents}});
        if (!s.dense_extents.empty()) t.back()["dense_extents"] = s.dense_extents;
        if (s.groups > 1) t.back()["groups"] = s.groups;
    }
    h.description = nlohmann::json{
        {"key", h.key},
        {"family", h.family},
        {"device", device_name(h.device)},
        {"strategy", h.strategy},
        {"strategies", strategies_of(h.key)},
        {"source", h.source},
        {"kernel", h.variant->name},
        {"knobs", h.variant->knob_summary()},
        {"why", h.variant->why},
        {"cache_hash", h.variant->request().hash()},
        {"loaded", h.loaded},
        {"origin", h.origin},
        {"tensors", t}}.dump();
}

// A caller's tensor as a Halide buffer of the spec's type and extents; throws WorkloadError naming the
// tensor and what does not fit. dims: the buffer's shape storage (it must outlive the buffer).
halide_buffer_t to_buffer(const bf_tensor &t, const TensorSpec &s, Device device, halide_dimension_t *dims) {
    auto bad = [&](const std::string &what) { throw WorkloadError("tensor '" + s.name + "': " + what); };
    if (!t.data) bad("null data pointer");
    // The kernels declare their buffers 16-byte aligned (vector loads and stores); on CUDA nothing checks a
    // wrapped device pointer, and a misaligned one faults inside the kernel and poisons the context.
    if (const auto addr = uintptr_t(t.data); addr % 16)
        bad(fmt::format("data pointer {:#x} is not 16-byte aligned (a view at an offset?)", addr));
    if (t.dtype < BF_F32 || t.dtype > BF_BF16)
        bad("dtype code " + std::to_string(t.dtype) + " is not f32, f16 or bf16");
    const DType dt = t.dtype == BF_F32 ? DType::f32 : t.dtype == BF_F16 ? DType::f16 : DType::bf16;
    if (dt != s.dtype) bad(std::string("dtype ") + dtype_name(dt) + ", the kernel takes " + dtype_name(s.dtype));
    if (t.dims != int(s.extents.size()))
        bad(std::to_string(t.dims) + " dimensions, the kernel takes " + std::to_string(s.extents.size()));
    for (int d = 0; d < t.dims; ++d) {
        if (t.extents[d] != s.extents[d]) {
            std::string want, got;
            for (int e = 0; e < t.dims; ++e) {
                want += (e ? "," : "") + std::to_string(s.extents[e]);
                got += (e ? "," : "") + std::to_string(t.extents[e]);
            }
            bad("extents (" + got + ") innermost first, the kernel takes (" + want + ")");
        }
        if (t.strides[d] < 0 || t.strides[d] > INT32_MAX)
            bad("stride " + std::to_string(t.strides[d]) + " out of range");
        dims[d] = halide_dimension_t(0, int32_t(t.extents[d]), int32_t(t.strides[d]));
    }
    if (t.strides[0] != 1 && t.extents[0] > 1) bad("innermost stride " + std::to_string(t.strides[0]) + ", must be 1");
    dims[0].stride = 1;
    halide_buffer_t b{};
    b.type = halide_type_of(dt);
    b.dimensions = t.dims;
    b.dim = dims;
    if (device == Device::cuda) {
        clear_halide_error();
        if (int rc = halide_cuda_wrap_device_ptr(nullptr, &b, uint64_t(uintptr_t(t.data))))
            throw KernelError("tensor '" + s.name + "': wrapping the device pointer failed: " + last_halide_error(rc));
    } else {
        b.host = static_cast<uint8_t *>(t.data);
    }
    return b;
}

template <class F>
int guarded(F &&f) {
    try {
        f();
        return 0;
    } catch (const WorkloadError &e) {
        last_error = e.what();
        return 2;
    } catch (const std::exception &e) {
        last_error = e.what();
        return 1;
    }
}

}  // namespace

extern "C" {

const char *bf_last_error(void) { return last_error.c_str(); }

const char *bf_info(void) {
    nlohmann::json j{{"halide_version", BLOCKFUSE_HALIDE_VERSION},
                     {"source_hash", BLOCKFUSE_SOURCE_HASH},
                     {"commit", BLOCKFUSE_GIT_COMMIT},
                     {"kernel_cache", kernel_cache_dir()},
                     {"prebuilt", prebuilt_kernel_dir()},
                     {"generators", generator_dir()},
                     {"tuning_records", default_record_files()},
                     {"cuda", cuda::device().available ? cuda::device().name : ""},
                     {"cuda_reason", cuda::device().reason}};
    text = j.dump();
    return text.c_str();
}

const char *bf_canonical(const char *key) {
    const int rc = guarded([&] { text = canonical_key(key ? key : ""); });
    return rc ? nullptr : text.c_str();
}

void *bf_open(const char *key, const char *strategy, const char *device, int load, int *code) {
    Handle *out = nullptr;
    const int rc = guarded([&] {
        std::lock_guard<std::mutex> lock(open_mutex);
        init_once();
        auto h = std::make_unique<Handle>();
        const std::string dev = device ? device : "";
        if (!parse_device(dev, &h->device) || h->device == Device::opencl)
            throw WorkloadError("device '" + dev + "' is not one of cuda, cpu");
        if (h->device == Device::cuda && load && !cuda::device().available)
            throw KernelError("no CUDA device: " + cuda::device().reason);
        h->key = canonical_key(key ? key : "");
        h->family = workload_family(h->key);
        if (h->family != "conv2d" && h->family != "block")
            throw WorkloadError("'" + h->key + "': only conv2d and block keys are served through the C API");
        h->strategy = strategy && *strategy ? strategy : default_strategy(h->key, h->device, &records());
        const Pick p = dispatch(h->key, h->strategy, h->device, &records());
        h->variant = p.variant;
        h->source = p.source;
        if (h->family == "conv2d") {
            h->conv = parse_conv2d(h->key);
            h->tensors = conv2d_specs(*h->conv, *h->variant);
        } else {
            h->block = parse_block(h->key);
            h->tensors = block_specs(*h->block, *h->variant);
        }
        if (load) {
            h->origin = h->variant->load().origin;
            h->loaded = true;
        }
        describe(*h);
        out = h.release();
    });
    if (code) *code = rc;
    return out;
}

const char *bf_describe(void *handle) {
    if (!handle) {
        last_error = "null handle";
        return nullptr;
    }
    return static_cast<Handle *>(handle)->description.c_str();
}

int bf_run(void *handle, const bf_tensor *tensors, int count, int device_ordinal, void *stream) {
    return bf_run_with_workspace(handle, tensors, count, device_ordinal, stream, nullptr, 0);
}

int64_t bf_workspace_bytes(void *handle) {
    if (!handle) {
        last_error = "null handle";
        return -1;
    }
    return static_cast<Handle *>(handle)->workspace.load();
}

int bf_run_with_workspace(void *handle, const bf_tensor *tensors, int count, int device_ordinal, void *stream,
                          void *workspace, uint64_t workspace_bytes) {
    return guarded([&] {
        if (!handle) throw WorkloadError("null handle");
        Handle &h = *static_cast<Handle *>(handle);
        if (workspace) {
            if (h.device != Device::cuda) throw WorkloadError("a workspace is device memory: CUDA kernels only");
            const int64_t need = h.workspace.load();
            if (need < 0)
                throw WorkloadError(h.key + ": the workspace a call needs is measured on its first run (bf_run) "
                                            "and this kernel has not run");
            if (workspace_bytes < uint64_t(need))
                throw WorkloadError(fmt::format("{}: a workspace of {} bytes, the kernel needs {} (bf_workspace_bytes)",
                                                h.key, workspace_bytes, need));
        }
        if (!h.loaded) throw WorkloadError("kernel " + h.variant->name + " was opened without loading (load = 0)");
        if (count != int(h.tensors.size()) || !tensors)
            throw WorkloadError(h.key + ": " + std::to_string(count) + " tensors given, the kernel takes " +
                                std::to_string(h.tensors.size()));
        std::vector<std::array<halide_dimension_t, 4>> dims(count);
        std::vector<halide_buffer_t> bufs;
        bufs.reserve(count);
        // Every wrapped device pointer is detached again, whatever happens: the memory is the caller's.
        struct Detach {
            std::vector<halide_buffer_t> &b;
            Device d;
            ~Detach() {
                if (d == Device::cuda)
                    for (auto &x : b) halide_cuda_detach_device_ptr(nullptr, &x);
            }
        } detach{bufs, h.device};
        for (int i = 0; i < count; ++i) bufs.push_back(to_buffer(tensors[i], h.tensors[i], h.device, dims[i].data()));
        std::optional<cuda::CallScope> scope;
        if (h.device == Device::cuda) scope.emplace(device_ordinal, stream);
        auto tensor = [&](int i) { return Tensor(bufs[i]); };
        auto f32 = [&](int i) { return Halide::Runtime::Buffer<float>(bufs[i]); };
        auto storage_bits = [&](int i) {  // the tensor-core layout: f16 / bf16 as their bits, as the kernels take it
            halide_buffer_t b = bufs[i];
            b.type = halide_type_of<uint16_t>();
            return Halide::Runtime::Buffer<uint16_t>(b);
        };
        auto tensor_core_layout = [&](int i) { return !h.tensors[i].dense_extents.empty(); };
        auto run = [&] {
            if (h.conv) {
                Conv2dTensors t;
                t.input = tensor(0);
                t.weights = tensor(1);
                if (takes_f32_weights(*h.variant)) t.weights_f32 = f32(1);
                if (tensor_core_layout(1)) t.weights_tc = storage_bits(1);
                t.bias = f32(2);
                t.output = tensor(3);
                run_conv2d(*h.variant, *h.conv, t);
            } else {
                BlockTensors t;
                t.input = tensor(0);
                for (int i = 1; i + 1 < count; i += 2) {
                    t.weights.push_back(tensor(i));
                    t.biases.push_back(f32(i + 1));
                    t.weights_tc.push_back(tensor_core_layout(i) ? storage_bits(i)
                                                                 : Halide::Runtime::Buffer<uint16_t>());
                }
                t.output = tensor(count - 1);
                run_block(*h.variant, *h.block, t);
            }
        };
        if (h.device == Device::cuda && h.workspace.load() < 0) {
            // The first call: every device buffer it allocates is one cuMemAlloc, counted (synchronized).
            std::lock_guard<std::mutex> lock(measure_mutex);
            const CallMemory m = measure_call_memory(Device::cuda, run);
            h.workspace = int64_t(m.total_bytes + uint64_t(m.allocations) * cuda::kWorkspaceAlign);
            return;
        }
        if (h.device != Device::cuda) h.workspace = 0;  // a CPU kernel's heap tiles are Halide's, not the caller's
        if (!workspace) return run();
        cuda::WorkspaceScope pieces(uintptr_t(workspace), workspace_bytes);
        try {
            run();
        } catch (const std::exception &e) {
            if (pieces.exhausted().empty()) throw;
            throw KernelError(h.key + ": " + pieces.exhausted() + " (" + e.what() + ")");
        }
    });
}

void bf_close(void *handle) { delete static_cast<Handle *>(handle); }

}  // extern "C"
