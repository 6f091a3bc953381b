#include "interp/events.h"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

namespace abx::interp::events {

namespace {

std::string dump(const nlohmann::json& event) {
  // Output may carry invalid UTF-8 from user programs: replace, never throw.
  return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string timestamp_now() {
  const auto now = std::chrono::system_clock::now();
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:06d}Z", std::chrono::floor<std::chrono::seconds>(now),
                     micros);
}

std::string output(const std::string& type, const std::string& text) {
  return dump({{"type", type}, {"text", text}, {"timestamp", timestamp_now()}});
}

std::string error(const std::string& name, const std::string& value, const std::string& traceback) {
  return dump({{"type", "error"}, {"name", name}, {"value", value}, {"traceback", traceback}});
}

std::string keepalive() { return R"({"type":"keepalive"})"; }

std::string end_of_execution() { return R"({"type":"end_of_execution"})"; }

}  // namespace abx::interp::events
