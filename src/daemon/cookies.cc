#include "daemon/cookies.h"

#include <cstdint>

namespace abx::daemon::cookies {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Calls visit(pair, name, value) for each non-empty "name=value" pair of a
// Cookie header, trimmed; a pair without '=' has an empty value.
template <class Visit>
void for_each_pair(std::string_view header, Visit visit) {
  while (!header.empty()) {
    const size_t semicolon = header.find(';');
    const std::string_view pair = trim(header.substr(0, semicolon));
    header =
        semicolon == std::string_view::npos ? std::string_view() : header.substr(semicolon + 1);
    if (pair.empty()) continue;
    const size_t equals = pair.find('=');
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : trim(pair.substr(equals + 1));
    visit(pair, trim(pair.substr(0, equals)), value, equals != std::string_view::npos);
  }
}

}  // namespace

std::string_view value_of(std::string_view header, std::string_view name) {
  std::string_view found;
  int seen = 0;
  for_each_pair(
      header, [&](std::string_view, std::string_view key, std::string_view value, bool has_value) {
        if (!has_value || key != name) return;
        found = value;
        ++seen;
      });
  return seen == 1 ? found : std::string_view();
}

std::string without(std::string_view header, std::string_view name) {
  std::string kept;
  for_each_pair(header, [&](std::string_view pair, std::string_view key, std::string_view, bool) {
    if (key == name) return;
    if (!kept.empty()) kept += "; ";
    kept += pair;
  });
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
