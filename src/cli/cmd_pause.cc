// pause and resume: E2B's pause, and its connect, which resumes; stop, which
// Docker users type and which means either (it asks).
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "cli/terminal.h"

namespace abx::cli {
namespace {

enum class StopAs { kAsk, kPause, kKill };

// "pause" or "kill" from the person at the terminal; "" when neither.
std::string ask_pause_or_kill(const std::string& id) {
  std::cerr << "stop " << id << ": [p]ause it (abx resume brings it back) or [k]ill it? "
            << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return "";
  if (answer == "p" || answer == "pause") return "pause";
  if (answer == "k" || answer == "kill") return "kill";
  return "";
}

Result<int> run_stop(const std::string& id, StopAs as) {
  std::string what = as == StopAs::kPause ? "pause" : as == StopAs::kKill ? "kill" : "";
  if (what.empty() && !terminal::is_tty(STDIN_FILENO))
    return Error{"stop means pause or kill here: abx stop " + id + " --pause (abx resume " + id +
                 " brings it back) or abx stop " + id + " --kill (destroys it)"};
  if (what.empty()) what = ask_pause_or_kill(id);
  if (what.empty()) return 0;  // neither: nothing done
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const ControlPlane control(*endpoint);
  if (what == "kill") {
    if (Status s = control.kill_sandbox(id); !s) return s.error();
    std::cout << "killed " << id << "\n";
    return 0;
  }
  auto paused = control.pause_sandbox(id, true);
  if (!paused) return paused.error();
  std::cout << (*paused ? "paused " + id : id + " is paused already") << "\n";
  return 0;
}

}  // namespace

void add_stop(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto pause = std::make_shared<bool>(false);
  auto kill = std::make_shared<bool>(false);
  auto* app = root.add_subcommand(
      "stop", "Pause or kill a sandbox (docker's stop): asks which, or --pause / --kill");
  app->add_option("id", *id, "Sandbox id")->required();
  auto* pause_flag = app->add_flag("--pause", *pause, "Pause it (abx resume brings it back)");
  app->add_flag("--kill", *kill, "Kill it (destroys it)")->excludes(pause_flag);
  commands.push_back(
      {app, [id, pause, kill] {
         return run_stop(*id, *pause ? StopAs::kPause : *kill ? StopAs::kKill : StopAs::kAsk);
       }});
}

void add_pause(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto fs_only = std::make_shared<bool>(false);
  auto* pause = root.add_subcommand(
      "pause", "Freeze a sandbox where it stands (E2B's pause); `abx resume ID` goes on");
  pause->add_option("id", *id, "Sandbox id")->required();
  pause->add_flag("--fs-only", *fs_only,
                  "Keep only its files (E2B's keep_memory=False): its processes end, the "
                  "resume boots it afresh on the same files");
  commands.push_back({pause, [id, fs_only]() -> Result<int> {
                        auto endpoint = resolve_endpoint();
                        if (!endpoint) return endpoint.error();
                        auto paused = ControlPlane(*endpoint).pause_sandbox(*id, !*fs_only);
                        if (!paused) return paused.error();
                        if (!*paused) {  // as resume of a running one: nothing to do
                          std::cout << *id << " is paused already\n";
                          return 0;
                        }
                        std::cout << "paused " << *id << (*fs_only ? " (files only)" : "") << "\n";
                        return 0;
                      }});
  auto resume_id = std::make_shared<std::string>();
  auto seconds = std::make_shared<int>(300);
  auto* resume = root.add_subcommand("resume", "Resume a paused sandbox as it was (E2B's connect)");
  resume->add_option("id", *resume_id, "Sandbox id")->required();
  resume->add_option("--timeout", *seconds, "Seconds it then lives")
      ->check(sandbox_timeout_seconds())
      ->capture_default_str();
  commands.push_back({resume, [resume_id, seconds]() -> Result<int> {
                        auto endpoint = resolve_endpoint();
                        if (!endpoint) return endpoint.error();
                        if (Status s = ControlPlane(*endpoint).resume_sandbox(*resume_id, *seconds);
                            !s)
                          return s.error();
                        std::cout << "resumed " << *resume_id << "\n";
                        return 0;
                      }});
}

}  // namespace abx::cli
