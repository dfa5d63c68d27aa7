#include "runtime/process.h"
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace blockfuse {

std::string ProcessResult::describe() const {
    if (timed_out) return "timed out after " + std::to_string(int(seconds)) + " s";
    if (signal) return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
    return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const std::vector<std::string> &argv, const std::string &log_path, double timeout_s,
                          const std::vector<std::string> &extra_env) {
    if (argv.empty()) throw std::runtime_error("run_process: no command");
    std::vector<char *> args;
    for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env_store;
    for (char **e = environ; *e; ++e) env_store.emplace_back(*e);
    for (const auto &e : extra_env) env_store.push_back(e);
    std::vector<char *> env;
    for (auto &e : env_store) env.push_back(e.data());
    env.push_back(nullptr);

    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(std::string("cannot start ") + argv[0] + ": fork failed: " + strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);  // its own group: a timeout kills whatever it started too
        if (!log_path.empty()) {
            int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        execvpe(args[0], args.data(), env.data());
        dprintf(2, "cannot execute %s: %s\n", args[0], strerror(errno));
        _exit(127);
    }
    ProcessResult r;
    int status = 0;
    for (;;) {
        const pid_t done = waitpid(pid, &status, WNOHANG);
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (done == pid) break;
        if (done < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid failed for ") + argv[0]);
        if (timeout_s > 0 && r.seconds > timeout_s) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            r.timed_out = true;
            return r;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(r.seconds < 1 ? 5 : 50));
    }
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    return r;
}

}  // namespace blockfuse
