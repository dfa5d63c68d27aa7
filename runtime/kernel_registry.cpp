#include "runtime/kernel_registry.h"
#include "generators/block_spec.h"
#include "schedules/block_knobs.h"
#include "schedules/conv2d_knobs.h"
#include "runtime/mma_ptx.h"
#include "schedules/gemm_knobs.h"
#include "schedules/pool_knobs.h"
#include "schedules/stem_knobs.h"
#include <algorithm>
#include <optional>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <nlohmann/json.hpp>

namespace blockfuse {

const char *device_name(Device d) {
    switch (d) {
    case Device::cpu: return "cpu";
    case Device::cuda: return "cuda";
    case Device::opencl: return "opencl";
    }
    return "?";
}

bool parse_device(const std::string &s, Device *out) {
    for (Device d : {Device::cpu, Device::cuda, Device::opencl})
        if (s == device_name(d)) {
            *out = d;
            return true;
        }
    return false;
}

const KnobTable &schedule_knob_table(const std::string &family, Device device) {
    static const KnobTable none;
    if (family == "conv2d") return device == Device::cpu ? conv2d_cpu_knobs() : conv2d_gpu_knobs();
    if (family == "block") return block_knobs(device != Device::cpu);
    if (family == "stem") return stem_knobs();
    if (mma_ptx::tensor_core_family(family)) return gemm_knob_table();
    if (family == "pool") return pool_knobs();
    return none;
}

int KernelVariant::threads_per_block() const {
    if (device == Device::cpu) return 0;
    if (mma_ptx::tensor_core_family(family)) return gemm_knobs_from(knobs).threads_per_block();  // whole warps
    if (family == "block") {
        BlockFamily f;
        const std::string strategy = param("strategy");
        if ((strategy == kLayerByLayerTc || strategy == kFusedTc) && block_family_from_name(param("family"), &f)) {
            // layer by layer, each layer's kernel: its GEMM tiling or its layer_ mapping (the spec says which);
            // fused_tc, its warps
            const BlockSpec spec = make_block_spec(f, knob("channels"), knob("expansion"), knob("kernel_size"),
                                                   knob("stride", 1), knob("act"), knob("se") == 1);
            return block_threads_per_block(spec, strategy, block_knobs_from(knobs));
        }
        if (param("strategy") != "layer_by_layer")
            return fused_kernel_threads(knob("channels"), knob("vec_k"), knob("tile_x"), knob("se") == 1,
                                        knob("chunk"));
        int threads = 0;  // layer by layer: the largest of the three layer mappings
        for (const char *p : {"pw_", "full_", "layer_"})
            threads = std::max(threads, conv2d_gpu_knobs_from(knobs, p).threads_per_block());
        return threads;
    }
    if (family == "pool") {  // with stage_out, also the threads computing the block's tiles (schedules/pool_knobs.h)
        if (!knob("stage_out")) return knob("threads");
        return std::max(knob("threads"), pool_staged_block(knob("rank"), knob("out_x"), knob("threads"), knob("tile_x"),
                                                           knob("tile_y"), knob("stage_out"))
                                             .tile_threads);
    }
    if (family == "stem")  // the pool tile's threads; the layer-by-layer conv takes the conv2d defaults
        return std::max(fused_block_threads(knob("out_channels"), knob("vec_k"), knob("tile_x")),
                        Conv2dGpuKnobs{}.threads_per_block());
    return conv2d_gpu_knobs_from(knobs).threads_per_block();
}

std::map<std::string, int> KernelVariant::schedule_knobs() const {
    std::map<std::string, int> out;
    for (const auto &k : schedule_knob_table(family, device).knobs) out[k.name] = knob(k.name, k.default_value);
    return out;
}

std::string knob_summary(const KnobTable &table, const std::map<std::string, int> &knobs, int max_registers) {
    std::string s;
    for (const auto &k : table.knobs)
        if (auto it = knobs.find(k.name); it != knobs.end() && it->second != k.default_value)
            s += (s.empty() ? "" : " ") + k.name + "=" + std::to_string(it->second);
    if (max_registers > 0) s += (s.empty() ? "" : " ") + std::string("max_registers=") + std::to_string(max_registers);
    return s.empty() ? "knob defaults" : s;
}

std::string KernelVariant::knob_summary() const {
    // an autoscheduler's kernel: the knobs it carries are not what schedules it
    if (const std::string a = param("autoscheduler"); !a.empty()) return "scheduled by Halide's " + a;
    return blockfuse::knob_summary(schedule_knob_table(family, device), knobs, max_registers);
}

namespace {
const char *halide_type_name(DType d) {
    switch (d) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    }
    return "float32";
}
bool is_integer(const std::string &s) {
    return !s.empty() && s.find_first_not_of("-0123456789") == std::string::npos && s != "-";
}
}  // namespace

KernelRequest KernelVariant::request() const {
    KernelRequest r;
    r.generator = family;
    r.name = name;
    r.target = device == Device::cpu ? host_target() : gpu_target(device_name(device));
    // Pooling compares against -inf and tests for NaN: Halide's default fast-math flags (nnan, ninf) let
    // LLVM fold both away (generators/pool_algorithm.h).
    if (family == "pool") r.target += "-strict_float";
    for (const auto &[k, v] : knobs) r.params.push_back(k + "=" + std::to_string(v));
    for (const auto &[k, v] : params) r.params.push_back(k + "=" + v);
    const std::string t = halide_type_name(dtype);
    if (family == "conv2d") {  // storage types of the void-typed buffers (weights may be widened: weights.type)
        r.params.push_back("input.type=" + t);
        r.params.push_back("output.type=" + t);
        if (!params.count("weights.type")) r.params.push_back("weights.type=" + t);
    } else if (family == "conv2d_tc") {  // the weights are bits in the tensor-core layout
        r.params.push_back("input.type=" + t);
        r.params.push_back("output.type=" + t);
    } else {
        r.params.push_back("storage=" + t);
    }
    std::sort(r.params.begin(), r.params.end());
    r.description = {{"family", family},
                     {"device", device_name(device)},
                     {"dtype", dtype_name(dtype)},
                     {"knobs", schedule_knobs()},
                     {"params", params},
                     {"max_registers", max_registers},
                     {"threads_per_block", threads_per_block()},
                     {"why", why}};
    return r;
}

KernelVariant make_variant(const std::string &family, const std::string &name, Device device, DType dtype,
                           const std::map<std::string, std::string> &static_params,
                           const std::map<std::string, int> &knobs, int max_registers, const std::string &why) {
    KernelVariant v;
    v.family = family;
    v.name = name;
    v.device = device;
    v.dtype = dtype;
    v.max_registers = max_registers;
    v.why = why;
    for (const auto &[k, val] : static_params) {
        if (is_integer(val)) {
            v.knobs[k] = std::stoi(val);
        } else {
            v.params[k] = val;
        }
    }
    v.kind = v.params.count("kind") ? v.params.at("kind") : "general";
    const KnobTable &table = schedule_knob_table(family, device);
    for (const auto &[k, val] : knobs)
        if (!table.find(k))
            throw WorkloadError("kernel " + name + ": '" + k + "' is not a knob of the " + family + " " +
                                (device == Device::cpu ? "CPU" : "GPU") + " schedules (schedules/" + family +
                                "_knobs.h)");
    for (const auto &[k, val] : table.with_defaults(knobs)) v.knobs[k] = val;
    return v;
}

namespace {
// schedules/variants/<family>.json, embedded at build time (family, file text).
const std::pair<const char *, const char *> kVariantFiles[] = {
#include "variant_data.inc"
};

std::vector<KernelVariant> load_data_variants() {
    std::vector<KernelVariant> out;
    for (const auto &[family, text] : kVariantFiles) {
        const std::string where = std::string("schedules/variants/") + family + ".json";
        nlohmann::json arr;
        try {
            arr = nlohmann::json::parse(text);
        } catch (const std::exception &e) {
            throw KernelError(where + " is not JSON: " + e.what());
        }
        for (const auto &e : arr) {
            const std::string name = e.value("name", "");
            try {
                Device d;
                DType t;
                if (!parse_device(e.at("device").get<std::string>(), &d)) throw std::runtime_error("bad device");
                if (!parse_dtype(e.at("dtype").get<std::string>(), &t)) throw std::runtime_error("bad dtype");
                std::map<std::string, std::string> params;
                const nlohmann::json p = e.value("params", nlohmann::json::object());
                for (const auto &[k, val] : p.items())
                    params[k] = val.is_string() ? val.get<std::string>() : std::to_string(val.get<int>());
                const auto knobs = e.value("knobs", nlohmann::json::object()).get<std::map<std::string, int>>();
                KernelVariant v = make_variant(family, name, d, t, params, knobs, e.value("max_registers", 0),
                                               "variant data (" + where + ")");
                v.data_default = e.value("default", false);
                v.prebuilt = e.value("prebuilt", false);
                out.push_back(std::move(v));
            } catch (const std::exception &ex) {
                throw KernelError(where + ", variant '" + name + "': " + ex.what());
            }
        }
    }
    return out;
}
}  // namespace

const std::vector<KernelVariant> &data_variants() {
    static const std::vector<KernelVariant> v = load_data_variants();
    return v;
}

const KernelVariant *find_data_variant(const std::string &name) {
    for (const auto &v : data_variants())
        if (v.name == name) return &v;
    return nullptr;
}

const KernelVariant *keep_variant(KernelVariant v) {
    static std::mutex m;
    static std::deque<KernelVariant> kept;  // stable addresses
    // Request hash, name and register cap: one kernel at two JIT caps is two variants (one build).
    static std::unordered_map<std::string, const KernelVariant *> by_id;
    std::lock_guard<std::mutex> lock(m);
    const std::string id = v.request().hash() + " " + v.name + " regs " + std::to_string(v.max_registers);
    if (auto it = by_id.find(id); it != by_id.end()) return it->second;
    kept.push_back(std::move(v));
    return by_id[id] = &kept.back();
}

namespace {
int g_register_policy = 0;
// The user's own setting, captured before the first apply_register_cap() overwrites it.
const char *user_register_setting() {
    static const std::string v = [] {
        const char *e = std::getenv("HL_CUDA_JIT_MAX_REGISTERS");
        return std::string(e ? e : "");
    }();
    return v.empty() ? nullptr : v.c_str();
}

// The cap set on purpose for v (the environment, the policy, then the variant's own), if any.
std::optional<int> cap_set_on_purpose(const KernelVariant &v) {
    if (const char *u = user_register_setting()) return std::atoi(u);
    if (g_register_policy > 0) return g_register_policy;
    if (v.max_registers > 0) return v.max_registers;
    return std::nullopt;
}

// The rule's cap: the most registers v's block size allows.
int rule_cap(const KernelVariant &v) {
    // Registers are allocated to warps in groups of 4 (warp allocation granularity on sm_70 to
    // sm_90): a 9-warp block holds 12 warps' registers. Counting 9 let a 288-thread variant JIT
    // at 224 registers and fail its launch with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (H200).
    const int warps = std::max(1, (v.threads_per_block() + 31) / 32);
    const int allocated_warps = (warps + 3) / 4 * 4;
    return std::clamp(65536 / (allocated_warps * 32) / 8 * 8, 16, 255);
}
}  // namespace

void set_register_policy(int max_registers) {
    user_register_setting();
    g_register_policy = max_registers;
}

std::string register_policy_description() {
    if (const char *u = user_register_setting())
        return std::string("HL_CUDA_JIT_MAX_REGISTERS=") + u + " (from the environment)";
    if (g_register_policy > 0) return std::to_string(g_register_policy) + " per thread for every kernel";
    return "per variant: its max_registers, else 65536 / threads per block (rounded up to 4 warps), down to a "
           "multiple of 8, at most 255";
}

int register_cap(const KernelVariant &v) { return cap_set_on_purpose(v).value_or(rule_cap(v)); }

bool uses_tensor_cores(const std::string &family, const std::string &strategy) {
    return mma_ptx::tensor_core_family(family) || (family == "block" && tensor_core_strategy(strategy));
}

int KernelVariant::jit_register_cap() const {
    if (device != Device::cuda) return 0;
    if (const auto set = cap_set_on_purpose(*this)) return *set;
    return uses_tensor_cores(family, param("strategy")) ? mma_ptx::register_cap(rule_cap(*this)) : rule_cap(*this);
}

void apply_register_cap(const KernelVariant &v) {
    if (v.device != Device::cuda) return;
    // Read when a kernel's module is first loaded. Set only when it changes: a PyTorch model passes here on
    // every call, from a process with other threads (setenv is neither free nor safe beside their getenv).
    const std::string cap = std::to_string(v.jit_register_cap());
    if (const char *now = std::getenv("HL_CUDA_JIT_MAX_REGISTERS"); now && cap == now) return;
    setenv("HL_CUDA_JIT_MAX_REGISTERS", cap.c_str(), 1);
}

}  // namespace blockfuse
