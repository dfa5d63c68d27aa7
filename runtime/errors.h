// The two kinds of failure every command reports with one clear message: bad input (exit 2) and a
// kernel that cannot or did not run, or gave a wrong result (exit 1).
#pragma once
#include <stdexcept>
#include <string>

namespace blockfuse {

// A workload key, suite, option or knob that is not valid: names the field and the value.
struct WorkloadError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A kernel that cannot be made, loaded or launched, or failed while running.
struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Routes Halide runtime errors into KernelError messages (call once at start-up).
void install_halide_error_handler();
// The last Halide runtime error message, or "Halide error <rc>" if none was recorded.
std::string last_halide_error(int rc);
void clear_halide_error();
// What blockfuse's CUDA driver shim (runtime/cuda_driver.cpp) knows of the CUDA error Halide's runtime is about to
// report (a module rewrite that failed, a launch it refused before the driver saw it): last_halide_error gives this
// message instead of Halide's bare CUDA error, until clear_halide_error.
void set_cuda_shim_error(const std::string &msg);

}  // namespace blockfuse
