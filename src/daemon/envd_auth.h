// Who a sandbox-plane request acts as (Basic auth user) and whether it may
// (X-Access-Token or a signed /files URL), as envd decides it
// (spec/e2b-protocol.md §9, §11).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace abx::daemon::envd_auth {

struct SandboxUser {
  std::string name;
  uint32_t uid = 1000;
  uint32_t gid = 1000;
  std::string home;
};

// The user a sandbox's processes run as when a request names none: `user`,
// unless the sandbox's template says otherwise.
SandboxUser standard_user();

// The environment a process of `user` starts with, before the sandbox's and
// the request's variables (TERM and LC_ALL too with a pty).
std::map<std::string, std::string> default_env(const SandboxUser& user, bool pty);

// "root" or "user"; "" means `fallback` (the sandbox's default user).
std::optional<SandboxUser> user_by_name(const std::string& name,
                                        const SandboxUser& fallback = standard_user());

// From `Authorization: Basic base64("<user>:")`; absent → `fallback`. On
// failure sets `error` to a one-line reason.
std::optional<SandboxUser> user_from_authorization(const std::string& header,
                                                   const SandboxUser& fallback, std::string* error);

// "v1_" + base64-nopad(sha256("{path}:{operation}:{user}:{token}[:{expiration}]")).
std::string file_signature(const std::string& path, const std::string& operation,
                           const std::string& user, const std::string& token,
                           const std::string& expiration);

enum class SignatureVerdict { kValid, kMissing, kMismatch, kBadExpiration, kExpired };

// Checks `signature` and `signature_expiration` from a /files query. `path`
// and `user` are the values as the client sent them. The signature is checked
// first (in constant time), so only an authentic link is ever told "expired".
SignatureVerdict check_file_signature(const std::map<std::string, std::string>& query,
                                      const std::string& operation, const std::string& token,
                                      int64_t now_unix);
bool file_signature_valid(const std::map<std::string, std::string>& query,
                          const std::string& operation, const std::string& token, int64_t now_unix);

// The one-line reason a signed URL was refused (for the 401 body), e.g.
// "signature is already expired" (envd's text); "" for kValid.
std::string signature_refusal(SignatureVerdict verdict);

// For a /files request refused at authentication: why its signed URL failed
// ("signature is already expired"), or "" when the query carries no signature.
// `method` is the request's (GET reads, anything else writes).
std::string signed_url_refusal(const std::map<std::string, std::string>& query,
                               const std::string& method, const std::string& token,
                               int64_t now_unix);

// The sandbox (of `signers`: id and access token of each live sandbox) whose
// token signed this /files query. A link from the SDK's download_url() or
// upload_url() against E2B_SANDBOX_URL names no sandbox; its signature does.
// A link signed by one but expired still names it (so it hears "expired").
struct Signer {
  std::string sandbox_id;
  std::string access_token;
};
std::optional<std::string> signer_of(const std::map<std::string, std::string>& query,
                                     const std::string& method, const std::vector<Signer>& signers,
                                     int64_t now_unix);

}  // namespace abx::daemon::envd_auth
