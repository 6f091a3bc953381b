// secrets set|list|rm: values the egress proxy puts into requests for
// network.rules headers written "abx-secret:NAME"; a sandbox never sees them.
#include <iostream>
#include <iterator>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"

namespace abx::cli {
namespace {

// The value comes on stdin (never argv, which other users can read in ps);
// one trailing newline, as `echo` adds, is not part of it.
Result<int> run_set(const std::string& name) {
  std::string value{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
  if (value.empty()) return Error{"no value on stdin: e.g. `abx secrets set " + name + " < file`"};
  const json body = {{"value", value}};
  if (auto done = call_api("PUT", "/abx/v1/secrets/" + name, body.dump()); !done)
    return done.error();
  std::cout << "stored " << name << "; use it as a header value \"abx-secret:" << name
            << "\" in network.rules\n";
  return 0;
}

Result<int> run_list() {
  auto listed = call_api("GET", "/abx/v1/secrets");
  if (!listed) return listed.error();
  for (const auto& name : listed->value("secrets", json::array()))
    std::cout << name.get<std::string>() << "\n";
  return 0;
}

Result<int> run_remove(const std::string& name) {
  if (auto done = call_api("DELETE", "/abx/v1/secrets/" + name); !done) return done.error();
  std::cout << "removed " << name << "\n";
  return 0;
}

}  // namespace

void add_secrets(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand(
      "secrets", "Secrets the egress proxy sends in headers; sandboxes never see them");
  app->require_subcommand(1);
  auto set_name = std::make_shared<std::string>();
  auto* set = app->add_subcommand("set", "Store a secret read from stdin");
  set->add_option("name", *set_name, "Secret name, e.g. OPENAI_KEY")->required();
  commands.push_back({set, [set_name] { return run_set(*set_name); }});
  auto* list = app->add_subcommand("list", "List the names of your team's secrets");
  commands.push_back({list, [] { return run_list(); }});
  auto rm_name = std::make_shared<std::string>();
  auto* rm = app->add_subcommand("rm", "Remove a secret");
  rm->add_option("name", *rm_name, "Secret name")->required();
  commands.push_back({rm, [rm_name] { return run_remove(*rm_name); }});
}

}  // namespace abx::cli
