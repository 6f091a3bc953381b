// Test support for the interpreter: a runtime::Sandbox that runs processes
// directly on the host (no isolation), so the interpreter and its drivers can
// be tested without the runtime (the working directory is always a private
// temp dir), and a helper that runs code and collects the emitted lines.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "interp/interp.h"
#include "runtime/runtime.h"

namespace abx::interp::testing {

class HostSandbox final : public runtime::Sandbox {
 public:
  HostSandbox() {
    char dir[] = "/tmp/abx-interp-test-XXXXXX";
    dir_ = ::mkdtemp(dir);
  }
  ~HostSandbox() override {
    for (int tries = 0; tries < 200 && live_processes() > 0; ++tries) {
      {
        std::lock_guard lock(shared_->mutex);
        for (int pid : shared_->pids) ::kill(pid, SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::filesystem::remove_all(dir_);
  }

  const std::filesystem::path& dir() const { return dir_; }
  int live_processes() const {
    std::lock_guard lock(shared_->mutex);
    return static_cast<int>(shared_->pids.size());
  }

  const runtime::SandboxRecord& record() const override { return record_; }

  Result<runtime::Process> spawn(const runtime::ProcessSpec& spec) override {
    int in[2], out[2], err[2], exit_pair[2];
    if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) ||
        ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, exit_pair)) {
      return Error::from_errno("host spawn pipes");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (spec.stdin_pipe) {
      posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    } else {
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    posix_spawn_file_actions_addchdir_np(&actions, dir_.c_str());
    std::vector<std::string> env_strings;
    for (const auto& [name, value] : spec.env) env_strings.push_back(name + "=" + value);
    std::vector<char*> argv, envp;
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    for (auto& e : env_strings) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    for (int fd : {in[0], out[1], err[1], exit_pair[1]}) {
      if (rc != 0 || fd != exit_pair[1]) ::close(fd);
    }
    runtime::Process process;
    process.stdin_fd.reset(in[1]);
    process.stdout_fd.reset(out[0]);
    process.stderr_fd.reset(err[0]);
    process.exit_fd.reset(exit_pair[0]);
    if (rc != 0) return Error{"host spawn", rc, spec.argv[0]};
    process.pid = pid;
    {
      std::lock_guard lock(shared_->mutex);
      shared_->pids.insert(pid);
    }
    std::thread([shared = shared_, pid, report = exit_pair[1]] {
      int status = 0;
      ::waitpid(pid, &status, 0);
      {
        std::lock_guard lock(shared->mutex);
        shared->pids.erase(pid);
      }
      const int32_t wire = status;
      ::send(report, &wire, sizeof wire, MSG_NOSIGNAL);
      ::close(report);
    }).detach();
    return process;
  }

  Status signal(int pid, int signo) override {
    std::lock_guard lock(shared_->mutex);
    if (!shared_->pids.count(pid)) return Error{"host signal", ESRCH, {}};
    if (::kill(pid, signo) != 0) return Error::from_errno("host signal");
    return {};
  }

  int root_fd() const override { return -1; }
  uid_t host_uid(uint32_t uid) const override { return uid; }
  gid_t host_gid(uint32_t gid) const override { return gid; }
  Usage usage() const override { return {}; }

 private:
  runtime::SandboxRecord record_{.id = "hosttest"};
  std::filesystem::path dir_;
  struct Shared {  // outlives the sandbox: the reaper threads use it
    std::mutex mutex;
    std::set<int> pids;
  };
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

// What one execution emitted, parsed, with the arrival time of each line.
struct Run {
  Status status;
  std::vector<nlohmann::json> lines;
  std::vector<std::chrono::steady_clock::time_point> arrived;

  std::string joined(const std::string& type) const {
    std::string text;
    for (const auto& line : lines) {
      if (line["type"] == type) text += line["text"].get<std::string>();
    }
    return text;
  }
  std::string main_text() const {
    for (const auto& line : lines) {
      if (line["type"] == "result" && line.value("is_main_result", false)) return line["text"];
    }
    return "<no main result>";
  }
  nlohmann::json first(const std::string& type) const {
    for (const auto& line : lines) {
      if (line["type"] == type) return line;
    }
    return nullptr;
  }
  bool ended() const { return !lines.empty() && lines.back()["type"] == "end_of_execution"; }
};

inline Run run(Interpreter& interpreter, ExecuteRequest request,
               std::chrono::milliseconds timeout = std::chrono::seconds(20),
               const std::atomic<bool>* cancelled = nullptr) {
  static const std::atomic<bool> never{false};
  Run result;
  result.status = interpreter.execute(
      request,
      [&](const std::string& line) {
        result.lines.push_back(nlohmann::json::parse(line));
        result.arrived.push_back(std::chrono::steady_clock::now());
      },
      cancelled ? *cancelled : never, timeout);
  return result;
}

inline Run run(Interpreter& interpreter, const std::string& code,
               const std::string& context_id = {}) {
  ExecuteRequest request;
  request.code = code;
  request.context_id = context_id;
  return run(interpreter, request);
}

}  // namespace abx::interp::testing
