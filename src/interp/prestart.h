// A default Python context started ahead of need: in a sandbox waiting in
// the warm pool, so that the first run_code of the sandbox's user finds its
// interpreter (IPython takes most of a second to import) already running.
// It is used only when the Interpreter would have started the same process
// (same environment); otherwise it is killed and the context starts on use.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "runtime/runtime.h"

namespace abx::interp {

// The SandboxSpec::warm_up value that asks for a prestarted Python context.
inline constexpr const char* kWarmUpPython = "python";

// Holds no reference to the sandbox: dropping it closes pipes only, and the
// process dies with its sandbox.
struct Prestarted {
  runtime::Process process;
  std::string token;                       // the driver's ABX_INTERP_TOKEN
  std::map<std::string, std::string> env;  // exactly what the driver was given
  std::set<std::string> available;         // default languages whose check passed
  std::string context_id;                  // the default Python context's, once it takes it
};

// Whether sandboxes of this root filesystem are worth a prestarted Python:
// those whose template has IPython (code-interpreter-v1 and templates built
// from it), where a context costs most to start. `base` starts its
// lightweight driver on first use.
bool worth_prestarting(const runtime::RootfsSpec& rootfs);

// Starts the default Python context's driver as a sandbox with no env vars
// of its own would, and waits until it is ready for code; null when that
// fails (the context then starts on first use, as without a pool).
std::shared_ptr<Prestarted> prestart(runtime::Sandbox& sandbox);

}  // namespace abx::interp
