// The two kinds of failure every command reports with one clear message: bad input (exit 2) and a
// kernel that cannot or did not run, or gave a wrong result (exit 1).
#pragma once
#include <stdexcept>

namespace blockfuse {

// A workload key, suite, option or knob that is not valid: names the field and the value.
struct WorkloadError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A kernel that cannot be made, loaded or launched, or failed while running.
struct KernelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace blockfuse
