// Child processes: the kernel generator and the linker run in their own processes (libHalide and
// PoCL in one process crashed), so do the tuner's measuring workers (a crash or hang stays theirs).
#pragma once
#include <string>
#include <vector>

namespace blockfuse {

struct ProcessResult {
    int exit_code = -1;  // the child's exit status; -1 if it did not exit normally
    int signal = 0;      // the signal that ended it, if any
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

namespace blockfuse {

// A long-lived child spoken to in lines: requests on its stdin, one reply line each on its stdout (its
// stderr to `log_path`). The tuner's measuring worker: a candidate that crashes or hangs takes the child
// down, not the tuner, which starts another.
class LineChild {
public:
    LineChild() = default;
    ~LineChild() { stop(); }
    LineChild(const LineChild &) = delete;
    LineChild &operator=(const LineChild &) = delete;
    // Throws std::runtime_error if it cannot be started.
    void start(const std::vector<std::string> &argv, const std::string &log_path,
               const std::vector<std::string> &extra_env = {});
    bool running() const { return pid_ > 0; }
    // Sends `line` and waits up to timeout_s for the reply. On a reply: true, *reply set. Else false and
    // *ended says how: the child exited or was killed by a signal (crash), or it timed out (then it is
    // killed); either way it is stopped.
    bool request(const std::string &line, double timeout_s, std::string *reply, ProcessResult *ended);
    void stop();  // closes its stdin, waits briefly, then kills its process group

private:
    int pid_ = -1, to_child_ = -1, from_child_ = -1;
    std::string buffered_;
    ProcessResult reap(bool kill_it);
};

}  // namespace blockfuse
