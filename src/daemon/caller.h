// Who is asking: what authentication made of a request's credential. Routes
// hand it to the Service, and every sandbox and template records the team
// that made it (`owner`), so tenancy checks have one place to look.
#pragma once

#include <string>

namespace abx::daemon {

inline constexpr const char* kDefaultTeam = "default";

struct Caller {
  enum class Kind {
    anonymous,     // no credential (only /health and signed /files links)
    api_key,       // X-API-KEY of a team
    access_token,  // a sandbox's envdAccessToken (its sandbox plane only)
  };
  Kind kind = Kind::anonymous;
  std::string key_id;      // which API key (never the key itself); "" otherwise
  std::string team;        // the key's team, or the owner of the token's sandbox
  bool admin = false;      // may manage keys and other teams' templates
  std::string sandbox_id;  // the sandbox an access token belongs to

  bool is_anonymous() const { return kind == Kind::anonymous; }
};

}  // namespace abx::daemon
