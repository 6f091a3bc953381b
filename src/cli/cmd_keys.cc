// abx keys create|list|revoke: API keys and their teams, managed through the
// daemon's admin API (the key used must be an admin key, as the local
// daemon's own key is).
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/text.h"

namespace abx::cli {
namespace {

struct CreateOptions {
  std::string team = "default";
  bool admin = false;
  std::string name;
};

Result<int> run_create(const CreateOptions& options) {
  const json body = {{"team", options.team}, {"admin", options.admin}, {"name", options.name}};
  auto made = call_api("POST", "/abx/v1/keys", body.dump());
  if (!made) return made.error();
  std::cout << made->value("key", "") << "\n";
  std::cerr << "key " << made->value("id", "") << " for team " << made->value("team", "")
            << (options.admin ? " (admin)" : "")
            << ": shown once, the daemon keeps only its hash\n";
  return 0;
}

Result<int> run_list() {
  auto listed = call_api("GET", "/abx/v1/keys");
  if (!listed) return listed.error();
  std::vector<std::vector<std::string>> rows = {{"ID", "TEAM", "ADMIN", "CREATED", "NAME"}};
  for (const auto& key : (*listed)["keys"]) {
    const int64_t ms = key.value("createdMs", int64_t{0});
    rows.push_back({key.value("id", ""), key.value("team", ""),
                    key.value("admin", false) ? "yes" : "no",
                    ms ? format_local_time(ms / 1000) : "-", key.value("name", "")});
  }
  std::cout << format_table(rows);
  return 0;
}

Result<int> run_revoke(const std::string& id) {
  auto revoked = call_api("DELETE", "/abx/v1/keys/" + id);
  if (!revoked) return revoked.error();
  std::cout << "revoked " << id << "\n";
  return 0;
}

}  // namespace

void add_keys(CLI::App& root, Commands& commands) {
  auto* keys = root.add_subcommand("keys", "API keys and their teams (needs an admin key)");
  keys->require_subcommand(1);
  auto options = std::make_shared<CreateOptions>();
  auto* create = keys->add_subcommand("create", "Make a key and print it once (e2b_<40 hex>)");
  create->add_option("--team", options->team, "The team the key acts for")->capture_default_str();
  create->add_flag("--admin", options->admin, "May manage keys, quotas and built-in templates");
  create->add_option("--name", options->name, "A label shown by `abx keys list`");
  commands.push_back({create, [options] { return run_create(*options); }});
  commands.push_back({keys->add_subcommand("list", "List the keys (ids, never the keys)"),
                      [] { return run_list(); }});
  auto id = std::make_shared<std::string>();
  auto* revoke = keys->add_subcommand("revoke", "Revoke a key at once");
  revoke->add_option("ID", *id, "The key's id, as `abx keys list` shows it")->required();
  commands.push_back({revoke, [id] { return run_revoke(*id); }});
}

}  // namespace abx::cli
