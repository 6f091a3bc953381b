// One MCP session: JSON-RPC 2.0 dispatch (initialize and version
// negotiation, ping, tools/list, tools/call, notifications/cancelled) over a
// Toolbox. Transport-neutral: stdio_server.cc and the daemon's routes_mcp.cc
// feed it messages and deliver its replies.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mcp/toolbox.h"

namespace abx::mcp {

// Newest first; initialize answers with the client's version when it is here.
const std::vector<std::string>& supported_protocol_versions();
std::string negotiate_protocol_version(const std::string& requested);

// A JSON-RPC error response.
json rpc_error(const json& id, int code, const std::string& message);
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kRequestCancelled = -32800;

// The answer to one request; nullopt when the client cancelled it (MCP
// says a cancelled request gets no response).
using Reply = std::function<void(std::optional<json>)>;

class Session {
 public:
  explicit Session(ToolboxOptions options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Handles one parsed message. Requests are answered through `reply`:
  // tools/call from a worker thread of its own (so it can be cancelled and
  // others can run meanwhile), everything else before dispatch returns.
  void dispatch(const json& message, const Reply& reply);
  // Waits for the calls in flight, cancelled first unless `answer_in_flight`
  // (a stdio client that closed its input still reads the answers), and
  // kills the session sandbox. Later tool calls are refused.
  void close(bool answer_in_flight = false);

 private:
  struct Worker {
    json request_id;
    std::shared_ptr<CancelFlag> cancel;
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
  };

  json answer(const std::string& method, const json& id, const json& params);
  void start_tool_call(const json& id, const json& params, const Reply& reply);
  void cancel(const json& request_id);
  void join_finished_locked();

  Toolbox toolbox_;
  std::mutex mutex_;
  std::list<Worker> workers_;
  bool closed_ = false;
};

}  // namespace abx::mcp
