#include "interp/prestart.h"

#include <algorithm>
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

bool wait_until_ready(DriverChannel& channel, const std::string& token) {
  if (!channel.send(kWarmUpRequest)) return false;
  const LineSink ignore = [](const std::string&) {};
  ExecutionStream stream(channel, token, ignore);
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

std::shared_ptr<Prestarted> prestart(runtime::Sandbox& sandbox, bool in_band) {
  auto python = find_language("python");
  if (!python) return nullptr;
  auto prestarted = std::make_shared<Prestarted>();
  prestarted->env = context_env({});
  prestarted->token = new_driver_token();
  prestarted->context_id = new_context_id();
  const ContextLabel label{
      {prestarted->context_id, "python", kDefaultCwd}, prestarted->token, true};
  auto channel = start_driver(sandbox, *python.value(), prestarted->env, label, in_band);
  if (!channel) return nullptr;
  prestarted->pid = channel.value()->pid();
  if (!wait_until_ready(**channel, prestarted->token)) {
    (void)sandbox.signal(prestarted->pid, SIGKILL);
    return nullptr;
  }
  // An in-band channel holds the sandbox: only where its output got to is kept.
  prestarted->output_offset = channel.value()->output_offset();
  if (!in_band) prestarted->pipes = std::move(channel.value());
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

bool still_running(runtime::Sandbox& sandbox, Prestarted& prestarted) {
  if (prestarted.pipes) return !prestarted.pipes->wait(std::chrono::milliseconds(0)).ended;
  auto listed = sandbox.list_processes();
  return listed && std::any_of(listed->begin(), listed->end(), [&](const auto& process) {
           return process.pid == prestarted.pid && !process.ended;
         });
}

std::unique_ptr<DriverChannel> take_channel(runtime::Sandbox& sandbox, Prestarted&& prestarted) {
  if (prestarted.pipes) return std::move(prestarted.pipes);
  return in_band_channel(sandbox, prestarted.pid, prestarted.output_offset);
}

}  // namespace abx::interp
