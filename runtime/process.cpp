#include "runtime/process.h"
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <algorithm>
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

namespace {
// execve's argv and envp: the command, and this process's environment with extra_env after it. The strings
// are all stored before any pointer into them is taken.
struct ExecArgs {
    std::vector<std::string> env_store;
    std::vector<char *> args, env;
    ExecArgs(const std::vector<std::string> &argv, const std::vector<std::string> &extra_env) {
        for (const auto &a : argv) args.push_back(const_cast<char *>(a.c_str()));
        args.push_back(nullptr);
        for (char **e = environ; *e; ++e) env_store.emplace_back(*e);
        for (const auto &e : extra_env) env_store.push_back(e);
        for (auto &e : env_store) env.push_back(e.data());
        env.push_back(nullptr);
    }
};
}  // namespace

ProcessResult run_process(const std::vector<std::string> &argv, const std::string &log_path, double timeout_s,
                          const std::vector<std::string> &extra_env) {
    if (argv.empty()) throw std::runtime_error("run_process: no command");
    const ExecArgs exec(argv, extra_env);

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
        execvpe(exec.args[0], exec.args.data(), exec.env.data());
        dprintf(2, "cannot execute %s: %s\n", exec.args[0], strerror(errno));
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

namespace blockfuse {

void LineChild::start(const std::vector<std::string> &argv, const std::string &log_path,
                      const std::vector<std::string> &extra_env) {
    stop();
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("cannot start " + argv.at(0) + ": pipe failed");
    const ExecArgs exec(argv, extra_env);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("cannot start " + argv[0] + ": fork failed: " + strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (!log_path.empty()) {
            int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
            if (fd >= 0) dup2(fd, 2), close(fd);
        }
        for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
        execvpe(exec.args[0], exec.args.data(), exec.env.data());
        dprintf(2, "cannot execute %s: %s\n", exec.args[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    signal(SIGPIPE, SIG_IGN);  // a dead child's stdin: write() fails instead of killing us
    pid_ = pid, to_child_ = in[1], from_child_ = out[0];
    buffered_.clear();
}

ProcessResult LineChild::reap(bool kill_it) {
    ProcessResult r;
    if (pid_ <= 0) return r;
    if (kill_it) kill(-pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    if (to_child_ >= 0) close(to_child_);
    if (from_child_ >= 0) close(from_child_);
    pid_ = to_child_ = from_child_ = -1;
    return r;
}

bool LineChild::request(const std::string &line, double timeout_s, std::string *reply, ProcessResult *ended) {
    *ended = ProcessResult{};
    if (pid_ <= 0) throw std::runtime_error("LineChild::request: not running");
    const std::string msg = line + "\n";
    if (write(to_child_, msg.data(), msg.size()) != ssize_t(msg.size())) {
        *ended = reap(true);
        return false;
    }
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        if (size_t nl = buffered_.find('\n'); nl != std::string::npos) {
            *reply = buffered_.substr(0, nl);
            buffered_.erase(0, nl + 1);
            return true;
        }
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > timeout_s) {
            *ended = reap(true);
            ended->timed_out = true;
            ended->seconds = waited;
            return false;
        }
        pollfd p{from_child_, POLLIN, 0};
        const int ms = int(std::min(200.0, (timeout_s - waited) * 1e3)) + 1;
        if (poll(&p, 1, ms) <= 0) continue;
        char buf[4096];
        const ssize_t n = read(from_child_, buf, sizeof buf);
        if (n > 0) {
            buffered_.append(buf, size_t(n));
        } else if (n == 0 || errno != EINTR) {  // end of file: the child is gone
            *ended = reap(false);
            ended->seconds = waited;
            return false;
        }
    }
}

void LineChild::stop() {
    if (pid_ <= 0) return;
    close(to_child_);
    to_child_ = -1;
    for (int i = 0; i < 50; ++i) {  // up to 0.5 s to finish and exit on its own
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            if (from_child_ >= 0) close(from_child_);
            pid_ = from_child_ = -1;
            return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    reap(true);
}

}  // namespace blockfuse
