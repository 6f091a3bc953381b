#include "daemon/sandbox_adoption.h"

#include <algorithm>

#include "interp/context.h"
#include "interp/interp.h"

namespace abx::daemon {

namespace {

// Those with their pipes handed over, and those the agent lists in band
// (after a resume, those this daemon has already are listed too).
void adopt_contexts(LiveSandbox& live, std::vector<runtime::AdoptedProcess> piped,
                    const std::vector<runtime::ListedProcess>& listed) {
  const bool running = std::any_of(listed.begin(), listed.end(),
                                   [](const auto& c) { return c.in_band && !c.ended; });
  if (piped.empty() && !running) return;
  auto interpreter = interpreter_of(live);
  const size_t found = interpreter->adopt(std::move(piped)) + interpreter->adopt_in_band(listed);
  if (found > 0)
    live.log->add("info", std::to_string(found) +
                              " interpreter context(s) found again after the daemon restarted");
}

}  // namespace

void adopt_running_processes(LiveSandbox& live) {
  auto adopted = live.sandbox->adopt_processes();
  if (!adopted) {
    live.log->add("warn",
                  "the commands and contexts started before the daemon restarted were not found "
                  "again (" +
                      adopted.error().message() + ")");
    return;
  }
  std::vector<runtime::AdoptedProcess> commands, contexts;
  for (auto& process : *adopted)
    (interp::parse_context_label(process.label) ? contexts : commands)
        .push_back(std::move(process));
  live.processes->adopt(std::move(commands));
  // In-band commands and contexts went to no daemon: the agent lists them
  // (an older one cannot, and has none).
  std::vector<runtime::ListedProcess> listed_commands, listed_contexts;
  if (auto listed = live.sandbox->list_processes()) {
    for (auto& process : *listed)
      (interp::parse_context_label(process.label) ? listed_contexts : listed_commands)
          .push_back(std::move(process));
  }
  live.processes->adopt_in_band(listed_commands);
  adopt_contexts(live, std::move(contexts), listed_contexts);
}

std::shared_ptr<interp::Interpreter> interpreter_of(LiveSandbox& live) {
  std::lock_guard lock(live.mutex);
  if (!live.interpreter) {
    live.interpreter =
        interp::Interpreter::create(*live.sandbox, live.row.env_vars, std::move(live.prestarted),
                                    live.sandbox, live.in_band_contexts);
  }
  return live.interpreter;
}

}  // namespace abx::daemon
