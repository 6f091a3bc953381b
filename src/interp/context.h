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

#include "interp/driver_channel.h"
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

// E2B's context ids are Jupyter kernel UUIDs; ours look the same.
std::string new_context_id();

// What a context's driver carries for the next daemon: the sandbox's init
// keeps it with the driver's pipes (runtime::ProcessSpec::supervise_label)
// and hands both over after a daemon restart, or, for an in-band driver,
// lists it with the driver's pid (runtime::Sandbox::list_processes).
struct ContextLabel {
  ContextInfo info;
  std::string token;        // the driver's ABX_INTERP_TOKEN
  bool is_default = false;  // its language's default context
};
std::string context_label(const ContextLabel& label);
// nullopt: not a context's label (a command's), or not one we would write:
// it comes back from inside the sandbox.
std::optional<ContextLabel> parse_context_label(const std::string& text);

// Starts `language`'s driver as a context does: as root (as E2B's kernels),
// in `label.info.cwd`, with `env` and `label.token`, supervised by the
// sandbox's init (it outlives the daemon). `in_band`: the agent holds its
// pipes (Sandbox::spawn_in_band), else the daemon does (their read ends
// non-blocking).
Result<std::unique_ptr<DriverChannel>> start_driver(runtime::Sandbox& sandbox,
                                                    const Language& language,
                                                    const std::map<std::string, std::string>& env,
                                                    const ContextLabel& label, bool in_band);

class Context {
 public:
  // `in_band`: its driver starts in band (see start_driver).
  Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
          std::map<std::string, std::string> env, bool is_default, bool in_band);
  // Takes over a driver started ahead of need with the same env (the
  // caller checked), so that the first execution finds it running. It is
  // its language's default context.
  Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
          Prestarted&& prestarted, bool in_band);
  // Takes over the driver of a context an earlier daemon made (found again
  // through the sandbox's init, or in its agent's list), with its state.
  // Its first execution waits for what the driver was still running for
  // that daemon (resync_locked).
  Context(const ContextLabel& label, const Language& language, runtime::Sandbox& sandbox,
          std::map<std::string, std::string> env, std::unique_ptr<DriverChannel> adopted,
          bool in_band);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const ContextInfo& info() const { return info_; }

  Status start();
  // Kills the process at once (even mid-execution) and starts a fresh one.
  Status restart();
  // Kills the process at once; a running execution reports it and returns.
  void kill();
  // The daemon is stopping: the process is left running (for the next
  // daemon to adopt) when this context goes.
  void leave_running();

  Status execute(const ExecuteRequest& request, const LineSink& emit,
                 const std::atomic<bool>& cancelled, std::chrono::milliseconds timeout);

 private:
  Status start_locked();
  void stop_locked();
  void report_death(const LineSink& emit, const std::string& how, bool interrupted);
  ContextLabel label() const { return {info_, token_, is_default_}; }
  enum class Resync { kReady, kDied, kKilled };
  Resync resync_locked(const std::atomic<bool>& cancelled, std::chrono::milliseconds timeout);

  const ContextInfo info_;
  const Language& language_;
  runtime::Sandbox& sandbox_;
  const std::map<std::string, std::string> env_;
  const std::string token_;
  const bool is_default_;
  const bool in_band_;           // a driver it starts runs in band
  bool resync_pending_ = false;  // under mutex_
  std::atomic<bool> leave_running_{false};
  std::mutex mutex_;                        // held for a whole execution
  std::unique_ptr<DriverChannel> channel_;  // none until started, and once it died
  std::atomic<int> pid_{0};                 // readable without the mutex, to kill a busy context
};

}  // namespace abx::interp
