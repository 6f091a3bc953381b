// abx ps ID: the processes started in a sandbox through the API (commands,
// exec sessions, background commands), from envd's process.Process/List as
// E2B's `commands.list()` returns them, each followed by what it started
// (the processes in its cgroup, GET /abx/v1/sandboxes/{id}/processes) as a
// tree; `abx exec ID -- ps aux` shows every process.
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"
#include "common/http_client.h"

namespace abx::cli {
namespace {

std::string command_of(const json& config) {
  std::vector<std::string> words = {config.value("cmd", "")};
  for (const auto& arg : config.value("args", json::array()))
    words.push_back(arg.is_string() ? arg.get<std::string>() : arg.dump());
  return shell_join(words);
}

// What each command started: its processes' rows under it, indented by depth
// below the command (a process whose parent left the group hangs off it).
void add_descendants(const json& processes, int command_pid,
                     std::vector<std::vector<std::string>>* rows) {
  std::map<int, std::vector<const json*>> children;
  std::set<int> in_group;
  for (const auto& p : processes) in_group.insert(p.value("pid", 0));
  for (const auto& p : processes) {
    const int pid = p.value("pid", 0), ppid = p.value("ppid", 0);
    if (pid == command_pid) continue;
    children[in_group.contains(ppid) ? ppid : command_pid].push_back(&p);
  }
  std::set<int> shown;
  auto visit = [&](auto& self, int parent, size_t depth) -> void {
    for (const json* child : children[parent]) {
      const int pid = child->value("pid", 0);
      if (!shown.insert(pid).second) continue;  // a loop of reused pids
      rows->push_back({std::string(2 * depth, ' ') + "\\_ " + std::to_string(pid), "", "",
                       sanitize_for_terminal(child->value("command", ""))});
      self(self, pid, depth + 1);
    }
  };
  visit(visit, command_pid, 0);
}

// The processes of each command by its pid; empty when the daemon keeps no
// groups (cgroup v2) or is older than this route.
std::map<int, json> command_processes(const Endpoint& endpoint, const std::string& id) {
  std::map<int, json> out;
  const std::string target = "/abx/v1/sandboxes/" + http::url_encode(id) + "/processes";
  auto response = http::Client(endpoint.url).send(api_request(endpoint, "GET", target));
  if (!response || response->status != 200) return out;
  const json body = json::parse(response->body, nullptr, false);
  if (!body.is_object()) return out;
  for (const auto& command : body.value("commands", json::array()))
    out[command.value("pid", 0)] = command.value("processes", json::array());
  return out;
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
  const auto trees = command_processes(*endpoint, id);
  std::vector<std::vector<std::string>> rows = {{"PID", "TAG", "CWD", "COMMAND"}};
  for (const auto& process : processes) {
    const json config = process.value("config", json::object());
    const int pid = process.value("pid", 0);
    rows.push_back({std::to_string(pid), process.value("tag", ""), config.value("cwd", ""),
                    command_of(config)});
    if (auto tree = trees.find(pid); tree != trees.end()) add_descendants(tree->second, pid, &rows);
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
