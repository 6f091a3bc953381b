#include "cli/registry_auth.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <utility>

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

namespace {

bool starts_with_word(std::string_view text, std::string_view word) {
  if (text.size() <= word.size() || text[word.size()] != ' ') return false;
  for (size_t i = 0; i < word.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != word[i]) return false;
  return true;
}

// One `key=value` or `key="quoted, value"` pair from the front of `rest`.
std::pair<std::string, std::string> next_param(std::string_view& rest) {
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == ',')) rest.remove_prefix(1);
  const size_t equals = rest.find('=');
  if (equals == std::string_view::npos) {
    rest = {};
    return {};
  }
  std::string key(rest.substr(0, equals));
  for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  rest.remove_prefix(equals + 1);
  std::string value;
  if (!rest.empty() && rest.front() == '"') {
    size_t i = 1;
    for (; i < rest.size() && rest[i] != '"'; ++i) {
      if (rest[i] == '\\' && i + 1 < rest.size()) ++i;
      value += rest[i];
    }
    rest.remove_prefix(std::min(i + 1, rest.size()));
  } else {
    const size_t comma = rest.find(',');
    value = std::string(rest.substr(0, comma));
    rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma);
  }
  return {key, value};
}

}  // namespace

std::optional<BearerChallenge> parse_bearer_challenge(std::string_view header) {
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  if (!starts_with_word(header, "bearer")) return std::nullopt;
  std::string_view rest = header.substr(7);
  BearerChallenge challenge;
  while (!rest.empty()) {
    auto [key, value] = next_param(rest);
    if (key == "realm") challenge.realm = value;
    if (key == "service") challenge.service = value;
    if (key == "scope") challenge.scope = value;
  }
  if (challenge.realm.empty()) return std::nullopt;
  return challenge;
}

}  // namespace abx::cli::registry_auth
