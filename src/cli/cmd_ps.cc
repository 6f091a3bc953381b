// abx ps ID: the processes started in a sandbox through the API (commands,
// exec sessions, background commands), from envd's process.Process/List as
// E2B's `commands.list()` returns them. A process those spawn on their own
// is not listed: `abx exec ID -- ps aux` shows every one.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

std::string command_of(const json& config) {
  std::vector<std::string> words = {config.value("cmd", "")};
  for (const auto& arg : config.value("args", json::array()))
    words.push_back(arg.is_string() ? arg.get<std::string>() : arg.dump());
  return shell_join(words);
}

Result<int> run_ps(const std::string& id, bool as_json) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto plane = SandboxPlane::open(ControlPlane(*endpoint), id);
  if (!plane) return plane.error();
  auto listed = plane->rpc("process.Process/List", json::object());
  if (!listed) return listed.error();
  const json processes = listed->value("processes", json::array());
  if (as_json) {
    std::cout << processes.dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"PID", "TAG", "CWD", "COMMAND"}};
  for (const auto& process : processes) {
    const json config = process.value("config", json::object());
    rows.push_back({std::to_string(process.value("pid", 0)), process.value("tag", ""),
                    config.value("cwd", ""), command_of(config)});
  }
  std::cout << format_table(rows);
  return 0;
}

}  // namespace

void add_ps(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto* app = root.add_subcommand(
      "ps", "List the commands running in a sandbox (pid, tag, command), as E2B's commands.list");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_flag("--json", *as_json, "Print envd's process list as JSON");
  commands.push_back({app, [id, as_json] { return run_ps(*id, *as_json); }});
}

}  // namespace abx::cli
