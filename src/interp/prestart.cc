#include "interp/prestart.h"

#include <csignal>
#include <system_error>

#include "interp/context.h"
#include "interp/execution_stream.h"
#include "interp/fd_io.h"
#include "interp/languages.h"

namespace abx::interp {

namespace {

// IPython imports in under a second even on a loaded host; a driver not
// ready by then is not worth holding a pooled sandbox back for.
constexpr std::chrono::seconds kReadyTimeout{30};
constexpr std::chrono::milliseconds kPollInterval{100};

// The driver answers a warm-up request with end_of_execution once its
// runner (IPython) is set up, without counting it as an execution.
constexpr const char* kWarmUpRequest = "{\"warm_up\":true}\n";

bool wait_until_ready(runtime::Process& process, const std::string& token) {
  if (!write_all(process.stdin_fd.get(), kWarmUpRequest)) return false;
  const LineSink ignore = [](const std::string&) {};
  ExecutionStream stream(process, token, ignore);
  const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    switch (stream.step(kPollInterval)) {
      case ExecutionStream::State::kFinished:
        return true;
      case ExecutionStream::State::kDied:
        return false;
      case ExecutionStream::State::kRunning:
        break;
    }
  }
  return false;
}

}  // namespace

bool worth_prestarting(const runtime::RootfsSpec& rootfs) {
  std::error_code ec;
  for (const auto& layer : rootfs.lower_layers)
    if (std::filesystem::exists(layer / "usr/lib/python3/dist-packages/IPython", ec)) return true;
  return false;
}

std::shared_ptr<Prestarted> prestart(runtime::Sandbox& sandbox) {
  auto python = find_language("python");
  if (!python) return nullptr;
  auto prestarted = std::make_shared<Prestarted>();
  prestarted->env = context_env({});
  prestarted->token = new_driver_token();
  prestarted->context_id = new_context_id();
  const ContextLabel label{
      {prestarted->context_id, "python", kDefaultCwd}, prestarted->token, true};
  auto process = start_driver(sandbox, *python.value(), prestarted->env, label);
  if (!process) return nullptr;
  if (!wait_until_ready(*process, prestarted->token)) {
    (void)sandbox.signal(process->pid, SIGKILL);
    return nullptr;
  }
  prestarted->process = std::move(process.value());
  // The checks the first listing would run, so that it runs none.
  for (const char* name : kDefaultLanguages) {
    auto language = find_language(name);
    if (!language) continue;
    const std::string& check = language.value()->availability_check;
    if (check.empty() || sandbox_check_passes(sandbox, check, prestarted->env))
      prestarted->available.insert(name);
  }
  return prestarted;
}

}  // namespace abx::interp
