// abx config set|get|unset|list: the user's settings file.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "common/config.h"
#include "common/http_client.h"
#include "common/paths.h"

namespace abx::cli {
namespace {

struct ConfigOptions {
  std::string key;
  std::string value;
};

Status check_key(const std::string& key) {
  if (config::is_known_key(key)) return {};
  std::string known;
  for (const auto k : config::known_keys()) known += (known.empty() ? "" : ", ") + std::string(k);
  return Error{"unknown config key '" + key + "'; known keys: " + known};
}

Result<config::Config> load_for(const std::string& key) {
  if (auto st = check_key(key); !st) return st.error();
  return config::Config::load(paths::config_file());
}

Result<int> run_set(const ConfigOptions& options) {
  auto config = load_for(options.key);
  if (!config) return config.error();
  if (options.key == config::kApiUrl) {
    if (auto url = http::Url::parse(options.value); !url) return url.error();
  }
  config->set(options.key, options.value);
  if (auto st = config->save(paths::config_file()); !st) return st.error();
  return 0;
}

Result<int> run_get(const ConfigOptions& options) {
  auto config = load_for(options.key);
  if (!config) return config.error();
  auto value = config->get(options.key);
  if (!value) {
    return Error{options.key + " is not set; set it with `abx config set " + options.key +
                 " VALUE`"};
  }
  std::cout << *value << "\n";
  return 0;
}

Result<int> run_unset(const ConfigOptions& options) {
  auto config = load_for(options.key);
  if (!config) return config.error();
  if (!config->unset(options.key)) return 0;
  if (auto st = config->save(paths::config_file()); !st) return st.error();
  return 0;
}

Result<int> run_list() {
  auto config = config::Config::load(paths::config_file());
  if (!config) return config.error();
  for (const auto& [key, value] : config->values()) {
    std::cout << key << " = " << config::display_value(key, value) << "\n";
  }
  return 0;
}

}  // namespace

void add_config(CLI::App& root, Commands& commands) {
  auto options = std::make_shared<ConfigOptions>();
  auto* config = root.add_subcommand(
      "config", "Read and change settings (" + paths::config_file().string() + ")");
  config->require_subcommand(1);

  auto* set = config->add_subcommand("set", "Set a key");
  set->add_option("key", options->key, "sandbox_api_key or sandbox_api_url")->required();
  set->add_option("value", options->value, "The value")->required();
  commands.push_back({set, [options] { return run_set(*options); }});

  auto* get = config->add_subcommand("get", "Print a key's value");
  get->add_option("key", options->key, "The key")->required();
  commands.push_back({get, [options] { return run_get(*options); }});

  auto* unset = config->add_subcommand("unset", "Remove a key");
  unset->add_option("key", options->key, "The key")->required();
  commands.push_back({unset, [options] { return run_unset(*options); }});

  auto* list = config->add_subcommand("list", "Print every key (secrets masked)");
  commands.push_back({list, [] { return run_list(); }});
}

}  // namespace abx::cli
