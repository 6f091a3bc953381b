// One code-interpreter context: a long-lived driver process in the sandbox
// that keeps the language's state across executions. Executions in a context
// run one at a time; a context whose process died starts again on next use.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "interp/interp.h"
#include "interp/languages.h"
#include "runtime/runtime.h"

namespace abx::interp {

struct Prestarted;

inline constexpr const char* kDefaultCwd = "/home/user";
// E2B's code-interpreter server makes these at start-up; GET /contexts lists them.
inline constexpr std::array<const char*, 2> kDefaultLanguages = {"python", "javascript"};

// Runs `check` with /bin/sh in the sandbox; true if it exits 0.
bool sandbox_check_passes(runtime::Sandbox& sandbox, const std::string& check,
                          const std::map<std::string, std::string>& env);

// The environment of every context of a sandbox created with `sandbox_env`.
std::map<std::string, std::string> context_env(std::map<std::string, std::string> sandbox_env);

// A fresh ABX_INTERP_TOKEN, which marks the driver's protocol lines.
std::string new_driver_token();

// Starts `language`'s driver as a context does: as root (as E2B's kernels),
// in `cwd`, with `env` and `token`, its output pipes non-blocking.
Result<runtime::Process> start_driver(runtime::Sandbox& sandbox, const Language& language,
                                      const std::map<std::string, std::string>& env,
                                      const std::string& token, const std::string& cwd);

class Context {
 public:
  Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
          std::map<std::string, std::string> env);
  // Takes over a driver started ahead of need with the same env (the
  // caller checked), so that the first execution finds it running.
  Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
          Prestarted&& prestarted);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ContextInfo& info() const { return info_; }

  Status start();
  // Kills the process at once (even mid-execution) and starts a fresh one.
  Status restart();
  // Kills the process at once; a running execution reports it and returns.
  void kill();

  Status execute(const ExecuteRequest& request, const LineSink& emit,
                 const std::atomic<bool>& cancelled, std::chrono::milliseconds timeout);

 private:
  Status start_locked();
  void stop_locked();
  void report_death(const LineSink& emit, const std::string& how, bool interrupted);

  const ContextInfo info_;
  const Language& language_;
  runtime::Sandbox& sandbox_;
  const std::map<std::string, std::string> env_;
  const std::string token_;
  std::mutex mutex_;  // held for a whole execution
  std::optional<runtime::Process> process_;
  std::atomic<int> pid_{0};  // readable without the mutex, to kill a busy context
};

}  // namespace abx::interp
