#include "cli/sandbox_end.h"

#include <chrono>
#include <thread>

namespace abx::cli {
namespace {

constexpr auto kPatience = std::chrono::seconds(5);
constexpr auto kRecheck = std::chrono::milliseconds(100);

std::optional<http::Response> get(const Endpoint& endpoint, const std::string& target) {
  auto response = http::Client(endpoint.url).send(api_request(endpoint, "GET", target));
  if (!response) return std::nullopt;
  return *response;
}

// The last line of an ended sandbox's log: why it ended (the daemon keeps it
// once the sandbox is destroyed, a moment after it left the list).
std::optional<std::string> last_log_line(const Endpoint& endpoint, const std::string& id) {
  auto response = get(endpoint, "/sandboxes/" + http::url_encode(id) + "/logs");
  if (!response || response->status != 200) return std::nullopt;
  const json body = json::parse(response->body, nullptr, false);
  if (!body.is_object()) return std::nullopt;
  const json entries = body.value("logEntries", json::array());
  if (!entries.is_array() || entries.empty() || !entries.back().is_object()) return std::nullopt;
  return entries.back().value("message", "");
}

}  // namespace

std::optional<std::string> sandbox_end_reason(const Endpoint& endpoint, const std::string& id) {
  const auto deadline = std::chrono::steady_clock::now() + kPatience;
  bool gone = false;
  for (;;) {
    if (!gone) {
      auto found = get(endpoint, "/sandboxes/" + http::url_encode(id));
      gone = found && found->status == 404;
    }
    if (gone) {
      if (auto why = last_log_line(endpoint, id)) return why;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      if (gone) return std::string();
      return std::nullopt;
    }
    std::this_thread::sleep_for(kRecheck);
  }
}

std::string sandbox_ended_message(const std::string& id, const std::string& reason) {
  const std::string why = !reason.empty() ? reason
                                          : "it was killed or reached its timeout (abx "
                                            "set-timeout ID SECONDS gives it longer)";
  return "sandbox " + id + " ended while the command ran: " + why;
}

}  // namespace abx::cli
