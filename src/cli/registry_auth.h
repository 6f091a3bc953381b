// The CLI's registry credentials: Docker's config.json format
// ({"auths": {"host:port": {"auth": base64(user:pass)}}}) in
// <config dir>/registry-auth.json, mode 0600.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace abx::cli::registry_auth
