#include "common/rfc3339.h"

#include <cstdio>
#include <ctime>
#include <string>

namespace abx {

std::optional<int64_t> parse_rfc3339_ms(std::string_view text) {
  const std::string terminated(text);  // for sscanf
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(terminated.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::string_view rest = text.substr(static_cast<size_t>(consumed));
  int64_t ms = 0;
  if (rest.starts_with('.')) {
    rest.remove_prefix(1);
    int64_t scale = 100;
    if (rest.empty() || rest.front() < '0' || rest.front() > '9') return std::nullopt;
    for (; !rest.empty() && rest.front() >= '0' && rest.front() <= '9'; rest.remove_prefix(1)) {
      ms += (rest.front() - '0') * scale;
      scale /= 10;
    }
  }
  int64_t offset_sec = 0;
  if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    const auto digits = [&](size_t at) {
      return (rest[at] >= '0' && rest[at] <= '9' && rest[at + 1] >= '0' && rest[at + 1] <= '9')
                 ? (rest[at] - '0') * 10 + (rest[at + 1] - '0')
                 : -1;
    };
    const int hours = digits(1);
    const int minutes = digits(4);
    if (hours < 0 || minutes < 0) return std::nullopt;
    offset_sec = (rest[0] == '+' ? 1 : -1) * (hours * 3600 + minutes * 60);
  } else if (rest != "Z" && rest != "z") {
    return std::nullopt;
  }
  return (static_cast<int64_t>(timegm(&tm)) - offset_sec) * 1000 + ms;
}

}  // namespace abx
