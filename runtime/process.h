// Child processes: the kernel generator and the linker run in their own processes (libHalide and
// PoCL in one process crashed), so do the tuner's measuring workers (a crash or hang stays theirs).
#pragma once
#include <string>
#include <vector>

namespace blockfuse {

struct ProcessResult {
    int exit_code = -1;    // the child's exit status; -1 if it did not exit normally
    int signal = 0;        // the signal that ended it, if any
    bool timed_out = false;
    double seconds = 0;
    bool ok() const { return exit_code == 0 && !timed_out && signal == 0; }
    std::string describe() const;  // "exit 1", "killed by signal 11", "timed out after 60 s"
};

// Runs argv[0] (a path, or a name looked up in PATH) with its stdout and stderr appended to
// `log_path` (empty: inherited). timeout_s > 0: the child (and its process group) is killed after that
// long. Throws std::runtime_error only if the child cannot be started.
ProcessResult run_process(const std::vector<std::string> &argv, const std::string &log_path, double timeout_s = 0,
                          const std::vector<std::string> &extra_env = {});

}  // namespace blockfuse
