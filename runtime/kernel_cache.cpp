#include "runtime/kernel_cache.h"
#include "runtime/call_memory.h"
#include "build_info.h"
#include "runtime/errors.h"
#include "runtime/process.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string_view>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <sys/file.h>
#include <thread>
#include <unistd.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace blockfuse {
namespace fs = std::filesystem;

namespace {

// How long one generator run may take before it counts as hung (the largest fused kernels take ~20 s).
constexpr double kGeneratorTimeoutSeconds = 900;

std::string env_or(const char *name, const std::string &fallback) {
    const char *v = std::getenv(name);
    return v && *v ? std::string(v) : fallback;
}

// The folder libblockfuse_runtime.so was loaded from: the build tree's runtime/, or a folder of carried binaries.
fs::path library_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void *>(&library_dir), &info) && info.dli_fname)
        return fs::path(info.dli_fname).parent_path();
    return fs::current_path();
}

// `name` beside the library if it is there (carried binaries), else one level up (the build tree:
// runtime/ beside kernels/ and generators/).
std::string beside_library(const std::string &name) {
    const fs::path here = library_dir() / name;
    return fs::is_directory(here) ? here.string() : (library_dir().parent_path() / name).string();
}

std::string now_utc() {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    return buf;
}

nlohmann::json read_json(const fs::path &p) {
    std::ifstream in(p);
    nlohmann::json j;
    try {
        in >> j;
    } catch (const std::exception &e) {
        throw KernelError("unreadable kernel description " + p.string() + ": " + e.what());
    }
    return j;
}

// The first line of a build log that looks like the reason (Halide's "Error:" / a CompileError text).
std::string first_error_line(const fs::path &log) {
    std::ifstream in(log);
    std::string line, fallback;
    while (std::getline(in, line)) {
        if (line.find("rror") != std::string::npos) return line;
        if (!line.empty()) fallback = line;
    }
    return fallback;
}

// Halide's warning that the pipeline fails an assertion on every call (a bounds or constraint check it could decide
// at compile time), with the assertion: such a kernel is a build failure, not one to fail at its first launch.
std::string certain_assertion_failure(const fs::path &log) {
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line))
        if (line.find("guaranteed to fail an assertion at runtime") != std::string::npos) {
            std::string assertion;
            std::getline(in, assertion);
            return "Halide: the pipeline is guaranteed to fail an assertion at runtime: " + assertion;
        }
    return "";
}

// A lock held for the lifetime of the object (flock on root/<hash>.lock). The file is removed before
// it is released: whoever waits on it, or opens a new one, then finds the kernel's folder in place
// (every holder checks for it after taking the lock).
struct FileLock {
    int fd = -1;
    fs::path path;
    explicit FileLock(const fs::path &p) : path(p) {
        fd = open(p.c_str(), O_CREAT | O_RDWR, 0644);
        if (fd >= 0) flock(fd, LOCK_EX);
    }
    ~FileLock() {
        if (fd >= 0) {
            std::error_code ec;
            fs::remove(path, ec);
            flock(fd, LOCK_UN);
            close(fd);
        }
    }
};

nlohmann::json metadata_json(const halide_filter_metadata_t *md) {
    nlohmann::json args = nlohmann::json::array();
    if (!md) return args;
    for (int i = 0; i < md->num_arguments; ++i) {
        const auto &a = md->arguments[i];
        const char *kind = a.kind == halide_argument_kind_input_scalar   ? "input scalar"
                           : a.kind == halide_argument_kind_input_buffer ? "input buffer"
                                                                         : "output buffer";
        const char *code = a.type.code == halide_type_int     ? "int"
                           : a.type.code == halide_type_uint  ? "uint"
                           : a.type.code == halide_type_float ? "float"
                                                              : "bfloat";
        args.push_back({{"name", a.name},
                        {"kind", kind},
                        {"type", std::string(code) + std::to_string(a.type.bits)},
                        {"dimensions", a.dimensions}});
    }
    return args;
}

struct Library {
    int (*argv)(void **) = nullptr;
    const halide_filter_metadata_t *metadata = nullptr;
};

Library open_library(const fs::path &so, const std::string &fn, const std::string &name) {
    void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw KernelError("kernel " + name + ": cannot load " + so.string() + ": " + dlerror());
    Library lib;
    lib.argv = reinterpret_cast<int (*)(void **)>(dlsym(h, (fn + "_argv").c_str()));
    auto md = reinterpret_cast<const halide_filter_metadata_t *(*)()>(dlsym(h, (fn + "_metadata").c_str()));
    if (!lib.argv || !md) throw KernelError("kernel " + name + ": " + so.string() + " lacks " + fn + "_argv/_metadata");
    lib.metadata = md();
    return lib;
}

// The autoscheduler a request names (its "autoscheduler=NAME" param), or "".
std::string requested_autoscheduler(const KernelRequest &r) {
    for (const auto &p : r.params)
        if (p.rfind("autoscheduler=", 0) == 0) return p.substr(14);
    return "";
}

std::vector<std::string> generator_command(const KernelRequest &r, const std::string &gen, const std::string &out,
                                           const std::string &emit, const std::string &base, bool no_runtime) {
    std::vector<std::string> cmd{gen,
                                 "-g",
                                 r.generator,
                                 "-f",
                                 r.function_name(),
                                 "-o",
                                 out,
                                 "-e",
                                 emit,
                                 "-n",
                                 base,
                                 "target=" + r.target + (no_runtime ? "-no_runtime" : "")};
    if (const std::string a = requested_autoscheduler(r); !a.empty()) {
        cmd.push_back("-p");
        cmd.push_back(autoscheduler_plugin(a));
    }
    cmd.insert(cmd.end(), r.params.begin(), r.params.end());
    return cmd;
}

std::string command_text(const std::vector<std::string> &cmd) {
    std::string s;
    for (const auto &a : cmd) s += (s.empty() ? "" : " ") + a;
    return s;
}

std::string generator_executable(const KernelRequest &r) {
    const std::string dir = generator_dir();
    if (dir.empty()) return "";
    const fs::path p = fs::path(dir) / (r.generator + ".generator");
    return fs::exists(p) ? p.string() : "";
}

std::string no_generator_message(const KernelRequest &r) {
    return "kernel " + r.name + " is neither prebuilt (" + prebuilt_kernel_dir() + ") nor in the kernel cache (" +
           kernel_cache_dir() + "), and this machine has no " + r.generator +
           ".generator to make it (BLOCKFUSE_GENERATOR_DIR): fill the cache where Halide is, `./run cache fill`, "
           "and bring it here";
}

}  // namespace

std::string KernelRequest::hash() const {
    std::string text = generator + "\n" + target + "\nhalide " + BLOCKFUSE_HALIDE_VERSION + "\nsources " +
                       BLOCKFUSE_SOURCE_HASH + "\n";
    std::vector<std::string> sorted = params;
    std::sort(sorted.begin(), sorted.end());
    for (const auto &p : sorted) text += p + "\n";
    const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
    return buf;
}

std::string kernel_cache_dir() {
    if (const char *c = std::getenv("BLOCKFUSE_KERNEL_CACHE"); c && *c) return c;
    const std::string xdg = env_or("XDG_CACHE_HOME", env_or("HOME", "/tmp") + "/.cache");
    return xdg + "/blockfuse/kernels";
}

std::string prebuilt_kernel_dir() { return env_or("BLOCKFUSE_PREBUILT_DIR", beside_library("kernels")); }

std::string generator_dir() {
    const std::string d = env_or("BLOCKFUSE_GENERATOR_DIR", beside_library("generators"));
    return fs::is_directory(d) ? d : "";
}

std::string autoscheduler_plugin(const std::string &name) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return env_or("BLOCKFUSE_AUTOSCHEDULER_DIR", BLOCKFUSE_HALIDE_LIB_DIR) + "/libautoschedule_" + lower + ".so";
}

std::string host_target() {
    // Halide's runtime knows these x86 features (runtime/x86_cpu_features.cpp): the string names the
    // ones it can use here, in Halide's spelling.
    static const std::pair<halide_target_feature_t, const char *> features[] = {
        {halide_target_feature_sse41, "sse41"},
        {halide_target_feature_avx, "avx"},
        {halide_target_feature_f16c, "f16c"},
        {halide_target_feature_fma, "fma"},
        {halide_target_feature_avx2, "avx2"},
        {halide_target_feature_avx512, "avx512"},
        {halide_target_feature_avx512_knl, "avx512_knl"},
        {halide_target_feature_avx512_skylake, "avx512_skylake"},
        {halide_target_feature_avx512_cannonlake, "avx512_cannonlake"},
        {halide_target_feature_avx512_sapphirerapids, "avx512_sapphirerapids"},
    };
    static const std::string target = [] {
        std::string t = "x86-64-linux";
        constexpr int words = (halide_target_feature_end + 63) / 64;
        for (const auto &[f, name] : features) {
            uint64_t mask[words] = {};
            mask[f / 64] = uint64_t(1) << (f % 64);
            if (halide_can_use_target_features(words, mask)) t += std::string("-") + name;
        }
        return t;
    }();
    return target;
}

std::string gpu_target(const std::string &device) {
    const std::string host = "x86-64-linux-sse41-avx-f16c-fma-avx2";
    return device == "cuda" ? host + "-cuda-cuda_capability_80" : host + "-opencl";
}

BuildOutcome ensure_built(const KernelRequest &r, const std::string &root_dir, double limit_s) {
    const fs::path root(root_dir), final_dir = root / r.hash();
    BuildOutcome out;
    auto existing = [&]() -> bool {
        if (!fs::exists(final_dir / "description.json")) return false;
        const nlohmann::json d = read_json(final_dir / "description.json");
        out.ok = d.value("status", "") == "ok";
        out.seconds = d.value("seconds", 0.0);
        out.message = out.ok
                          ? final_dir.string()
                          : "generating kernel " + r.name + " failed earlier (" + (final_dir / "build.log").string() +
                                "): " + d.value("error", "") + " -- `./run cache clear --failed` retries it";
        return true;
    };
    if (existing()) return out;
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) {
        out.message = "cannot create the kernel cache " + root.string() + ": " + ec.message();
        return out;
    }
    FileLock lock(root / (r.hash() + ".lock"));
    if (existing()) return out;  // another process built it while this one waited
    const std::string gen = generator_executable(r);
    if (gen.empty()) {
        out.message = no_generator_message(r);
        return out;
    }
    if (const std::string a = requested_autoscheduler(r); !a.empty() && !fs::exists(autoscheduler_plugin(a))) {
        out.message =
            "kernel " + r.name + ": Halide's " + a + " autoscheduler plugin " + autoscheduler_plugin(a) +
            " is not there (BLOCKFUSE_AUTOSCHEDULER_DIR: the folder of the Halide wheel's libautoschedule_*.so)";
        return out;
    }
    static std::atomic<int> counter{0};
    const fs::path tmp = root / (".tmp-" + r.hash() + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp);
    const fs::path log = tmp / "build.log";
    const auto cmd = generator_command(r, gen, tmp.string(), "object", "kernel", true);
    std::ofstream(log) << "$ " << command_text(cmd) << "\n";
    const auto start = std::chrono::steady_clock::now();
    ProcessResult pr = run_process(cmd, log.string(), limit_s > 0 ? limit_s : kGeneratorTimeoutSeconds);
    std::string error;
    if (pr.timed_out && limit_s > 0) {  // the caller's limit, not the kernel's failure: nothing is recorded
        fs::remove_all(tmp, ec);
        out.built = true;
        out.seconds = pr.seconds;
        out.message = fmt::format("generating kernel {} ran past the build limit of {:g} s (stopped)", r.name, limit_s);
        return out;
    }
    if (!pr.ok()) {
        error = r.generator + ".generator " + pr.describe() + ": " + first_error_line(log);
    } else if (error = certain_assertion_failure(log); !error.empty()) {
        fs::remove(tmp / "kernel.o", ec);
    } else {
        const std::vector<std::string> link{BLOCKFUSE_CXX, "-shared", "-o", (tmp / "kernel.so").string(),
                                            (tmp / "kernel.o").string()};
        std::ofstream(log, std::ios::app) << "$ " << command_text(link) << "\n";
        pr = run_process(link, log.string(), 120);
        if (!pr.ok()) error = "linking " + pr.describe() + ": " + first_error_line(log);
        fs::remove(tmp / "kernel.o", ec);
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    nlohmann::json d = r.description;
    d["name"] = r.name;
    d["generator"] = r.generator;
    d["function"] = r.function_name();
    d["target"] = r.target;
    d["generator_params"] = r.params;
    d["halide_version"] = BLOCKFUSE_HALIDE_VERSION;
    d["source_hash"] = BLOCKFUSE_SOURCE_HASH;
    d["created"] = now_utc();
    d["seconds"] = out.seconds;
    d["status"] = error.empty() ? "ok" : "failed";
    if (!error.empty()) {
        d["error"] = error;
    } else {
        try {
            d["arguments"] = metadata_json(open_library(tmp / "kernel.so", r.function_name(), r.name).metadata);
        } catch (const KernelError &e) {
            d["status"] = "failed";
            d["error"] = error = e.what();
        }
    }
    std::ofstream(tmp / "description.json") << d.dump(1) << "\n";
    fs::rename(tmp, final_dir, ec);
    if (ec) fs::remove_all(tmp, ec);  // another writer got there first: theirs stands
    out.built = true;
    out.ok = error.empty();
    out.message =
        out.ok ? final_dir.string()
               : "generating kernel " + r.name + " failed (" + (final_dir / "build.log").string() + "): " + error;
    return out;
}

std::vector<BuildOutcome> ensure_built_all(const std::vector<KernelRequest> &rs, const std::string &root, int jobs,
                                           double limit_s) {
    std::vector<BuildOutcome> out(rs.size());
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (int j = 0; j < std::max(1, jobs); ++j)
        pool.emplace_back([&] {
            for (size_t i; (i = next++) < rs.size();) out[i] = ensure_built(rs[i], root, limit_s);
        });
    for (auto &t : pool) t.join();
    return out;
}

// A library loaded a second time from the same path is the same library (dlopen counts references): its
// pipeline's state, where Halide keeps the CUDA module compiled at its first call, would be shared. A copy under
// another name (removed once open) is a library of its own.
fs::path private_copy(const fs::path &so, int jit_cap) {
    const fs::path dir = fs::temp_directory_path() / fmt::format("blockfuse-{}", getpid());
    fs::create_directories(dir);
    const fs::path copy = dir / fmt::format("{}.regs{}.so", so.parent_path().filename().string(), jit_cap);
    fs::copy_file(so, copy, fs::copy_options::overwrite_existing);
    return copy;
}

const LoadedKernel &load_kernel(const KernelRequest &r, int jit_cap) {
    static std::mutex m;
    static std::map<std::string, LoadedKernel> loaded;  // by hash and cap
    static std::map<std::string, int> opened;           // libraries opened per hash
    std::lock_guard<std::mutex> lock(m);
    const std::string h = r.hash(), id = h + " regs " + std::to_string(jit_cap);
    if (auto it = loaded.find(id); it != loaded.end()) return it->second;
    LoadedKernel k;
    fs::path dir;
    for (const auto &[root, origin] : {std::pair{prebuilt_kernel_dir(), "prebuilt"}, {kernel_cache_dir(), "cache"}}) {
        if (!fs::exists(fs::path(root) / h / "description.json")) continue;
        dir = fs::path(root) / h;
        k.origin = origin;
        const nlohmann::json d = read_json(dir / "description.json");
        if (d.value("status", "") != "ok")
            throw KernelError("generating kernel " + r.name + " failed earlier (" + (dir / "build.log").string() +
                              "): " + d.value("error", "") + " -- `./run cache clear --failed` retries it");
        break;
    }
    if (dir.empty()) {
        const BuildOutcome b = ensure_built(r, kernel_cache_dir());
        if (!b.ok) throw KernelError(b.message);
        dir = fs::path(kernel_cache_dir()) / h;
        char buf[64];
        std::snprintf(buf, sizeof buf, "generated in %.1f s", b.seconds);
        k.origin = b.built ? buf : "cache";
    }
    const bool shared = opened[h]++ == 0;
    const fs::path so = shared ? dir / "kernel.so" : private_copy(dir / "kernel.so", jit_cap);
    const Library lib = open_library(so, r.function_name(), r.name);
    if (!shared) {  // open: the mapping outlives the name
        std::error_code ec;
        fs::remove(so, ec);
        fs::remove(so.parent_path(), ec);  // the folder too, once empty
    }
    k.argv = lib.argv;
    k.metadata = lib.metadata;
    k.dir = dir.string();
    return loaded.emplace(id, k).first->second;
}

int LoadedKernel::call(void **args) const {
    call_memory::arguments(metadata, args);
    return argv(args);
}

void export_kernel(const KernelRequest &r, const std::string &out_dir) {
    const std::string gen = generator_executable(r);
    if (gen.empty()) throw KernelError(no_generator_message(r));
    fs::create_directories(out_dir);
    const fs::path log = fs::path(out_dir) / (r.name + ".build.log");
    const bool gpu = r.target.find("-cuda") != std::string::npos || r.target.find("-opencl") != std::string::npos;
    const auto cmd = generator_command(
        r, gen, out_dir, std::string("static_library,c_header,stmt,") + (gpu ? "device_code" : "assembly"), r.name,
        true);
    std::ofstream(log) << "$ " << command_text(cmd) << "\n";
    ProcessResult pr = run_process(cmd, log.string(), kGeneratorTimeoutSeconds);
    if (!pr.ok()) throw KernelError("generating " + r.name + ": " + pr.describe() + ": " + first_error_line(log));
    const fs::path device_code = fs::path(out_dir) / (r.name + ".device_code");
    if (fs::exists(device_code))
        fs::rename(device_code,
                   fs::path(out_dir) / (r.name + (r.target.find("-cuda") != std::string::npos ? ".ptx" : ".cl")));
    // One runtime for every kernel of a target, as the project links it. strict_float is a kernel's feature
    // (pooling's): Halide refuses it for the runtime, which sets its own fast-math flags.
    constexpr std::string_view strict = "-strict_float";
    std::string rt_target = r.target;
    if (const size_t at = rt_target.find(strict); at != std::string::npos) rt_target.erase(at, strict.size());
    const std::vector<std::string> rt{gen,     "-r", "halide_runtime", "-o",
                                      out_dir, "-e", "static_library", "target=" + rt_target};
    std::ofstream(log, std::ios::app) << "$ " << command_text(rt) << "\n";
    if (!(pr = run_process(rt, log.string(), kGeneratorTimeoutSeconds)).ok())
        throw KernelError("generating the Halide runtime for " + rt_target + ": " + pr.describe() + ": " +
                          first_error_line(log));
    // The description, with the arguments as the cached build of the same kernel reports them.
    const LoadedKernel &k = load_kernel(r);
    nlohmann::json d = read_json(fs::path(k.dir) / "description.json");
    d["files"] = {r.name + ".a", r.name + ".h", r.name + ".stmt",
                  gpu ? r.name + (r.target.find("-cuda") != std::string::npos ? ".ptx" : ".cl") : r.name + ".s",
                  "halide_runtime.a"};
    d["function"] = r.function_name();
    std::ofstream(fs::path(out_dir) / (r.name + ".json")) << d.dump(1) << "\n";
}

std::vector<CacheEntry> list_cache(const std::string &root) {
    std::vector<CacheEntry> out;
    if (!fs::is_directory(root)) return out;
    for (const auto &e : fs::directory_iterator(root)) {
        if (!e.is_directory() || e.path().filename().string().rfind(".tmp-", 0) == 0) continue;
        CacheEntry c;
        c.hash = e.path().filename().string();
        c.dir = e.path().string();
        if (fs::exists(e.path() / "description.json")) {
            const nlohmann::json d = read_json(e.path() / "description.json");
            c.name = d.value("name", "?");
            c.status = d.value("status", "?");
            c.created = d.value("created", "");
            c.seconds = d.value("seconds", 0.0);
        }
        for (const auto &f : fs::recursive_directory_iterator(e.path()))
            if (f.is_regular_file()) c.bytes += f.file_size();
        out.push_back(c);
    }
    std::sort(out.begin(), out.end(), [](const CacheEntry &a, const CacheEntry &b) { return a.name < b.name; });
    return out;
}

size_t clear_cache(const std::string &root, bool failed_only) {
    size_t n = 0;
    if (!fs::is_directory(root)) return 0;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(root)) {
        const std::string name = e.path().filename().string();
        const bool tmp = name.rfind(".tmp-", 0) == 0, lock = e.path().extension() == ".lock";
        bool remove = tmp || (!failed_only && (e.is_directory() || lock));
        if (!remove && failed_only && e.is_directory() && fs::exists(e.path() / "description.json"))
            remove = read_json(e.path() / "description.json").value("status", "") == "failed";
        if (!remove) continue;
        fs::remove_all(e.path(), ec);
        n += !tmp && !lock;
    }
    return n;
}

}  // namespace blockfuse
