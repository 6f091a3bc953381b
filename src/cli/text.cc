#include "cli/text.h"

#include <cstdio>
#include <ctime>

namespace abx::cli {

std::string shell_quote(const std::string& word) {
  static constexpr std::string_view kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%^";
  if (!word.empty() && word.find_first_not_of(kSafe) == std::string::npos) return word;
  std::string out = "'";
  for (const char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out.push_back(' ');
    out += shell_quote(word);
  }
  return out;
}

Result<std::pair<std::string, std::string>> parse_key_value(std::string_view text,
                                                            std::string_view what) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error{"bad " + std::string(what) + " '" + std::string(text) + "'; expected KEY=VALUE"};
  }
  return std::pair{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

Result<std::map<std::string, std::string>> parse_key_values(const std::vector<std::string>& items,
                                                            std::string_view what) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    auto kv = parse_key_value(item, what);
    if (!kv) return kv.error();
    out[kv->first] = kv->second;
  }
  return out;
}

std::optional<std::int64_t> parse_rfc3339(std::string_view text) {
  const std::string s(text);
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::string_view rest = text.substr(static_cast<size_t>(consumed));
  if (rest.starts_with('.')) {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  std::int64_t offset = 0;
  if (rest == "Z" || rest == "z") {
    offset = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int hours = 0, minutes = 0;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &hours, &minutes) != 2) {
      return std::nullopt;
    }
    offset = (rest[0] == '+' ? 1 : -1) * (hours * 3600 + minutes * 60);
  } else {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(timegm(&tm)) - offset;
}

std::string format_local_time(std::int64_t epoch_seconds) {
  const std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string rfc3339_to_local(std::string_view text) {
  const auto seconds = parse_rfc3339(text);
  return seconds ? format_local_time(*seconds) : std::string(text);
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", value, kUnits[unit]);
  }
  return buf;
}

std::string format_progress(std::uint64_t done, std::uint64_t total, double seconds, int width) {
  const double fraction =
      total == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
  const int filled = static_cast<int>(fraction * width);
  std::string bar = "[" + std::string(static_cast<size_t>(filled), '#') +
                    std::string(static_cast<size_t>(width - filled), '-') + "]";
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100));
  std::string out = bar + " " + percent + "  " + format_bytes(done) + "/" + format_bytes(total);
  if (seconds > 0) {
    out +=
        "  " + format_bytes(static_cast<std::uint64_t>(static_cast<double>(done) / seconds)) + "/s";
  }
  return out;
}

std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace abx::cli
