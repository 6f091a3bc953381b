#include "daemon/sandbox_adoption.h"

#include "interp/context.h"
#include "interp/interp.h"

namespace abx::daemon {

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
  // In-band commands went to no daemon: the agent lists them (an older one
  // cannot, and has none).
  if (auto listed = live.sandbox->list_processes()) live.processes->adopt_in_band(*listed);
  if (contexts.empty()) return;
  live.log->add("info", std::to_string(contexts.size()) +
                            " interpreter context(s) found again after the daemon restarted");
  interpreter_of(live)->adopt(std::move(contexts));
}

std::shared_ptr<interp::Interpreter> interpreter_of(LiveSandbox& live) {
  std::lock_guard lock(live.mutex);
  if (!live.interpreter) {
    live.interpreter = interp::Interpreter::create(*live.sandbox, live.row.env_vars,
                                                   std::move(live.prestarted), live.sandbox);
  }
  return live.interpreter;
}

}  // namespace abx::daemon
