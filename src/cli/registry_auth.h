// The CLI's registry credentials: Docker's config.json format
// ({"auths": {"host:port": {"auth": base64(user:pass)}}}) in
// <config dir>/registry-auth.json, mode 0600.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"

namespace abx::cli::registry_auth {

std::filesystem::path path();
// The file's contents ({"auths": {}} when there is none yet).
Result<nlohmann::json> load();
Status save(const nlohmann::json& doc);
// The auths entry for `host` as JSON text, "" when none is saved.
Result<std::string> entry_for(const std::string& host);
// base64 of {"host": entry, ...} for the saved hosts `text` mentions (a
// Sandboxfile's FROM lines): Docker's X-Registry-Config; "" when none.
Result<std::string> config_header_for(const std::string& text);

// What a registry's 401 asks for in the OCI bearer-token flow:
// `WWW-Authenticate: Bearer realm="https://auth/token",service="reg",scope="..."`.
struct BearerChallenge {
  std::string realm;
  std::string service;
  std::string scope;
};
// The challenge in a WWW-Authenticate value; nullopt for another scheme
// (Basic) or a Bearer challenge without a realm.
std::optional<BearerChallenge> parse_bearer_challenge(std::string_view header);

}  // namespace abx::cli::registry_auth
