#include "mcp/stdio_server.h"

#include <iostream>
#include <mutex>

#include "common/json_text.h"
#include "mcp/session.h"

namespace abx::mcp {

std::string wire_text(const json& message) { return json_text::dump(message); }

int serve_stdio(ToolboxOptions options) {
  Session session(std::move(options));
  std::mutex out_mutex;
  // Workers answer from their own threads: one whole line at a time.
  const Reply reply = [&out_mutex](std::optional<json> message) {
    if (!message) return;
    std::lock_guard lock(out_mutex);
    std::cout << wire_text(*message) << '\n' << std::flush;
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto message = json_text::parse(line, "message");
    if (!message) {
      reply(rpc_error(nullptr, kParseError, message.error().message()));
    } else if (message->is_array()) {  // a batch (protocol 2025-03-26)
      for (const auto& item : *message) session.dispatch(item, reply);
    } else {
      session.dispatch(*message, reply);
    }
  }
  // EOF on stdin is the client's way to end (MCP's stdio transport): what
  // it asked before gets its answer first.
  session.close(/*answer_in_flight=*/true);
  return 0;
}

}  // namespace abx::mcp
