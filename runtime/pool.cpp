#include "runtime/pool.h"
#include "generators/pool_windows.h"
#include "runtime/conv2d.h"
#include "runtime/key_fields.h"
#include "runtime/workload.h"
#include "schedules/heuristics.h"
#include "schedules/pool_knobs.h"
#include <algorithm>
#include <climits>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <type_traits>

namespace blockfuse {
namespace {

[[noreturn]] void fail(const std::string &key, const std::string &msg) { key_error(key, msg); }

struct FamilyInfo {
    const char *name;
    PoolKind kind;
    int rank;
    bool adaptive;
};
constexpr FamilyInfo kFamilies[] = {
    {"avgpool1d", PoolKind::avg, 1, false},         {"avgpool2d", PoolKind::avg, 2, false},
    {"avgpool3d", PoolKind::avg, 3, false},         {"maxpool1d", PoolKind::max, 1, false},
    {"maxpool2d", PoolKind::max, 2, false},         {"maxpool3d", PoolKind::max, 3, false},
    {"adaptive_avgpool2d", PoolKind::avg, 2, true}, {"adaptive_maxpool2d", PoolKind::max, 2, true},
};

const FamilyInfo *find_family(const std::string &f) {
    for (const auto &fi : kFamilies)
        if (f == fi.name) return &fi;
    return nullptr;
}

const char *layout_name(int rank) { return rank == 1 ? "ncl" : rank == 2 ? "nchw" : "ncdhw"; }

long long floor_div(long long a, long long b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

using Fields = KeyReader;

int windowed_out(int in, int k, int s, int p, int d, bool ceil) {
    long long num = 1LL * in + 2LL * p - 1LL * d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    long long o = floor_div(num, s) + 1;
    if (ceil && (o - 1) * s >= 1LL * in + p) --o;  // the last window must start inside the input or left padding
    return o < 1 ? 0 : int(std::min<long long>(o, INT_MAX));
}

}  // namespace

std::string PoolWorkload::family() const {
    for (const auto &fi : kFamilies)
        if (fi.kind == kind && fi.rank == rank && fi.adaptive == adaptive) return fi.name;
    return "?";
}

std::string PoolWorkload::op_name() const {
    std::string s = std::string(adaptive ? "Adaptive" : "") + (kind == PoolKind::avg ? "AvgPool" : "MaxPool") +
                    std::to_string(rank) + "d";
    return s + (indices ? "Indices" : "") + "Fwd";
}

int PoolWorkload::out(int a) const {
    if (a >= rank) return 1;
    if (adaptive) return out_size[a];
    return windowed_out(in[a], kernel[a], stride[a], pad[a], dil[a], ceil);
}

long long PoolWorkload::in_plane() const {
    long long p = 1;
    for (int a = 0; a < rank; ++a) p *= in[a];
    return p;
}

long long PoolWorkload::out_plane() const {
    long long p = 1;
    for (int a = 0; a < rank; ++a) p *= out(a);
    return p;
}

int PoolWorkload::taps() const {
    int t = 1;
    for (int a = 0; a < rank; ++a) t *= adaptive ? adaptive_kernel(in[a], out_size[a]) : kernel[a];
    return t;
}

int MeanPoolingWorkload::chunks() const {
    if (!ragged()) return (s + chunk - 1) / chunk;
    int n = 0;
    for (int l : seq_lens) n += (l + chunk - 1) / chunk;
    return n;
}

std::vector<int32_t> MeanPoolingWorkload::offsets() const {
    std::vector<int32_t> o{0};
    for (int l : seq_lens) o.push_back(o.back() + l);
    return o;
}

std::vector<int32_t> MeanPoolingWorkload::chunk_indices() const {
    std::vector<int32_t> ix;
    for (size_t i = 0; i < seq_lens.size(); ++i)
        for (int j = 0; j < (seq_lens[i] + chunk - 1) / chunk; ++j) ix.push_back(int32_t(i)), ix.push_back(j);
    return ix;
}

bool is_mean_pooling_key(const std::string &key) { return key.rfind("mean_pooling:", 0) == 0; }

bool is_pool_key(const std::string &key) {
    return is_mean_pooling_key(key) || find_family(key.substr(0, key.find(':'))) != nullptr;
}

PoolWorkload parse_pool(const std::string &key) {
    KeyFields kf = split_key(key);
    const FamilyInfo *fi = find_family(kf.family);
    if (!fi) fail(key, "family '" + kf.family + "' is not a pooling family");
    PoolWorkload w;
    w.kind = fi->kind, w.rank = fi->rank, w.adaptive = fi->adaptive;
    Fields f(key, kf);
    w.batched = f.take("n", &w.n);
    w.c = f.required("c");
    const auto names = axis_names(w.rank);
    for (int a = 0; a < w.rank; ++a) w.in[a] = f.required(names[a]);
    // A missing window is reported after unknown fields (maxpool1d's `kernel_l` is unknown, not missing).
    const char *window = w.adaptive ? "out" : "kernel";
    const bool has_window = f.per_axis(window, w.rank, w.adaptive ? &w.out_size : &w.kernel);
    if (!w.adaptive) {
        w.stride = w.kernel;  // PyTorch: stride defaults to the kernel size
        f.per_axis("stride", w.rank, &w.stride);
        f.per_axis("pad", w.rank, &w.pad);
        if (w.kind == PoolKind::max) f.per_axis("dil", w.rank, &w.dil);
        w.ceil = f.flag("ceil", false);
        if (w.kind == PoolKind::avg) {
            w.count_include_pad = f.flag("count_include_pad", true);
            if (w.rank > 1 && f.take("divisor", &w.divisor) && w.divisor <= 0)
                fail(key, "field 'divisor' = " + std::to_string(w.divisor) +
                              " must be positive (PyTorch: divisor_override)");
        }
    }
    if (w.kind == PoolKind::max) w.indices = f.flag("return_indices", false);
    std::string layout;
    if (f.take_str("layout", &layout) && layout != layout_name(w.rank))
        fail(key, "field 'layout' = '" + layout + "' is not supported (" + layout_name(w.rank) +
                      ": PyTorch's contiguous layout)");
    w.dtype = f.dtype("dtype", w.dtype);
    f.done();
    if (!has_window)
        fail(key, std::string("missing field '") + window + "'" + (w.rank > 1 ? " (or its per-axis forms)" : ""));

    auto positive = [&](const std::string &name, int v) {
        if (v <= 0) fail(key, "field '" + name + "' = " + std::to_string(v) + " must be positive");
    };
    if (w.batched) positive("n", w.n);
    positive("c", w.c);
    const std::string sfx = w.rank == 1 ? "" : "_";
    for (int a = 0; a < w.rank; ++a) {
        const std::string ax = w.rank == 1 ? "" : names[a];
        positive(names[a], w.in[a]);
        if (w.adaptive) {
            positive("out" + sfx + ax, w.out_size[a]);
            continue;
        }
        positive("kernel" + sfx + ax, w.kernel[a]);
        positive("stride" + sfx + ax, w.stride[a]);
        positive("dil" + sfx + ax, w.dil[a]);
        if (w.pad[a] < 0)
            fail(key, "field 'pad" + sfx + ax + "' = " + std::to_string(w.pad[a]) + " must not be negative");
        if (w.pad[a] > w.kernel[a] / 2)
            fail(key, "field 'pad" + sfx + ax + "' = " + std::to_string(w.pad[a]) + " exceeds half the kernel (" +
                          std::to_string(w.kernel[a]) + "): PyTorch requires pad <= kernel / 2");
        if (w.out(a) < 1)
            fail(key, "empty output along " + names[a] + ": input " + std::to_string(w.in[a]) + " with padding " +
                          std::to_string(w.pad[a]) + " is smaller than the dilated kernel " +
                          std::to_string(w.dil[a] * (w.kernel[a] - 1) + 1));
    }
    const long long lim = INT_MAX;
    if (1LL * w.n * w.c > lim || w.in_plane() > lim || w.in_plane() * w.n * w.c > lim)
        fail(key, "input tensor has more than 2^31 elements");
    if (w.out_plane() * w.n * w.c > lim) fail(key, "output tensor has more than 2^31 elements");
    return w;
}

std::string to_key(const PoolWorkload &w) {
    std::ostringstream o;
    o << w.family() << ":";
    if (w.batched) o << "n=" << w.n << ",";
    o << "c=" << w.c;
    const auto names = axis_names(w.rank);
    for (int a = 0; a < w.rank; ++a) o << "," << names[a] << "=" << w.in[a];
    if (w.adaptive) {
        o << axis_fields("out", w.rank, w.out_size);
    } else {
        o << axis_fields("kernel", w.rank, w.kernel) << axis_fields("stride", w.rank, w.stride)
          << axis_fields("pad", w.rank, w.pad);
        if (w.dil != std::array<int, 3>{1, 1, 1}) o << axis_fields("dil", w.rank, w.dil);
        if (w.ceil) o << ",ceil=1";
        if (!w.count_include_pad) o << ",count_include_pad=0";
        if (w.divisor) o << ",divisor=" << w.divisor;
    }
    if (w.indices) o << ",return_indices=1";
    o << ",layout=" << layout_name(w.rank) << ",dtype=" << dtype_name(w.dtype);
    return o.str();
}

MeanPoolingWorkload parse_mean_pooling(const std::string &key) {
    KeyFields kf = split_key(key);
    if (kf.family != "mean_pooling") fail(key, "family '" + kf.family + "' is not 'mean_pooling'");
    Fields f(key, kf);
    MeanPoolingWorkload w;
    for (auto [name, dst] :
         {std::pair<const char *, int *>{"b", &w.b}, {"s", &w.s}, {"h", &w.h}, {"d", &w.d}, {"chunk", &w.chunk}}) {
        *dst = f.required(name);
        if (*dst <= 0) fail(key, std::string("field '") + name + "' = " + std::to_string(*dst) + " must be positive");
    }
    std::string lens;
    if (f.take_str("seq_lens", &lens)) {
        // Terms joined by '+', each LEN or LENxCOUNT (LEN repeated COUNT times).
        std::stringstream ss(lens);
        long long total = 0;
        auto bad = [&](const std::string &term) {
            fail(key,
                 "field 'seq_lens' = '" + lens + "': term '" + term + "' is not LEN or LENxCOUNT (positive integers)");
        };
        for (std::string term; std::getline(ss, term, '+');) {
            const auto x = term.find('x');
            const std::string a = term.substr(0, x), b = x == std::string::npos ? "1" : term.substr(x + 1);
            for (const std::string &part : {a, b})
                if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
                    bad(term);
            const int len = std::stoi(a), count = std::stoi(b);
            if (len <= 0 || count <= 0) bad(term);
            if (count > w.s)
                fail(key, "field 'seq_lens' = '" + lens + "' has more sequences than s = " + std::to_string(w.s));
            w.seq_lens.insert(w.seq_lens.end(), count, len);
            total += 1LL * len * count;
        }
        if (lens.empty() || lens.back() == '+') fail(key, "field 'seq_lens' = '" + lens + "' has an empty term");
        if (total != w.s)
            fail(key, "field 'seq_lens' = '" + lens + "' sums to " + std::to_string(total) +
                          ", not s = " + std::to_string(w.s));
    }
    w.dtype = f.dtype("dtype", w.dtype);
    w.out_dtype = f.dtype("out_dtype", w.dtype);
    f.done();
    const long long lim = INT_MAX;
    if (1LL * w.b * w.s > lim || 1LL * w.b * w.s * w.h > lim || 1LL * w.b * w.s * w.h * w.d > lim)
        fail(key, "input tensor has more than 2^31 elements");
    return w;
}

std::string to_key(const MeanPoolingWorkload &w) {
    std::ostringstream o;
    o << "mean_pooling:b=" << w.b << ",s=" << w.s << ",h=" << w.h << ",d=" << w.d << ",chunk=" << w.chunk;
    if (w.ragged()) {
        o << ",seq_lens=";
        for (size_t i = 0; i < w.seq_lens.size();) {
            size_t j = i;
            while (j < w.seq_lens.size() && w.seq_lens[j] == w.seq_lens[i]) ++j;
            o << (i ? "+" : "") << w.seq_lens[i];
            if (j - i > 1) o << "x" << (j - i);
            i = j;
        }
    }
    o << ",dtype=" << dtype_name(w.dtype) << ",out_dtype=" << dtype_name(w.out_dtype);
    return o.str();
}

// ---------------------------------------------------------------------------------------------
// Tensors

namespace {
std::vector<int> spatial_dims(const PoolWorkload &w, bool output) {
    std::vector<int> d;
    for (int a = w.rank - 1; a >= 0; --a) d.push_back(output ? w.out(a) : w.in[a]);  // innermost first
    d.push_back(w.c);
    d.push_back(w.n);
    return d;
}
}  // namespace

PoolTensors make_pool_tensors(const PoolWorkload &w) {
    PoolTensors t;
    t.input = make_tensor(w.dtype, spatial_dims(w, false));
    t.output = make_tensor(w.dtype, spatial_dims(w, true));
    if (w.indices) t.indices = Halide::Runtime::Buffer<int64_t>(spatial_dims(w, true));
    return t;
}

void poison_outputs(PoolTensors &t, DType dtype) {
    poison(t.output, dtype);
    if (t.indices.data()) {
        t.indices.fill(-1);
        t.indices.set_host_dirty();
    }
}

void randomize(PoolTensors &t, const PoolWorkload &w, std::mt19937_64 &rng) {
    fill_uniform(t.input, w.dtype, rng, -1.0, 1.0);
    poison_outputs(t, w.dtype);
}

MeanPoolingTensors make_mean_pooling_tensors(const MeanPoolingWorkload &w) {
    MeanPoolingTensors t;
    t.input = make_tensor(w.dtype, {w.d, w.h, w.s, w.b});
    t.output = make_tensor(w.out_dtype, {w.d, w.h, w.chunks(), w.b});
    if (w.ragged()) {
        const auto off = w.offsets(), ix = w.chunk_indices();
        t.offsets = Halide::Runtime::Buffer<int32_t>(int(off.size()));
        std::copy(off.begin(), off.end(), t.offsets.data());
        t.chunk_index = Halide::Runtime::Buffer<int32_t>(2, w.chunks());
        std::copy(ix.begin(), ix.end(), t.chunk_index.data());
        t.offsets.set_host_dirty();
        t.chunk_index.set_host_dirty();
    }
    return t;
}

void randomize(MeanPoolingTensors &t, const MeanPoolingWorkload &w, std::mt19937_64 &rng) {
    fill_uniform(t.input, w.dtype, rng, -1.0, 1.0);
    poison(t.output, w.out_dtype);
}

// ---------------------------------------------------------------------------------------------
// Kernels

namespace {
void set_int(std::map<std::string, std::string> &p, const std::string &k, long long v) { p[k] = std::to_string(v); }

std::string shape_name(const PoolWorkload &w) {
    std::string s = w.family();
    const char *axes = "zyx";
    if (!w.adaptive) {
        s += "_k";
        for (int a = 0; a < w.rank; ++a) s += (a ? "x" : "") + std::to_string(w.kernel[a]);
        s += "s" + std::to_string(w.stride[w.rank - 1]);
    }
    s += fmt::format("_n{}c{}", w.n, w.c);
    for (int a = 0; a < w.rank; ++a) s += fmt::format("{}{}", axes[3 - w.rank + a], w.in[a]);
    return s;
}
}  // namespace

KernelVariant pool_kernel_for(const PoolWorkload &w, Device device, const ScheduleChoice &s) {
    std::map<std::string, std::string> p{{"op", w.kind == PoolKind::avg ? "avg" : "max"}};
    set_int(p, "indices", w.indices);
    set_int(p, "adaptive", w.adaptive);
    set_int(p, "rank", w.rank);
    set_int(p, "batch", w.n);
    set_int(p, "channels", w.c);
    const char *axes[] = {"x", "y", "z"};
    for (int i = 0; i < w.rank; ++i) {  // kernel axis i (x innermost) is the workload's axis rank-1-i
        const int a = w.rank - 1 - i;
        const std::string ax = axes[i];
        set_int(p, "in_" + ax, w.in[a]);
        set_int(p, "out_" + ax, w.out(a));
        set_int(p, "kernel_" + ax, w.adaptive ? adaptive_kernel(w.in[a], w.out_size[a]) : w.kernel[a]);
        if (w.adaptive) continue;
        set_int(p, "stride_" + ax, w.stride[a]);
        set_int(p, "pad_" + ax, w.pad[a]);
        set_int(p, "dil_" + ax, w.dil[a]);
    }
    if (w.kind == PoolKind::avg && !w.adaptive) {
        set_int(p, "count_include_pad", w.count_include_pad);
        set_int(p, "divisor", w.divisor);
    }
    KernelVariant v =
        make_variant("pool", fmt::format("{}_{}_{}", shape_name(w), dtype_name(w.dtype), device_name(device)), device,
                     w.dtype, p, s.knobs, s.max_registers, s.why);
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

KernelVariant pool_kernel_for(const MeanPoolingWorkload &w, Device device, const ScheduleChoice &s) {
    const char *types[] = {"float32", "float16", "bfloat16"};
    std::map<std::string, std::string> p{{"op", "mean"}, {"out_storage", types[int(w.out_dtype)]}};
    set_int(p, "batch", w.b);
    set_int(p, "seq", w.s);
    set_int(p, "heads", w.h);
    set_int(p, "dim", w.d);
    set_int(p, "chunk", w.chunk);
    set_int(p, "ragged", w.ragged());
    if (w.ragged()) {
        set_int(p, "sequences", int(w.seq_lens.size()));
        set_int(p, "chunks", w.chunks());
    }
    KernelVariant v =
        make_variant("pool",
                     fmt::format("mean_pooling_{}b{}s{}h{}d{}c{}_{}_{}_{}", w.ragged() ? "ragged_" : "", w.b, w.s, w.h,
                                 w.d, w.chunk, dtype_name(w.dtype), dtype_name(w.out_dtype), device_name(device)),
                     device, w.dtype, p, s.knobs, s.max_registers, s.why);
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

namespace {
long long tile_count(long long extent, int tile) { return (extent + tile - 1) / tile; }

// A launch of one thread per tile: threads per block and the grid of ceil(tiles / threads per block) blocks
// against the limits.
std::string tile_launch_error(const KernelVariant &v, long long tiles, const LaunchLimits &limits) {
    LaunchShape shape;
    shape.threads = v.threads_per_block();
    shape.grid[0] = (tiles + shape.threads - 1) / shape.threads;
    return launch_limit_violation(shape, limits);
}

void call(const KernelVariant &v, void **args, const std::string &what) {
    apply_register_cap(v);
    const LoadedKernel &k = v.load();
    clear_halide_error();
    const int rc = k.call(args);
    if (rc != 0) throw KernelError("kernel " + v.name + " failed on " + what + ": " + last_halide_error(rc));
}

void check_launch(const KernelVariant &v, const std::string &why, const std::string &what) {
    if (!why.empty())
        throw KernelError("launch rejected before running: kernel " + v.name + " on " + what + ": " + why);
}
}  // namespace

bool pool_window_lane_constant(const PoolWorkload &w, int tile_x, int vec, bool guard_x) {
    const int X = w.rank - 1, out = w.out(X);
    if (vec <= 1 || w.adaptive || out <= tile_x) return true;
    auto lane = [&](long long start) { return ((start * w.stride[X] - w.pad[X]) % vec + vec) % vec; };
    const long long last = out - tile_x;  // the shifted edge tile, or the last whole one
    return (1LL * tile_x * w.stride[X]) % vec == 0 && (guard_x || lane(last) == lane(0));
}

std::string pool_launch_error(const KernelVariant &v, const PoolWorkload &w, const LaunchLimits &limits) {
    if (v.device == Device::cpu) return "";
    // The input window's vectors (generators/pool_algorithm.h): whole vectors along every input row.
    if (const int vec = v.knob("vec"); vec > 1 && w.in[w.rank - 1] % vec)
        return fmt::format("vec = {} must divide the input width {}", vec, w.in[w.rank - 1]);
    const int ox = w.out(w.rank - 1), oy = w.rank >= 2 ? w.out(w.rank - 2) : 1;
    // A staged window whose lane depends on the thread is indexed at run time: it lives in local memory, whose
    // vector stores Halide 21's CUDA backend aligns wrongly (CUDA_ERROR_MISALIGNED_ADDRESS on the H200).
    if (v.knob("stage") && !pool_window_lane_constant(w, v.knob("tile_x"), v.knob("vec"), v.knob("guard_x")))
        return fmt::format("tile_x = {} with stage = 1 and vec = {}: the x tiles' input windows start at different "
                           "lanes of a vector (stride {}, output width {}{}); use vec = 1, stage = 0, {}another tile",
                           v.knob("tile_x"), v.knob("vec"), w.stride[w.rank - 1], ox,
                           v.knob("guard_x") ? "" : ", the edge tile shifted inwards",
                           v.knob("guard_x") ? "" : "guard_x = 1 or ");
    const int ty = w.rank >= 2 ? v.knob("tile_y") : 1;  // rank 1: tile_y is not used
    // Edge tiles shift inwards (schedules/pool_schedule.cpp): a tile may not exceed the output (nor a guarded x
    // tile: every output it computes past the row is work for nothing).
    if (v.knob("tile_x") > ox || ty > oy)
        return fmt::format("its {}x{} output tile exceeds the output ({}x{})", v.knob("tile_x"), v.knob("tile_y"), ox,
                           oy);
    // stage_out: a block's rows (1-D: its chunk of a row) within the output, its staged tiles within shared memory.
    if (const int rows = v.knob("stage_out")) {
        const PoolStagedBlock b =
            pool_staged_block(w.rank, ox, v.knob("threads"), v.knob("tile_x"), v.knob("tile_y"), rows);
        if (w.rank >= 2 && rows > oy) return fmt::format("stage_out = {} rows exceed the output's {}", rows, oy);
        if (w.rank >= 2 && ty > rows)
            return fmt::format("tile_y = {} exceeds the stage_out = {} rows of a block", ty, rows);
        if (w.rank == 1 && b.outputs > ox)
            return fmt::format("stage_out: a block's {} outputs (threads x tile_x) exceed the output width {}",
                               b.outputs, ox);
        const long long bytes = b.outputs * (dtype_bytes(w.dtype) + (w.indices ? 8 : 0));
        if (bytes > limits.max_shared)
            return fmt::format("stage_out = {}: {} bytes of staged outputs exceed the {} bytes of shared memory a "
                               "block may use",
                               rows, bytes, limits.max_shared);
    }
    const long long tiles =
        1LL * w.n * w.c * (w.rank >= 3 ? w.out(0) : 1) * tile_count(oy, ty) * tile_count(ox, v.knob("tile_x"));
    return tile_launch_error(v, tiles, limits);
}

std::string pool_launch_error(const KernelVariant &v, const MeanPoolingWorkload &w, const LaunchLimits &limits) {
    if (v.device == Device::cpu) return "";
    return tile_launch_error(v, 1LL * w.b * w.chunks() * w.h * tile_count(w.d, v.knob("tile_x")), limits);
}

void run_pool(const KernelVariant &v, const PoolWorkload &w, PoolTensors &t) {
    const std::string what = to_key(w);
    check_launch(v, pool_launch_error(v, w, launch_limits(v.device)), what);
    void *args[] = {t.input.raw_buffer(), t.output.raw_buffer(), w.indices ? t.indices.raw_buffer() : nullptr};
    call(v, args, what);
}

void run_mean_pooling(const KernelVariant &v, const MeanPoolingWorkload &w, MeanPoolingTensors &t) {
    const std::string what = to_key(w);
    check_launch(v, pool_launch_error(v, w, launch_limits(v.device)), what);
    std::vector<void *> args{t.input.raw_buffer()};
    if (w.ragged()) args.push_back(t.offsets.raw_buffer()), args.push_back(t.chunk_index.raw_buffer());
    args.push_back(t.output.raw_buffer());
    call(v, args.data(), what);
}

// ---------------------------------------------------------------------------------------------
// Reference and comparison

namespace {

// PyTorch's loops, per output: a 3-D window (axes padded to three, outermost first).
struct RefResult {
    std::vector<double> value, scale;
    std::vector<int64_t> index;
};

RefResult pool_reference(const PoolWorkload &w, const Tensor &input) {
    const int R = w.rank;
    std::array<int, 3> in{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, p{0, 0, 0}, d{1, 1, 1}, out{1, 1, 1}, os{1, 1, 1};
    for (int a = 0; a < R; ++a) {
        const int A = 3 - R + a;  // padded axis
        in[A] = w.in[a], k[A] = w.kernel[a], s[A] = w.stride[a], p[A] = w.pad[a], d[A] = w.dil[a], out[A] = w.out(a);
        os[A] = w.out_size[a];
    }
    const long long plane = 1LL * in[0] * in[1] * in[2];
    RefResult r;
    const size_t total = size_t(w.outputs());
    r.value.resize(total);
    r.scale.resize(total);
    if (w.indices) r.index.resize(total);
    const void *data = input.data();
    size_t o = 0;
    for (long long nc = 0; nc < 1LL * w.n * w.c; ++nc)
        for (int oz = 0; oz < out[0]; ++oz)
            for (int oy = 0; oy < out[1]; ++oy)
                for (int ox = 0; ox < out[2]; ++ox, ++o) {
                    const int oo[3] = {oz, oy, ox};
                    int lo[3], hi[3], step[3];
                    long long pool = 1, count = 1;
                    for (int A = 0; A < 3; ++A) {
                        if (w.adaptive) {
                            lo[A] = adaptive_start(oo[A], in[A], os[A]);
                            hi[A] = adaptive_end(oo[A], in[A], os[A]);
                            step[A] = 1;
                            pool *= hi[A] - lo[A];
                        } else if (w.kind == PoolKind::max) {
                            lo[A] = oo[A] * s[A] - p[A];
                            hi[A] = std::min(lo[A] + (k[A] - 1) * d[A] + 1, in[A]);
                            while (lo[A] < 0) lo[A] += d[A];
                            step[A] = d[A];
                        } else {
                            lo[A] = oo[A] * s[A] - p[A];
                            hi[A] = std::min(lo[A] + k[A], in[A] + p[A]);
                            pool *= hi[A] - lo[A];
                            lo[A] = std::max(lo[A], 0);
                            hi[A] = std::min(hi[A], in[A]);
                            step[A] = 1;
                        }
                        count *= std::max(0, hi[A] - lo[A]);
                    }
                    const long long base = nc * plane;
                    if (w.kind == PoolKind::max) {
                        double best = -std::numeric_limits<double>::infinity();
                        int64_t best_i = (1LL * lo[0] * in[1] + lo[1]) * in[2] + lo[2];
                        for (int z = lo[0]; z < hi[0]; z += step[0])
                            for (int y = lo[1]; y < hi[1]; y += step[1])
                                for (int x = lo[2]; x < hi[2]; x += step[2]) {
                                    const int64_t i = (1LL * z * in[1] + y) * in[2] + x;
                                    const double v = load_as_double(data, w.dtype, size_t(base + i));
                                    if (v > best || std::isnan(v)) best = v, best_i = i;
                                }
                        r.value[o] = best;
                        if (w.indices) r.index[o] = best_i;
                        continue;
                    }
                    double sum = 0, mag = 0;
                    for (int z = lo[0]; z < hi[0]; ++z)
                        for (int y = lo[1]; y < hi[1]; ++y)
                            for (int x = lo[2]; x < hi[2]; ++x) {
                                const double v =
                                    load_as_double(data, w.dtype, size_t(base + (1LL * z * in[1] + y) * in[2] + x));
                                sum += v, mag += std::fabs(v);
                            }
                    const double div = count == 0                            ? 1.0
                                       : w.divisor                           ? w.divisor
                                       : (w.adaptive || w.count_include_pad) ? double(pool)
                                                                             : double(count);
                    r.value[o] = count == 0 ? 0.0 : sum / div;
                    r.scale[o] = mag / div;
                }
    return r;
}

// Max values and indices must match exactly (a NaN result by a NaN); `unwritten` counts outputs left
// as poisoned where the reference is a number.
Comparison compare_exact(const std::vector<double> &out, const std::vector<double> &ref, const int64_t *idx,
                         const std::vector<int64_t> &ref_idx) {
    Comparison c;
    c.elements = out.size();
    double num = 0, den = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        const bool nan_ok = std::isnan(out[i]) && std::isnan(ref[i]);
        bool bad = !(out[i] == ref[i] || nan_ok);
        if (std::isnan(out[i]) && !std::isnan(ref[i])) ++c.unwritten;
        if (idx && idx[i] != ref_idx[i]) bad = true;
        if (bad) {
            if (++c.violations == 1 || c.max_err_over_tol < 1) {
                c.max_err_over_tol = std::numeric_limits<double>::infinity();
                c.worst = i, c.worst_out = out[i], c.worst_ref = ref[i];
            }
        }
        if (std::isfinite(out[i]) && std::isfinite(ref[i]))
            num += (out[i] - ref[i]) * (out[i] - ref[i]), den += ref[i] * ref[i];
    }
    c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (c.violations && idx && ref_idx.size() > c.worst)
        c.note = fmt::format("at output {} the kernel's argmax is {}, the reference's {}", c.worst, idx[c.worst],
                             ref_idx[c.worst]);
    return c;
}

}  // namespace

Comparison check_pool(const PoolWorkload &w, PoolTensors &t) {
    const RefResult ref = pool_reference(w, t.input);
    const std::vector<double> out = to_doubles(t.output, w.dtype);  // copies back (and reports a failed kernel)
    if (w.kind == PoolKind::avg) return compare(out, ref.value, ref.scale, w.taps(), w.dtype);
    if (w.indices) {
        clear_halide_error();
        if (int rc = t.indices.copy_to_host())
            throw KernelError("copying the indices from the device failed: " + last_halide_error(rc));
    }
    return compare_exact(out, ref.value, w.indices ? t.indices.data() : nullptr, ref.index);
}

Comparison check_mean_pooling(const MeanPoolingWorkload &w, MeanPoolingTensors &t) {
    const std::vector<double> out = to_doubles(t.output, w.out_dtype);
    std::vector<double> ref(out.size()), scale(out.size());
    const auto off = w.ragged() ? w.offsets() : std::vector<int32_t>{};
    const auto ix = w.ragged() ? w.chunk_indices() : std::vector<int32_t>{};
    const void *x = t.input.data();
    size_t o = 0;
    for (int b = 0; b < w.b; ++b)
        for (int g = 0; g < w.chunks(); ++g) {
            int lo = g * w.chunk, hi = std::min(lo + w.chunk, w.s);
            if (w.ragged()) {
                lo = off[size_t(ix[2 * g])] + ix[2 * g + 1] * w.chunk;
                hi = std::min(lo + w.chunk, off[size_t(ix[2 * g]) + 1]);
            }
            for (int h = 0; h < w.h; ++h)
                for (int d = 0; d < w.d; ++d, ++o) {
                    double sum = 0, mag = 0;
                    for (int s = lo; s < hi; ++s) {
                        const double v = load_as_double(x, w.dtype, ((size_t(b) * w.s + s) * w.h + h) * w.d + d);
                        sum += v, mag += std::fabs(v);
                    }
                    ref[o] = sum / (hi - lo);
                    scale[o] = mag / (hi - lo);
                }
        }
    return compare(out, ref, scale, w.chunk, w.out_dtype);
}

KernelCost pool_cost(const PoolWorkload &w, const std::string &name) {
    const double e = dtype_bytes(w.dtype), outs = double(w.outputs());
    const double flops = outs * (w.taps() + (w.kind == PoolKind::avg ? 1 : 0));
    const double bytes = e * (double(w.n) * w.c * w.in_plane() + outs) + (w.indices ? 8.0 * outs : 0.0);
    return {name, flops, bytes};
}

KernelCost pool_cost(const MeanPoolingWorkload &w, const std::string &name) {
    const double outs = double(w.b) * w.chunks() * w.h * w.d;
    const double flops = double(w.b) * w.s * w.h * w.d + outs;
    double bytes = dtype_bytes(w.dtype) * double(w.b) * w.s * w.h * w.d + dtype_bytes(w.out_dtype) * outs;
    if (w.ragged()) bytes += 4.0 * (w.seq_lens.size() + 1 + 2.0 * w.chunks());
    return {name, flops, bytes};
}

// ---------------------------------------------------------------------------------------------
// The Ops

namespace {

class PoolData : public TensorOpData<PoolData, PoolWorkload, PoolTensors> {
public:
    PoolData(const PoolWorkload &w, std::mt19937_64 &rng) : TensorOpData(w, rng, make_pool_tensors) {}
    void run(const KernelVariant &v) override { run_pool(v, w_, t_); }
    Comparison check() override { return check_pool(w_, t_); }
    std::unique_ptr<OpData> with_fresh_output() const override {
        auto d = std::make_unique<PoolData>(*this);
        d->t_ = *inputs_;
        d->t_.output = make_tensor(w_.dtype, shape_of(inputs_->output));
        if (w_.indices) d->t_.indices = Halide::Runtime::Buffer<int64_t>(shape_of(inputs_->output));
        poison_outputs(d->t_, w_.dtype);
        return d;
    }
};

class MeanPoolingData : public TensorOpData<MeanPoolingData, MeanPoolingWorkload, MeanPoolingTensors> {
public:
    MeanPoolingData(const MeanPoolingWorkload &w, std::mt19937_64 &rng)
        : TensorOpData(w, rng, make_mean_pooling_tensors) {}
    void run(const KernelVariant &v) override { run_mean_pooling(v, w_, t_); }
    Comparison check() override { return check_mean_pooling(w_, t_); }
    std::unique_ptr<OpData> with_fresh_output() const override {
        auto d = std::make_unique<MeanPoolingData>(*this);
        d->t_ = with_own_output(*inputs_, w_.out_dtype);
        return d;
    }
};

Problem problem_of(const PoolWorkload &w) {
    Problem p;
    const int R = w.rank;
    p.n = w.n, p.c = p.k = w.c;
    p.w = w.in[R - 1], p.h = R >= 2 ? w.in[R - 2] : 1, p.d = R >= 3 ? w.in[0] : 1;
    auto k = [&](int a) { return w.adaptive ? adaptive_kernel(w.in[a], w.out_size[a]) : w.kernel[a]; };
    p.s = k(R - 1);
    p.r = R >= 2 ? k(R - 2) : 1;
    p.t = R >= 3 ? w.kernel[0] : 1;
    if (!w.adaptive) {
        p.stride_w = w.stride[R - 1], p.dil_w = w.dil[R - 1];
        if (R >= 2) p.stride_h = w.stride[R - 2], p.dil_h = w.dil[R - 2];
        if (R >= 3) p.stride_d = w.stride[0];
    }
    return p;
}

Problem problem_of(const MeanPoolingWorkload &w) {
    Problem p;
    p.n = w.b, p.h = w.s, p.w = w.h, p.c = p.k = w.d, p.r = w.chunk, p.s = 1;
    return p;
}

// Both pooling families: one kernel ("direct") per workload, generated for its exact shape.
template <class W, class Data>
class PoolingOp : public Op {
public:
    explicit PoolingOp(const W &w) : w_(w) {}
    std::string key() const override { return to_key(w_); }
    std::string generator() const override { return "pool"; }
    DType dtype() const override { return w_.dtype; }
    std::vector<std::string> strategies() const override { return {"direct"}; }
    ScheduleChoice heuristic(const std::string &, Device d) const override { return pool_heuristic(w_, d); }
    KernelVariant kernel_for(const std::string &, Device d, const ScheduleChoice &s) const override {
        return pool_kernel_for(w_, d, s);
    }
    std::vector<const KernelVariant *> named_variants(Device) const override { return {}; }
    std::vector<KernelCost> costs(const KernelVariant &v) const override { return {pool_cost(w_, v.name)}; }
    Problem problem() const override { return problem_of(w_); }
    std::unique_ptr<OpData> data(std::mt19937_64 &rng) const override { return std::make_unique<Data>(w_, rng); }
    std::string candidate_error(const KernelVariant &v, const LaunchLimits &limits) const override {
        return pool_launch_error(v, w_, limits);
    }
    std::vector<std::string> tunable_knobs(const std::string &, Device d) const override {
        if (d == Device::cpu) return {"cpu_vec"};
        if (std::is_same_v<W, MeanPoolingWorkload>) return {"threads", "tile_x", "unroll"};
        std::vector<std::string> knobs{"threads", "tile_x", "tile_y", "stage", "vec", "guard_x", "stage_out"};
        if (d == Device::cuda) knobs.push_back("store_vec");  // OpenCL has no vector stores (pool_generator.cpp)
        return knobs;
    }

private:
    W w_;
};

}  // namespace

std::unique_ptr<Op> pool_op(const std::string &key) {
    if (is_mean_pooling_key(key))
        return std::make_unique<PoolingOp<MeanPoolingWorkload, MeanPoolingData>>(parse_mean_pooling(key));
    return std::make_unique<PoolingOp<PoolWorkload, PoolData>>(parse_pool(key));
}

}  // namespace blockfuse
