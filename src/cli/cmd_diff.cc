// abx diff ID: what a sandbox changed on top of its template, as `docker diff`
// prints it (A added, C changed, D deleted), from GET /abx/v1/sandboxes/{id}/diff.
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

using nlohmann::json;

char letter_of(const std::string& change) {
  if (change == "added") return 'A';
  if (change == "deleted") return 'D';
  return 'C';
}

Result<int> run_diff(const std::string& id, bool as_json) {
  auto response = get_sandbox_resource(id, "diff");
  if (!response) return response.error();
  if (response->status == 404) return Error{"sandbox " + id + " not found"};
  if (response->status != 200)
    return Error{"could not diff sandbox " + id + ": " + e2b::describe_failure(*response)};
  const json body = json::parse(response->body, nullptr, false);
  if (!body.is_object()) return Error{"the daemon's diff of " + id + " is not JSON"};
  if (as_json) {
    std::cout << body.dump(2) << "\n";
    return 0;
  }
  for (const auto& entry : body.value("changes", json::array()))
    std::cout << letter_of(entry.value("change", "")) << ' '
              << sanitize_for_terminal(entry.value("path", "")) << '\n';
  if (body.value("truncated", false))
    std::cerr << "abx: the list stops here: the sandbox changed more than one diff shows\n";
  return 0;
}

}  // namespace

void add_diff(CLI::App& root, Commands& commands) {
  auto id = std::make_shared<std::string>();
  auto as_json = std::make_shared<bool>(false);
  auto* app = root.add_subcommand(
      "diff", "What a sandbox changed on top of its template: A added, C changed, D deleted");
  app->add_option("id", *id, "Sandbox id")->required();
  app->add_flag("--json", *as_json, "Print the changes as JSON (path, kind, change, size)");
  commands.push_back({app, [id, as_json] { return run_diff(*id, *as_json); }});
}

}  // namespace abx::cli
