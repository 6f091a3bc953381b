// Code-interpreter contexts: long-lived interpreter processes inside a
// sandbox, stateful across executions, speaking E2B's NDJSON result lines
// (spec/e2b-protocol.md §13.2).
// Knows nothing of HTTP: the daemon's port-49999 routes call this and write
// the emitted lines to the response.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "runtime/runtime.h"

namespace abx::interp {

struct ContextInfo {
  std::string id;        // [a-z0-9-]
  std::string language;  // "python", "javascript", "bash"
  std::string cwd;       // default /home/user
};

struct Prestarted;  // interp/prestart.h

struct ExecuteRequest {
  std::string code;
  std::string context_id;                       // empty: the default context of `language`
  std::string language;                         // empty: python
  std::map<std::string, std::string> env_vars;  // applied for this execution only
};

// Receives one E2B NDJSON line at a time: a complete JSON object without the
// trailing newline ({"type":"stdout","text":..,"timestamp":..}, "result",
// "error", "number_of_executions", "keepalive", "end_of_execution").
using LineSink = std::function<void(const std::string& line)>;

class Interpreter {
 public:
  // `sandbox` must outlive the Interpreter: `owner`, when given, is held
  // until the Interpreter and its contexts are gone (an execution may run on
  // after the sandbox's registry entry went, and its context still signals
  // its process). `sandbox_env` are the sandbox's environment variables
  // (from create), given to every context. `prestarted` (from the warm pool)
  // becomes the default Python context if it was started with the same
  // environment, and is killed otherwise. `in_band`: the drivers of the
  // contexts it starts run in band (the sandbox's agent holds their pipes,
  // runtime::Sandbox::spawn_in_band; the daemon's --in-band-commands).
  static std::unique_ptr<Interpreter> create(runtime::Sandbox& sandbox,
                                             std::map<std::string, std::string> sandbox_env,
                                             std::shared_ptr<Prestarted> prestarted = nullptr,
                                             std::shared_ptr<runtime::Sandbox> owner = nullptr,
                                             bool in_band = false);
  virtual ~Interpreter() = default;

  // Errors: unknown language → Error{"context language", EINVAL, "..."}.
  virtual Result<ContextInfo> create_context(const std::string& language,
                                             const std::string& cwd) = 0;
  virtual std::vector<ContextInfo> list_contexts() = 0;
  // Unknown id → Error with errnum ENOENT.
  virtual Status restart_context(const std::string& id) = 0;
  virtual Status remove_context(const std::string& id) = 0;

  // Runs `request` and blocks until it finishes. Emits the NDJSON lines as
  // they happen, ending with {"type":"end_of_execution"}. When `timeout`
  // passes or `cancelled` becomes true (client went away) the running code
  // is interrupted (KeyboardInterrupt), not the context. Thread-safe;
  // executions in one context run one at a time.
  // Errors before any line is emitted: unknown context → ENOENT; both
  // context_id and language given → EINVAL.
  virtual Status execute(const ExecuteRequest& request, const LineSink& emit,
                         const std::atomic<bool>& cancelled, std::chrono::milliseconds timeout) = 0;

  // Takes over the contexts an earlier daemon made in this sandbox: the
  // drivers the sandbox's init handed over whose label is a context's
  // (parse_context_label), with their ids, languages, cwds and state. An
  // execution they were running completes first (Context's resync).
  // Returns how many it took.
  virtual size_t adopt(std::vector<runtime::AdoptedProcess> drivers) = 0;
  // The same for in-band drivers, as the sandbox's agent lists them (those
  // with a context's label that still run), each read on from where the
  // earlier daemon's reads of its output had got to. Those it has already
  // are left alone. Returns how many it took.
  virtual size_t adopt_in_band(const std::vector<runtime::ListedProcess>& listed) = 0;
  // The daemon is stopping: the contexts' processes are left running for the
  // next daemon when this Interpreter goes.
  virtual void leave_running() = 0;
};

}  // namespace abx::interp
