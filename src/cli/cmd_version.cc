// abx version: this client's version and commit, and the daemon's (asked over
// GET /abx/v1/version). Unlike other commands it never starts a local daemon.
#include <chrono>
#include <fstream>
#include <iostream>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/local_daemon.h"
#include "cli/settings.h"
#include "common/paths.h"
#include "common/version.h"

namespace abx::cli {
namespace {

constexpr std::chrono::seconds kAskTimeout{5};

// The daemon the other commands would use, without starting one: nullopt
// when the local daemon does not run.
Result<std::optional<Endpoint>> configured_endpoint() {
  auto config = config::Config::load(paths::config_file());
  if (!config) return config.error();
  auto url = pick_setting(kUrlEnv, *config, config::kApiUrl);
  auto key = pick_setting(kKeyEnv, *config, config::kApiKey);
  if (!url) url = local_daemon::healthy_url(paths::state_dir());
  if (!url) return std::optional<Endpoint>();
  if (!key) {
    std::ifstream in(paths::api_key_file(paths::state_dir()));
    in >> key.emplace();
  }
  auto parsed = http::Url::parse(*url);
  if (!parsed) return parsed.error();
  return std::optional<Endpoint>(Endpoint{*parsed, *key});
}

Result<int> run_version() {
  std::cout << "client: " << version::text() << "\n";
  auto endpoint = configured_endpoint();
  if (!endpoint) return endpoint.error();
  if (!*endpoint) {
    std::cout << "daemon: not running (`abx daemon start` starts it)\n";
    return 0;
  }
  const std::string url = (*endpoint)->url.str();
  auto response = http::Client((*endpoint)->url)
                      .send(api_request(**endpoint, "GET", "/abx/v1/version"), kAskTimeout);
  if (!response) return Error{"daemon at " + url + ": " + response.error().message()};
  if (response->status == 404) {
    std::cout << "daemon: older than `abx version` (no /abx/v1/version) at " << url << "\n";
    return 0;
  }
  if (response->status >= 300)
    return Error{"daemon at " + url + ": " + describe_failure(*response)};
  const json answer = json::parse(response->body);
  std::cout << "daemon: " << answer.at("version").get<std::string>() << " (commit "
            << answer.at("commit").get<std::string>() << ") at " << url << "\n";
  return 0;
}

}  // namespace

void add_version(CLI::App& root, Commands& commands) {
  auto* app = root.add_subcommand("version", "Show the client's and the daemon's version");
  commands.push_back({app, [] { return run_version(); }});
}

}  // namespace abx::cli
