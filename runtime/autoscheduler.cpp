#include "runtime/autoscheduler.h"
#include "schedules/heuristics.h"
#include <algorithm>
#include <thread>
#include <unistd.h>

namespace blockfuse {

namespace {

// Machine params. The CPU's are read from this host: its cores, and for Mullapudi2016's tiling the
// per-core L2 (the L3 a VM reports is the whole socket's, shared with other tenants). Anderson2021's
// are the H200's, fixed because CUDA kernels are built on a machine without the GPU (gpu_target):
// 132 SMs, 48 KB of shared memory per block (Halide launches without the opt-in to more), 228 KB per
// SM, 32 resident blocks and 64 resident warps per SM.
std::vector<std::pair<std::string, std::string>> machine_params(const std::string &name) {
    if (name == "Anderson2021")
        return {{"parallelism", "132"},
                {"shared_memory_limit_kb", "48"},
                {"shared_memory_sm_limit_kb", "228"},
                {"active_block_limit", "32"},
                {"active_warp_limit", "64"}};
    const std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
    if (name == "Mullapudi2016") {
        const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        return {{"parallelism", cores},
                {"last_level_cache_size", std::to_string(l2 > 0 ? l2 : 1L << 20)},
                {"balance", "40"}};
    }
    return {{"parallelism", cores}};
}

bool schedules_gpu(const std::string &name) { return name == "Anderson2021"; }

}  // namespace

const std::vector<std::string> &autoscheduler_names() {
    static const std::vector<std::string> names = {"Mullapudi2016", "Adams2019", "Li2018", "Anderson2021"};
    return names;
}

void check_autoscheduler_name(const std::string &name) {
    const auto &names = autoscheduler_names();
    if (std::find(names.begin(), names.end(), name) != names.end()) return;
    std::string list;
    for (const auto &n : names) list += (list.empty() ? "" : ", ") + n;
    throw WorkloadError("--autoscheduler '" + name + "' is not one of " + list);
}

void check_autoscheduler_device(const std::string &name, Device dev) {
    check_autoscheduler_name(name);
    if (dev == Device::opencl) throw WorkloadError("--autoscheduler " + name + ": wired for the CPU and CUDA only");
    if (schedules_gpu(name) != (dev == Device::cuda))
        throw WorkloadError("--autoscheduler " + name + " schedules " +
                            (schedules_gpu(name) ? "GPUs only" : "CPUs only") + " here (on " + device_name(dev) + ": " +
                            (dev == Device::cuda ? "Anderson2021" : "Mullapudi2016, Adams2019 or Li2018") + ")");
}

KernelVariant autoscheduled_kernel(const Op &op, const std::string &name, Device dev) {
    check_autoscheduler_device(name, dev);
    const std::map<std::string, int> estimates = op.shape_estimates();
    if (estimates.empty())
        throw WorkloadError("--autoscheduler: the " + op.generator() +
                            " generator gives the autoschedulers no shape "
                            "estimates (wired for conv2d and the block families)");
    const std::vector<std::string> strategies = op.strategies();
    const std::string strategy = std::find(strategies.begin(), strategies.end(), "layer_by_layer") != strategies.end()
                                     ? "layer_by_layer"
                                     : strategies.front();
    ScheduleChoice base;  // the knobs are ignored under an autoscheduler; the heuristic's keep its static params
    try {
        base = op.heuristic(strategy, dev);
    } catch (const WorkloadError &) {
        // no heuristic kernel within this device's limits: the declared defaults carry the static params
    }
    KernelVariant v = op.kernel_for(strategy, dev, base);
    v.params["autoscheduler"] = name;
    std::string why = "Halide's " + name + " autoscheduler (";
    for (const auto &[k, val] : machine_params(name)) {
        v.params["autoscheduler." + k] = val;
        why += (why.back() == '(' ? "" : ", ") + k + "=" + val;
    }
    for (const auto &[k, val] : estimates) v.knobs[k] = val;
    v.why = why + "; the workload's shape as estimates)";
    // Halide's own default cap on CUDA (the register policy would size it by the heuristic's block, not
    // the autoscheduler's)
    v.max_registers = dev == Device::cuda ? 64 : 0;
    v.name = v.name.substr(0, v.name.find('@')) + "_" + name;
    v.name += "@" + v.request().hash().substr(0, 8);
    return v;
}

std::string kernel_provider(const KernelVariant &v) {
    const std::string a = v.param("autoscheduler");
    return a.empty() ? "blockfuse" : "halide-autoscheduler-" + a;
}

}  // namespace blockfuse
