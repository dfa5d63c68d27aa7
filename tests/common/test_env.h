// The environment of the tests that run generated kernels (test_generated and its [gpu] cases):
//   BLOCKFUSE_TEST_DEVICES  cpu,opencl (default) | cuda
//   BLOCKFUSE_TEST_SEED     the seed of the random shapes and data (default: a fresh one, printed)
//   BLOCKFUSE_TEST_FILL_ONLY=1  only generate the kernels into the cache (a machine with Halide, for a GPU
//                           host without it: fill, carry the cache, run there)
#pragma once
#include "runtime/cuda_driver.h"
#include "runtime/errors.h"
#include "runtime/kernel_registry.h"
#include <HalideRuntimeOpenCL.h>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace blockfuse::test {

inline std::string env(const char *name, const std::string &fallback) {
    const char *v = std::getenv(name);
    return v && *v ? v : fallback;
}

inline uint64_t test_seed() {
    static const uint64_t seed = [] {
        const std::string s = env("BLOCKFUSE_TEST_SEED", "");
        return s.empty() ? uint64_t(std::random_device{}()) << 32 ^ std::random_device{}() : std::stoull(s);
    }();
    return seed;
}

inline std::vector<Device> test_devices() {
    std::vector<Device> out;
    std::stringstream list(env("BLOCKFUSE_TEST_DEVICES", "cpu,opencl"));
    for (std::string part; std::getline(list, part, ',');) {
        Device d;
        if (!parse_device(part, &d)) throw std::runtime_error("BLOCKFUSE_TEST_DEVICES: '" + part + "' is no device");
        out.push_back(d);
    }
    return out;
}

inline bool testing_device(Device d) {
    const auto all = test_devices();
    return std::find(all.begin(), all.end(), d) != all.end();
}

inline bool fill_only() { return env("BLOCKFUSE_TEST_FILL_ONLY", "") == "1"; }

// main() of a property test: 77 (ctest: skipped) where CUDA is asked for and absent. Halide's runtime errors
// become the KernelError messages the checks read (Halide's own handler aborts the process).
template <class Run>
int run_on_test_devices(Run &&run) {
    install_halide_error_handler();
    const auto devices = test_devices();
    const bool cuda = std::find(devices.begin(), devices.end(), Device::cuda) != devices.end();
    if (cuda && !fill_only()) {
        if (!cuda::device().available) {
            std::cout << "SKIP: " << cuda::device().reason << "\n";
            return 77;
        }
        cuda::install_halide_hooks();
        cuda::make_current();
    }
    if (std::find(devices.begin(), devices.end(), Device::opencl) != devices.end() &&
        !std::getenv("HL_OCL_DEVICE_TYPE"))
        halide_opencl_set_device_type("cpu");
    const int rc = run();
    if (cuda && !fill_only()) cuda::release_halide_allocation_cache();
    return rc;
}

}  // namespace blockfuse::test
