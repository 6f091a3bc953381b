// The sandbox plane's request parsers (envd_requests.cc): every envd Connect
// message and every code-interpreter body, each given the same JSON text as
// routes_connect.cc and routes_interpreter.cc would parse it. A path they
// accept never holds a NUL byte (every syscall would cut the path there).
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/envd_requests.h"
#include "daemon/url.h"

namespace {

void no_nul(const std::string& path) {
  if (path.find('\0') != std::string::npos) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  using namespace abx::daemon;
  // As routes_connect.cc reads a message: "" is {}, and only an object goes on.
  const auto message =
      nlohmann::json::parse(input.empty() ? std::string("{}") : input, nullptr, false);
  if (!message.is_discarded() && message.is_object()) {
    (void)parse_start(message);
    (void)parse_connect(message);
    (void)parse_send_input(message);
    (void)parse_signal(message);
    (void)parse_update(message);
    if (auto r = parse_path_request(message)) no_nul(r->path);
    if (auto r = parse_list_dir(message)) no_nul(r->path);
    if (auto r = parse_move(message)) {
      no_nul(r->source);
      no_nul(r->destination);
    }
    if (auto r = parse_watch_dir(message)) no_nul(r->path);
    (void)parse_watcher(message);
  }
  if (auto body = parse_interpreter_body(input)) {
    (void)parse_execute(*body);
    if (auto r = parse_create_context(*body)) no_nul(r->cwd);
  }
  const auto query = url::parse_query(input);
  if (auto r = parse_files_query(query, true)) no_nul(r->path);
  if (auto r = parse_files_query(query, false)) no_nul(r->path);
  (void)parse_context_id({{"context", input}});
  return 0;
}
