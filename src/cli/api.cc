#include "cli/api.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "cli/local_daemon.h"
#include "cli/settings.h"
#include "cli/text.h"
#include "common/config.h"
#include "common/ids.h"
#include "common/paths.h"

namespace abx::cli {
namespace {

std::string read_key_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string key;
  in >> key;
  return key;
}

// The system service's data dir (dist/systemd/system/abx.service.in);
// ABX_SYSTEM_DATA_DIR moves it (packagers, tests).
std::filesystem::path system_data_dir() {
  const char* moved = std::getenv("ABX_SYSTEM_DATA_DIR");
  return moved != nullptr && *moved != '\0' ? moved : "/var/lib/abx";
}

// The data dir of the daemon this user talks to: their own state dir, unless
// they did not name one (ABX_STATE_DIR), no daemon of theirs runs, and the
// system service's does and its dir is theirs to read (root, once
// `systemctl enable --now abx`): then that one, rather than starting a second
// daemon beside it. Only pid and lock files are looked at here: no request.
std::filesystem::path daemon_data_dir() {
  const std::filesystem::path own = paths::state_dir();
  if (std::getenv("ABX_STATE_DIR") != nullptr || local_daemon::running_pid(own)) return own;
  const std::filesystem::path system = system_data_dir();
  if (::access(paths::daemon_address_file(system).c_str(), R_OK) == 0 &&
      local_daemon::running_pid(system))
    return system;
  return own;
}

// The local daemon's address as its address file has it (it may not answer).
Result<std::string> recorded_url() {
  std::ifstream in(paths::daemon_address_file(daemon_data_dir()));
  std::string url;
  if (!(in >> url)) return Error{"no local daemon has run"};
  return url;
}

}  // namespace

Result<Endpoint> resolve_endpoint(bool start_daemon) {
  auto config = config::Config::load(paths::config_file());
  if (!config) return config.error();
  const auto url_text = pick_setting(kUrlEnv, *config, config::kApiUrl);
  auto key = pick_setting(kKeyEnv, *config, config::kApiKey);
  std::string url = url_text.value_or("");
  if (!url_text) {
    auto local = start_daemon ? local_daemon::ensure_running(daemon_data_dir()) : recorded_url();
    if (!local) return local.error();
    url = *local;
  }
  if (!key) key = read_key_file(paths::api_key_file(daemon_data_dir()));
  if (key->empty()) {
    return Error{"no API key for " + url +
                 "; run `abx config set sandbox_api_key KEY` or set ABX_SANDBOX_API_KEY"};
  }
  auto parsed = http::Url::parse(url);
  if (!parsed) return parsed.error();
  return Endpoint{*parsed, *key};
}

http::Request api_request(const Endpoint& endpoint, const std::string& method,
                          const std::string& target, std::string body) {
  http::Request request{method, target, {{"X-API-KEY", endpoint.api_key}}, std::move(body)};
  if (!request.body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  return request;
}

Result<json> call_api(const std::string& method, const std::string& target,
                      const std::string& body) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  auto response = http::Client(endpoint->url).send(api_request(*endpoint, method, target, body));
  if (!response) return response.error();
  if (response->status >= 300) return Error{describe_failure(*response)};
  if (response->body.empty()) return json{};
  return json::parse(response->body, nullptr, false);
}

Result<http::Response> get_sandbox_resource(const std::string& id, const std::string& resource,
                                            const std::string& query) {
  if (!ids::is_valid_sandbox_id(id))
    return Error{"'" + id + "' is not a valid sandbox id: `abx list` shows the ids"};
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  std::string target = "/abx/v1/sandboxes/" + http::url_encode(id) + "/" + resource;
  if (!query.empty()) target += "?" + query;
  return http::Client(endpoint->url).send(api_request(*endpoint, "GET", target));
}

Result<std::string> metadata_query(const std::vector<std::string>& pairs) {
  auto metadata = parse_key_values(pairs, "--metadata");
  if (!metadata) return metadata.error();
  if (metadata->empty()) return std::string();
  std::string encoded;  // k=v&k2=v2 with each part encoded, then the whole once more
  for (const auto& [key, value] : *metadata)
    encoded += (encoded.empty() ? "" : "&") + http::url_encode(key) + "=" + http::url_encode(value);
  return "metadata=" + http::url_encode(encoded);
}

}  // namespace abx::cli
