#include "cli/flag_checks.h"

#include <charconv>

#include "cli/text.h"

namespace abx::cli {

// The daemon's limit (daemon/control_requests.h kMaxTimeoutSec); the client
// checks it first so the user hears it in the flag's words.
constexpr std::int64_t kMaxSandboxTimeout = 86400;

CLI::Validator whole_number(std::int64_t low, std::int64_t high, const std::string& unit,
                            const std::string& note) {
  const std::string range = "must be a whole number of " + unit + " from " + std::to_string(low) +
                            " to " + std::to_string(high) + (note.empty() ? "" : " (" + note + ")");
  return CLI::Validator(
      [range, low, high](std::string& text) -> std::string {
        std::int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [at, error] = std::from_chars(text.data(), end, value);
        const bool whole = error == std::errc() && at == end;
        if (whole && value >= low && value <= high) return {};
        // Echo a short input only: the line stays one line.
        return range + ", not " + (text.size() <= 24 ? "'" + text + "'" : "that");
      },
      unit + " " + std::to_string(low) + ".." + std::to_string(high));
}

CLI::Validator sandbox_timeout_seconds() {
  return whole_number(1, kMaxSandboxTimeout, "seconds", "one day");
}

CLI::Validator value_check(std::function<std::string(const std::string&)> check,
                           const std::string& description) {
  return CLI::Validator([check = std::move(check)](std::string& text) { return check(text); },
                        description);
}

CLI::Validator size_value() {
  return value_check(
      [](const std::string& text) {
        auto mib = parse_mib(text, "");
        return mib ? std::string() : mib.error().message();
      },
      "SIZE");
}

CLI::Validator key_value() {
  return value_check(
      [](const std::string& text) {
        const auto eq = text.find('=');
        return eq != std::string::npos && eq > 0 ? std::string()
                                                 : "'" + text + "' is not KEY=VALUE";
      },
      "KEY=VALUE");
}

}  // namespace abx::cli
