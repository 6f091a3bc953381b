// abx keys create|list: extra API keys the local daemon accepts besides its
// default key (kept in its data dir; a running daemon picks new ones up at once).
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/paths.h"
#include "daemon/api_keys.h"
#include "daemon/daemon.h"

namespace abx::cli {
namespace {

// Enough to tell keys apart in a listing without printing the secret.
std::string masked(const std::string& key) {
  if (key.size() < 12) return key;
  return key.substr(0, 8) + "…" + key.substr(key.size() - 4);
}

std::string date_of(int64_t unix_seconds) {
  const std::time_t t = unix_seconds;
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

Result<int> run_create(const std::string& name) {
  auto entry = daemon::create_extra_key(daemon::extra_keys_path(paths::state_dir()), name);
  if (!entry) return entry.error();
  std::cout << entry->key << "\n";
  return 0;
}

Result<int> run_list() {
  const auto data_dir = paths::state_dir();
  auto extra = daemon::read_extra_keys(daemon::extra_keys_path(data_dir));
  if (!extra) return extra.error();
  std::ifstream in(daemon::api_key_path(data_dir));
  std::string default_key;
  in >> default_key;
  std::cout << std::left << std::setw(18) << "KEY" << std::setw(22) << "CREATED"
            << "NAME\n";
  if (!default_key.empty()) {
    std::cout << std::setw(20) << masked(default_key) << std::setw(22) << "-"
              << "(default)\n";
  }
  for (const auto& entry : *extra) {
    std::cout << std::setw(20) << masked(entry.key) << std::setw(22) << date_of(entry.created_unix)
              << entry.name << "\n";
  }
  return 0;
}

}  // namespace

void add_keys(CLI::App& root, Commands& commands) {
  auto* keys = root.add_subcommand("keys", "API keys the local daemon accepts");
  keys->require_subcommand(1);
  auto name = std::make_shared<std::string>();
  auto* create = keys->add_subcommand("create", "Make a new key and print it (e2b_<40 hex>)");
  create->add_option("--name", *name, "A label shown by `abx keys list`");
  commands.push_back({create, [name] { return run_create(*name); }});
  commands.push_back(
      {keys->add_subcommand("list", "List the keys (masked)"), [] { return run_list(); }});
}

}  // namespace abx::cli
