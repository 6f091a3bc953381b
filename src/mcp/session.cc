#include "mcp/session.h"

#include <algorithm>

#include "mcp/tool_schemas.h"

namespace abx::mcp {
namespace {

constexpr const char* kInstructions =
    "Tools to run code and commands in disposable, isolated Linux sandboxes. For quick work call "
    "run_code or run_command without sandbox_id: a session sandbox is made on first use and "
    "killed when this session ends. Use sandbox_create for a sandbox that should outlive the "
    "session. Files move with file_write/file_read (text) and upload/download (host files); "
    "sandbox_events tells what was done in a sandbox.";

// A client's message is untrusted: a member of the wrong type reads as
// absent (json::value would throw, and a throw here ended `abx mcp serve`).
std::string text_member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json object_member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : json::object();
}

json initialize_result(const json& params) {
  const std::string requested = text_member(params, "protocolVersion");
  return {{"protocolVersion", negotiate_protocol_version(requested)},
          {"capabilities", {{"tools", {{"listChanged", false}}}}},
          {"serverInfo", {{"name", "agent-sandbox"}, {"version", ABX_VERSION}}},
          {"instructions", kInstructions}};
}

json result_of(const json& id, json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer(); }

}  // namespace

const std::vector<std::string>& supported_protocol_versions() {
  static const std::vector<std::string> versions = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"};
  return versions;
}

std::string negotiate_protocol_version(const std::string& requested) {
  const auto& versions = supported_protocol_versions();
  const bool known = std::find(versions.begin(), versions.end(), requested) != versions.end();
  return known ? requested : versions.front();
}

json rpc_error(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

Session::Session(ToolboxOptions options) : toolbox_(std::move(options)) {}

Session::~Session() { close(); }

void Session::dispatch(const json& message, const Reply& reply) {
  if (!message.is_object() || text_member(message, "jsonrpc") != "2.0") {
    return reply(rpc_error(nullptr, kInvalidRequest, "not a JSON-RPC 2.0 message"));
  }
  if (!message.contains("method")) return;  // a response: we send no requests
  const json& method = message["method"];
  const json params = object_member(message, "params");
  if (!message.contains("id")) {  // a notification
    if (method == "notifications/cancelled") cancel(params.value("requestId", json()));
    return;
  }
  const json& id = message["id"];
  if (!method.is_string() || !valid_id(id)) {
    return reply(rpc_error(valid_id(id) ? id : json(), kInvalidRequest,
                           "a request needs a string method and a string or integer id"));
  }
  if (method == "tools/call") return start_tool_call(id, params, reply);
  reply(answer(method.get<std::string>(), id, params));
}

json Session::answer(const std::string& method, const json& id, const json& params) {
  if (method == "initialize") return result_of(id, initialize_result(params));
  if (method == "ping") return result_of(id, json::object());
  if (method == "tools/list") return result_of(id, {{"tools", tool_definitions()}});
  return rpc_error(id, kMethodNotFound, "method not found: " + method);
}

void Session::start_tool_call(const json& id, const json& params, const Reply& reply) {
  const std::string name = text_member(params, "name");
  if (!Toolbox::has_tool(name)) {
    return reply(
        rpc_error(id, kInvalidParams, "unknown tool '" + name + "'; tools/list names them"));
  }
  std::lock_guard lock(mutex_);
  if (closed_) return reply(rpc_error(id, kInvalidRequest, "the session has ended"));
  join_finished_locked();
  auto cancel = std::make_shared<CancelFlag>(false);
  auto done = std::make_shared<std::atomic<bool>>(false);
  const json arguments = params.value("arguments", json::object());
  std::thread thread([this, id, name, arguments, cancel, done, reply] {
    ToolResult result = toolbox_.call(name, arguments, *cancel);
    if (*cancel) {
      reply(std::nullopt);
    } else {
      reply(result_of(id, result.to_json()));
    }
    *done = true;
  });
  workers_.push_back({id, cancel, done, std::move(thread)});
}

void Session::cancel(const json& request_id) {
  std::lock_guard lock(mutex_);
  for (auto& worker : workers_) {
    if (worker.request_id == request_id) *worker.cancel = true;
  }
}

void Session::join_finished_locked() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (*it->done) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void Session::close(bool answer_in_flight) {
  std::list<Worker> workers;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    workers.swap(workers_);
  }
  if (!answer_in_flight)
    for (auto& worker : workers) *worker.cancel = true;
  for (auto& worker : workers) worker.thread.join();
  toolbox_.end_session();
}

}  // namespace abx::mcp
