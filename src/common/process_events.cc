#include "common/process_events.h"

#include <csignal>
#include <cstring>
#include <string>

#include "common/base64.h"

namespace abx::e2b {

namespace {
constexpr std::string_view kDataHead = R"({"event":{"data":{")";
constexpr std::string_view kDataTail = R"("}}})";
}  // namespace

std::string data_event(std::string_view stream, std::string_view bytes) {
  std::string out;
  out.reserve(kDataHead.size() + stream.size() + 3 + (bytes.size() + 2) / 3 * 4 + kDataTail.size());
  out.append(kDataHead).append(stream).append(R"(":")");
  base64::encode_append(&out, bytes);
  out.append(kDataTail);
  return out;
}

std::optional<DataEvent> match_data_event(std::string_view payload) {
  if (!payload.starts_with(kDataHead) || !payload.ends_with(kDataTail)) return std::nullopt;
  payload.remove_prefix(kDataHead.size());
  payload.remove_suffix(kDataTail.size());
  const size_t name_end = payload.find(R"(":")");
  if (name_end == std::string_view::npos) return std::nullopt;
  DataEvent event{payload.substr(0, name_end), payload.substr(name_end + 3)};
  if (event.stream != "stdout" && event.stream != "stderr" && event.stream != "pty")
    return std::nullopt;
  // Base64 never needs escaping: a quote or backslash means another shape.
  const std::string_view text = event.base64;
  if (std::memchr(text.data(), '"', text.size()) || std::memchr(text.data(), '\\', text.size()))
    return std::nullopt;
  return event;
}
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
