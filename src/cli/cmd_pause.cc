// pause and resume: E2B's pause, and its connect, which resumes.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"

namespace abx::cli {

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
