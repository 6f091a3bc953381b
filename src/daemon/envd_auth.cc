#include "daemon/envd_auth.h"

#include "common/base64.h"
#include "common/sha256.h"

namespace abx::daemon::envd_auth {

SandboxUser standard_user() { return SandboxUser{"user", 1000, 1000, "/home/user"}; }

std::optional<SandboxUser> user_by_name(const std::string& name, const SandboxUser& fallback) {
  if (name.empty()) return fallback;
  if (name == "user") return standard_user();
  if (name == "root") return SandboxUser{"root", 0, 0, "/root"};
  return std::nullopt;
}

std::optional<SandboxUser> user_from_authorization(const std::string& header,
                                                   const SandboxUser& fallback,
                                                   std::string* error) {
  if (header.empty()) return fallback;
  constexpr std::string_view kBasic = "Basic ";
  if (header.compare(0, kBasic.size(), kBasic) != 0) {
    *error = "unsupported Authorization scheme: use Basic base64(\"<user>:\")";
    return std::nullopt;
  }
  const auto decoded = base64::decode(header.substr(kBasic.size()));
  if (!decoded) {
    *error = "Authorization: invalid base64";
    return std::nullopt;
  }
  const std::string name = decoded->substr(0, decoded->find(':'));
  auto user = user_by_name(name, fallback);
  if (!user) *error = "unknown user '" + name + "': use 'user' or 'root'";
  return user;
}

std::string file_signature(const std::string& path, const std::string& operation,
                           const std::string& user, const std::string& token,
                           const std::string& expiration) {
  std::string text = path + ":" + operation + ":" + user + ":" + token;
  if (!expiration.empty()) text += ":" + expiration;
  return "v1_" + base64::encode(Sha256().update(text).bytes(), false);
}

bool file_signature_valid(const std::map<std::string, std::string>& query,
                          const std::string& operation, const std::string& token,
                          int64_t now_unix) {
  auto value = [&](const char* key) {
    const auto it = query.find(key);
    return it == query.end() ? std::string{} : it->second;
  };
  const std::string signature = value("signature");
  if (signature.empty()) return false;
  const std::string expiration = value("signature_expiration");
  if (!expiration.empty()) {
    try {
      if (std::stoll(expiration) < now_unix) return false;
    } catch (const std::exception&) {
      return false;
    }
  }
  return signature ==
         file_signature(value("path"), operation, value("username"), token, expiration);
}

}  // namespace abx::daemon::envd_auth
