// The E2B wire protocol as our clients (CLI, MCP server) use it: the control
// plane (X-API-KEY) and one sandbox's envd and interpreter planes (routed by
// E2b-Sandbox-Id on the same URL). spec/e2b-protocol.md §1–§13.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "common/http_client.h"

namespace abx::e2b {

using nlohmann::json;

struct Endpoint {
  http::Url url;
  std::string api_key;
};

// "<message from an {code,message} body, or the status>" for a failed call.
std::string describe_failure(const http::Response& response);

// "argv=[...] exitCode=0": a flight-record event's fields beyond its seq,
// time, type and name (what `abx events` and the MCP tool show of it).
std::string event_details(const json& event);

class ControlPlane {
 public:
  explicit ControlPlane(Endpoint endpoint);

  Result<json> create_sandbox(const json& request) const;
  // Every page, as one array; `query` ("metadata=…") narrows it.
  Result<json> list_sandboxes(const std::string& query = {}) const;
  Result<json> get_sandbox(const std::string& id) const;
  Status kill_sandbox(const std::string& id) const;
  Status set_timeout(const std::string& id, int seconds) const;
  // E2B's pause, and connect, which resumes a paused sandbox for `seconds`.
  // keep_memory false: E2B's filesystem-only pause (processes end, files stay).
  // False when it was paused already (E2B's 409), which is no failure.
  Result<bool> pause_sandbox(const std::string& id, bool keep_memory = true) const;
  Status resume_sandbox(const std::string& id, int seconds) const;
  // E2B's snapshots: one of sandbox `id`'s filesystem ({snapshotID, names,
  // ...}); every page of the caller's (of one sandbox, when given); removal
  // (false: no such snapshot).
  Result<json> create_snapshot(const std::string& id, const std::string& name) const;
  Result<json> list_snapshots(const std::string& sandbox_id = {}) const;
  Result<bool> delete_snapshot(const std::string& snapshot_id) const;
  // E2B's fork: `count` new sandboxes from one snapshot of `id`, each entry
  // {"sandbox": {...}} or {"error": {code, message}}; timeout_sec 0: the default.
  Result<json> fork_sandbox(const std::string& id, int count, int timeout_sec) const;
  // The flight record (GET /abx/v1/sandboxes/{id}/events?`query`), oldest
  // first, as an array of the daemon's event objects.
  Result<json> sandbox_events(const std::string& id, const std::string& query = {}) const;
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  Result<http::Response> call(const std::string& method, const std::string& target,
                              const std::string& body = {}) const;

  Endpoint endpoint_;
  http::Client client_;
};

class SandboxPlane {
 public:
  // Looks the sandbox up (its envd access token) and routes to it as `user`.
  static Result<SandboxPlane> open(const ControlPlane& control, const std::string& id,
                                   const std::string& user = "");

  // A unary Connect call, e.g. rpc("process.Process/SendInput", {...}).
  Result<json> rpc(const std::string& method, const json& request) const;
  // The same, handing back any answer (the caller judges the status).
  Result<http::Response> rpc_response(const std::string& method, const json& request) const;
  Error failure(int status, const std::string& body, const std::string& what) const;
  // A server-streaming Connect call; the body is Connect envelopes.
  Result<std::unique_ptr<http::ResponseStream>> stream(const std::string& method,
                                                       const json& request,
                                                       const http::Headers& extra) const;
  // GET /files: the open response once it is known to be 200.
  Result<std::unique_ptr<http::ResponseStream>> download(const std::string& path) const;
  // POST /files with a chunked octet-stream body.
  Status upload(const std::string& path, const http::BodySource& body) const;
  // POST /execute on the code interpreter (port 49999): its NDJSON lines.
  Result<std::unique_ptr<http::ResponseStream>> execute(const json& request) const;

  const std::string& id() const { return id_; }
  const std::string& user() const { return user_; }

 private:
  SandboxPlane(http::Client client, std::string id, std::string user, http::Headers headers)
      : client_(std::move(client)),
        id_(std::move(id)),
        user_(std::move(user)),
        headers_(std::move(headers)) {}
  std::string files_target(const std::string& path) const;
  http::Headers interpreter_headers() const;

  http::Client client_;
  std::string id_;
  std::string user_;
  http::Headers headers_;
};

}  // namespace abx::e2b
