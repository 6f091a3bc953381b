// Reading and writing the dashboard's session cookie (RFC 6265). The Cookie
// header is the caller's: parsing never trusts its shape or its size beyond
// what the HTTP server already bounds.
#pragma once

#include <string>
#include <string_view>

namespace abx::daemon::cookies {

inline constexpr std::string_view kSessionCookie = "abx_session";

// The value of cookie `name` in a Cookie header ("a=1; b=2"), or "" when it
// is absent, given twice (which one the browser meant is unknown) or empty.
std::string_view value_of(std::string_view header, std::string_view name);

// The Cookie header less every `name` pair (the rest as it came, joined by
// "; "), or "" when nothing is left.
std::string without(std::string_view header, std::string_view name);

// Set-Cookie for the session: HttpOnly (no script reads it), SameSite=Strict
// (no cross-site request carries it), Path=/ (the page calls the JSON API).
std::string session_set_cookie(std::string_view id, int64_t max_age_s);
// Set-Cookie that makes the browser forget the session.
std::string session_clear_cookie();

}  // namespace abx::daemon::cookies
