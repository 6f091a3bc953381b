#include "common/process_events.h"

#include <csignal>
#include <cstring>
#include <string>

namespace abx::e2b {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::optional<int> signal_from_status(std::string_view status) {
  constexpr std::string_view kPrefix = "signal: ";
  if (!status.starts_with(kPrefix)) return std::nullopt;
  std::string name = lower(status.substr(kPrefix.size()));
  if (const auto paren = name.find(" ("); paren != std::string::npos)
    name.resize(paren);  // "(core dumped)"
  if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) return std::stoi(name);
  for (int signo = 1; signo < NSIG; ++signo) {
    const char* description = strsignal(signo);
    if (description && lower(description) == name) return signo;
  }
  return std::nullopt;
}

int exit_code_from_end(const nlohmann::json& end) {
  if (auto signo = signal_from_status(end.value("status", ""))) return 128 + *signo;
  const int code = end.value("exitCode", 0);
  // A negative code is how some runtimes report "killed by signal -code".
  return code < 0 ? 128 - code : code;
}

}  // namespace abx::e2b
