#include "runtime/errors.h"
#include <HalideRuntime.h>

namespace blockfuse {
namespace {
thread_local std::string g_last_halide_error;
thread_local std::string g_cuda_shim_error;
void halide_error_to_string(void *, const char *msg) {
    g_last_halide_error = msg;
    while (!g_last_halide_error.empty() && g_last_halide_error.back() == '\n') g_last_halide_error.pop_back();
}
}  // namespace

void install_halide_error_handler() { halide_set_error_handler(&halide_error_to_string); }

void clear_halide_error() {
    g_last_halide_error.clear();
    g_cuda_shim_error.clear();
}

void set_cuda_shim_error(const std::string &msg) { g_cuda_shim_error = msg; }

std::string last_halide_error(int rc) {
    if (!g_cuda_shim_error.empty()) return g_cuda_shim_error;
    return g_last_halide_error.empty() ? "Halide error " + std::to_string(rc) : g_last_halide_error;
}

}  // namespace blockfuse
