#include "daemon/cookies.h"

#include <cstdint>

namespace abx::daemon::cookies {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::string_view value_of(std::string_view header, std::string_view name) {
  std::string_view found;
  int seen = 0;
  while (!header.empty()) {
    const size_t semicolon = header.find(';');
    const std::string_view pair = trim(header.substr(0, semicolon));
    header =
        semicolon == std::string_view::npos ? std::string_view() : header.substr(semicolon + 1);
    const size_t equals = pair.find('=');
    if (equals == std::string_view::npos || trim(pair.substr(0, equals)) != name) continue;
    found = trim(pair.substr(equals + 1));
    ++seen;
  }
  return seen == 1 ? found : std::string_view();
}

std::string without(std::string_view header, std::string_view name) {
  std::string kept;
  while (!header.empty()) {
    const size_t semicolon = header.find(';');
    const std::string_view pair = trim(header.substr(0, semicolon));
    header =
        semicolon == std::string_view::npos ? std::string_view() : header.substr(semicolon + 1);
    const size_t equals = pair.find('=');
    const std::string_view key = trim(pair.substr(0, equals));
    if (pair.empty() || key == name) continue;
    if (!kept.empty()) kept += "; ";
    kept += pair;
  }
  return kept;
}

std::string session_set_cookie(std::string_view id, int64_t max_age_s) {
  return std::string(kSessionCookie) + "=" + std::string(id) +
         "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" + std::to_string(max_age_s);
}

std::string session_clear_cookie() {
  return std::string(kSessionCookie) + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0";
}

}  // namespace abx::daemon::cookies
