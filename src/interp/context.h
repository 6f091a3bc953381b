// One code-interpreter context: a long-lived driver process in the sandbox
// that keeps the language's state across executions. Executions in a context
// run one at a time; a context whose process died starts again on next use.
#pragma once

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

class Context {
 public:
  Context(ContextInfo info, const Language& language, runtime::Sandbox& sandbox,
          std::map<std::string, std::string> env);
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
