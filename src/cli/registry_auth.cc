#include "cli/registry_auth.h"

#include <sys/stat.h>

#include "common/base64.h"
#include "common/fd_io.h"
#include "common/file_replacement.h"
#include "common/paths.h"

namespace abx::cli::registry_auth {

using nlohmann::json;

std::filesystem::path path() { return paths::config_dir() / "registry-auth.json"; }

Result<json> load() {
  std::error_code ec;
  if (!std::filesystem::exists(path(), ec)) return json{{"auths", json::object()}};
  auto text = read_file(path());
  if (!text) return Error{"cannot read " + path().string()};
  json doc = json::parse(*text, nullptr, false);
  if (!doc.is_object()) return Error{path().string() + " is not JSON; remove it and log in again"};
  if (!doc.contains("auths") || !doc["auths"].is_object()) doc["auths"] = json::object();
  return doc;
}

Status save(const json& doc) {
  const auto dir = paths::config_dir();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Error{"cannot create " + dir.string() + ": " + ec.message()};
  return replace_file(path(), doc.dump(2) + "\n", 0600);
}

Result<std::string> entry_for(const std::string& host) {
  auto doc = load();
  if (!doc) return doc.error();
  const json& auths = (*doc)["auths"];
  if (!auths.contains(host) || !auths[host].is_object()) return std::string();
  return auths[host].dump();
}

Result<std::string> config_header_for(const std::string& text) {
  auto doc = load();
  if (!doc) return doc.error();
  json chosen = json::object();
  for (const auto& [host, entry] : (*doc)["auths"].items())
    if (entry.is_object() && text.find(host + "/") != std::string::npos) chosen[host] = entry;
  return chosen.empty() ? std::string() : base64::encode(chosen.dump());
}

}  // namespace abx::cli::registry_auth
