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

#include "interp/driver_channel.h"
#include "runtime/runtime.h"

namespace abx::interp {

// The SandboxSpec::warm_up value that asks for a prestarted Python context.
inline constexpr const char* kWarmUpPython = "python";

// Holds no reference to the sandbox: dropping it closes pipes only, and the
// process dies with its sandbox.
struct Prestarted {
  int pid = 0;
  std::unique_ptr<DriverChannel> pipes;    // null: the driver runs in band
  uint64_t output_offset = 0;              // in band: its output read so far
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
// of its own would (in band or not, as the daemon's contexts start), and
// waits until it is ready for code; null when that fails (the context then
// starts on first use, as without a pool).
std::shared_ptr<Prestarted> prestart(runtime::Sandbox& sandbox, bool in_band);

// Whether its driver still runs, to be taken over.
bool still_running(runtime::Sandbox& sandbox, Prestarted& prestarted);
// Its driver's channel, for the context that takes it over.
std::unique_ptr<DriverChannel> take_channel(runtime::Sandbox& sandbox, Prestarted&& prestarted);

}  // namespace abx::interp
