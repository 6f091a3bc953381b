// The route files, one per resource (as firecracker's api_server does it):
// each parses and validates its HTTP requests into typed calls on the core.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/caller.h"
#include "daemon/envd_auth.h"
#include "daemon/error_map.h"
#include "daemon/http_exchange.h"
#include "daemon/service.h"

namespace abx::daemon::routes {

using http::Exchange;
using http::Task;

Task<void> respond_json(Exchange& exchange, int status, const nlohmann::json& body,
                        http::Headers extra = {});
nlohmann::json error_json(int status, const std::string& message);
// The end frame's payload of a failed server stream.
std::string stream_error(const std::string& code, const std::string& message);
// Control-plane and /files errors: {"code":<status>,"message":...}.
Task<void> respond_error(Exchange& exchange, int status, const std::string& message);
// The same with the status error_map gives `error` (routes_common.cc).
Task<void> respond_error(Exchange& exchange, const Error& error);
// The whole body, or a 413-kind error when it is larger than `limit` bytes.
Task<Result<std::string>> read_json_body(Exchange& exchange, size_t limit);

// What every control-plane route knows about the request.
struct ControlCall {
  Service& service;
  Caller caller;
  std::map<std::string, std::string> params = {};  // from the route's pattern, e.g. {id}
};

// The {id} of the route, or a bad-input error when it is not a sandbox id.
Result<std::string> id_param(const ControlCall& call);
// The answer for a sandbox the caller may not see, exactly as for one that never was.
Error sandbox_not_found(const std::string& id);
// The caller's live sandbox the route's {id} names, or the error to answer
// (bad input, or not found for another team's sandbox as for none).
Result<std::shared_ptr<LiveSandbox>> sandbox_of(const ControlCall& call);

// The control plane, one handler per row of the route table (route_table.cc).
// routes_health.cc
Task<void> control_health(ControlCall& call, Exchange& exchange);
Task<void> version_get(ControlCall& call, Exchange& exchange);  // `abx version`
Task<void> info_get(ControlCall& call, Exchange& exchange);     // `abx info` without an id
// routes_sandboxes.cc: E2B's /sandboxes and /v2/sandboxes.
Task<void> sandboxes_list(ControlCall& call, Exchange& exchange);
Task<void> sandboxes_list_v2(ControlCall& call, Exchange& exchange);  // paginated
Task<void> sandboxes_create(ControlCall& call, Exchange& exchange);
Task<void> sandboxes_create_v2(ControlCall& call, Exchange& exchange);  // always secure
Task<void> sandboxes_metrics(ControlCall& call, Exchange& exchange);
Task<void> sandbox_get(ControlCall& call, Exchange& exchange);
Task<void> sandbox_kill(ControlCall& call, Exchange& exchange);
Task<void> sandbox_set_timeout(ControlCall& call, Exchange& exchange);
Task<void> sandbox_pause(ControlCall& call, Exchange& exchange);
Task<void> sandbox_resume(ControlCall& call, Exchange& exchange);
Task<void> sandbox_connect(ControlCall& call, Exchange& exchange);
Task<void> sandbox_metrics(ControlCall& call, Exchange& exchange);
Task<void> sandbox_logs(ControlCall& call, Exchange& exchange);
Task<void> sandbox_processes(ControlCall& call, Exchange& exchange);
Task<void> process_output(ControlCall& call, Exchange& exchange);
Task<void> sandbox_events(ControlCall& call, Exchange& exchange);
Task<void> sandbox_diff(ControlCall& call, Exchange& exchange);
// routes_ended.cc: the team's ended sandboxes whose record is kept.
Task<void> sandboxes_ended(ControlCall& call, Exchange& exchange);
Task<void> sandbox_network_update(ControlCall& call, Exchange& exchange);
// The newest SandboxMetric sample (the control plane's camelCase shape).
nlohmann::json sandbox_metric(LiveSandbox& live);
// A sandbox as GET /sandboxes lists it (ListedSandbox).
nlohmann::json sandbox_listing(const SandboxRow& row);
// A sandbox as a create answers it (E2B's Sandbox).
nlohmann::json sandbox_created(const SandboxRow& row);
// routes_snapshots.cc: snapshots and fork.
Task<void> sandbox_snapshot_create(ControlCall& call, Exchange& exchange);
Task<void> snapshots_list(ControlCall& call, Exchange& exchange);
Task<void> snapshot_delete(ControlCall& call, Exchange& exchange);
Task<void> sandbox_fork(ControlCall& call, Exchange& exchange);
// routes_dashboard.cc: the web dashboard's page, assets and login sessions.
Task<void> dashboard_page(ControlCall& call, Exchange& exchange);
Task<void> dashboard_asset(ControlCall& call, Exchange& exchange);
Task<void> dashboard_versioned_asset(ControlCall& call, Exchange& exchange);
Task<void> dashboard_login(ControlCall& call, Exchange& exchange);
Task<void> dashboard_logout(ControlCall& call, Exchange& exchange);
Task<void> dashboard_session(ControlCall& call, Exchange& exchange);
Task<void> dashboard_bootstrap(ControlCall& call, Exchange& exchange);
// routes_dashboard_events.cc: its live feed (server-sent events), and the
// snapshot it starts from: the caller's sandboxes as listed, and a digest of
// them (a page that holds them already asks the feed not to send them again).
struct FeedSnapshot {
  std::string sandboxes;  // JSON text: an array, as GET /sandboxes lists them, with owners
  std::string digest;
};
FeedSnapshot dashboard_feed_snapshot(Service& service, const Caller& caller);
Task<void> dashboard_events(ControlCall& call, Exchange& exchange);
// routes_keys.cc: /abx/v1/keys (admin keys only).
Task<void> keys_list(ControlCall& call, Exchange& exchange);
Task<void> key_create(ControlCall& call, Exchange& exchange);
Task<void> key_revoke(ControlCall& call, Exchange& exchange);
// routes_teams.cc: a team's quota and usage.
Task<void> team_quota_get(ControlCall& call, Exchange& exchange);
Task<void> team_quota_set(ControlCall& call, Exchange& exchange);  // admin
Task<void> usage_get(ControlCall& call, Exchange& exchange);
Task<void> secrets_list(ControlCall& call, Exchange& exchange);
Task<void> secret_set(ControlCall& call, Exchange& exchange);
Task<void> secret_remove(ControlCall& call, Exchange& exchange);
// routes_templates.cc: /abx/v1/templates (our API, not E2B's).
Task<void> templates_list(ControlCall& call, Exchange& exchange);
Task<void> template_get(ControlCall& call, Exchange& exchange);
Task<void> template_remove(ControlCall& call, Exchange& exchange);
Task<void> template_build(ControlCall& call, Exchange& exchange);
Task<void> template_import(ControlCall& call, Exchange& exchange);
Task<void> template_from_snapshot(ControlCall& call, Exchange& exchange);  // of a snapshot's files
Task<void> template_push(ControlCall& call, Exchange& exchange);           // to a registry
Task<void> template_export(ControlCall& call, Exchange& exchange);         // an OCI layout tar
Task<void> template_pull(ControlCall& call, Exchange& exchange);           // from a registry
// E2B's GET /templates/aliases/{alias}, in the same file: whether a name exists.
Task<void> template_alias_get(ControlCall& call, Exchange& exchange);
// routes_e2b_templates.cc: E2B's template builds (Template.build() of the SDKs).
Task<void> e2b_template_request(ControlCall& call, Exchange& exchange);       // POST /v3/templates
Task<void> e2b_template_files(ControlCall& call, Exchange& exchange);         // an upload link
Task<void> e2b_template_upload(ControlCall& call, Exchange& exchange);        // the link's PUT
Task<void> e2b_template_build_start(ControlCall& call, Exchange& exchange);   // the steps
Task<void> e2b_template_build_status(ControlCall& call, Exchange& exchange);  // status and log
Task<void> e2b_template_tags_assign(ControlCall& call, Exchange& exchange);  // POST /templates/tags
Task<void> e2b_template_tags_remove(ControlCall& call, Exchange& exchange);  // DELETE the same
Task<void> e2b_template_tags_list(ControlCall& call, Exchange& exchange);    // GET .../{id}/tags
// routes_volumes.cc: E2B's /volumes and the volume content API.
Task<void> volumes_list(ControlCall& call, Exchange& exchange);
Task<void> volume_create(ControlCall& call, Exchange& exchange);
Task<void> volume_get(ControlCall& call, Exchange& exchange);
Task<void> volume_delete(ControlCall& call, Exchange& exchange);
Task<void> volume_dir_list(ControlCall& call, Exchange& exchange);
Task<void> volume_dir_make(ControlCall& call, Exchange& exchange);
Task<void> volume_file_read(ControlCall& call, Exchange& exchange);
Task<void> volume_file_write(ControlCall& call, Exchange& exchange);
Task<void> volume_path_stat(ControlCall& call, Exchange& exchange);
Task<void> volume_path_remove(ControlCall& call, Exchange& exchange);
Task<void> volume_path_update(ControlCall& call, Exchange& exchange);
// routes_mcp.cc: MCP's Streamable HTTP transport.
Task<void> mcp_post(ControlCall& call, Exchange& exchange);
Task<void> mcp_delete(ControlCall& call, Exchange& exchange);

// What every sandbox-plane route knows about the request.
struct SandboxCall {
  Service& service;
  std::shared_ptr<LiveSandbox> live;
  SandboxRow row;                                  // snapshot at the start of the request
  std::map<std::string, std::string> params = {};  // from the route's pattern, e.g. {context}
  Caller caller = {};                              // a token's caller is the sandbox's team
};

// The sandbox plane, one handler per row of the route table (route_table.cc).
// envd (port 49983): /files, process.Process/*, filesystem.Filesystem/*.
Task<void> files_download(SandboxCall& call, Exchange& exchange);
Task<void> files_upload(SandboxCall& call, Exchange& exchange);
Task<void> process_start(SandboxCall& call, Exchange& exchange);
Task<void> process_connect(SandboxCall& call, Exchange& exchange);
Task<void> process_list(SandboxCall& call, Exchange& exchange);
Task<void> process_send_input(SandboxCall& call, Exchange& exchange);
Task<void> process_update(SandboxCall& call, Exchange& exchange);
Task<void> process_send_signal(SandboxCall& call, Exchange& exchange);
Task<void> process_close_stdin(SandboxCall& call, Exchange& exchange);
Task<void> fs_stat(SandboxCall& call, Exchange& exchange);
Task<void> fs_make_dir(SandboxCall& call, Exchange& exchange);
Task<void> fs_move(SandboxCall& call, Exchange& exchange);
Task<void> fs_list_dir(SandboxCall& call, Exchange& exchange);
Task<void> fs_remove(SandboxCall& call, Exchange& exchange);
Task<void> fs_watch_dir(SandboxCall& call, Exchange& exchange);
Task<void> fs_create_watcher(SandboxCall& call, Exchange& exchange);
Task<void> fs_get_watcher_events(SandboxCall& call, Exchange& exchange);
Task<void> fs_remove_watcher(SandboxCall& call, Exchange& exchange);
// routes_health.cc: envd's GET /health, /envs and /metrics (snake_case, as envd writes it).
Task<void> envd_health(SandboxCall& call, Exchange& exchange);
Task<void> envd_envs(SandboxCall& call, Exchange& exchange);
Task<void> envd_metrics(SandboxCall& call, Exchange& exchange);
// routes_proxy.cc: any other port, forwarded to the server the sandbox runs
// (the port is call.params["port"]).
Task<void> proxy_port(SandboxCall& call, Exchange& exchange);
// The code interpreter (port 49999); {context} is call.params["context"].
Task<void> interp_health(SandboxCall& call, Exchange& exchange);
Task<void> interp_execute(SandboxCall& call, Exchange& exchange);
Task<void> interp_list_contexts(SandboxCall& call, Exchange& exchange);
Task<void> interp_create_context(SandboxCall& call, Exchange& exchange);
Task<void> interp_remove_context(SandboxCall& call, Exchange& exchange);
Task<void> interp_restart_context(SandboxCall& call, Exchange& exchange);

// Shared by the Connect routes (routes_connect.cc).
Task<void> connect_error(Exchange& exchange, const std::string& code, const std::string& message);
// The request message of a unary call or the single envelope of a
// server-stream call; on failure an invalid_argument reply has been sent.
Task<std::optional<nlohmann::json>> read_connect_request(Exchange& exchange, bool streaming);
// The user the call acts as; on failure an unauthenticated reply has been sent.
// Who a sandbox's processes run as when a request names no user.
envd_auth::SandboxUser default_user_of(const SandboxRow& row);
// The request's user; without one, the sandbox's default user.
Task<std::optional<envd_auth::SandboxUser>> connect_user(Exchange& exchange, const SandboxRow& row);
bool is_streaming(const http::Request& request);
// Keepalive-Ping-Interval, envd's 90 s when absent.
std::chrono::seconds keepalive_of(const http::Request& request);

// A Connect request's message and the user it acts as; on failure the
// error reply has been sent.
struct ConnectInput {
  nlohmann::json message;
  envd_auth::SandboxUser user;
};
Task<std::optional<ConnectInput>> read_connect_input(SandboxCall& call, Exchange& exchange);
// A failed call's Connect error, its code from error_map.
Task<void> connect_failure(Exchange& exchange, const Error& error);

// The sandbox was killed (or reached its end) while this request ran.
bool sandbox_gone(const SandboxCall& call);
// Ends a started stream whose sandbox went away as E2B's proxy does: its
// reverse proxy aborts the response, so the SDK sees the connection end,
// finds the sandbox gone with a health probe and reports it was killed. The
// escaping exception makes the server close the connection without ending
// the chunked body.
[[noreturn]] void drop_stream(const SandboxCall& call);

// A Connect call's request as `parse` reads it, and its user; on failure the
// error reply has been sent.
template <class Request>
struct Parsed {
  Request request;
  envd_auth::SandboxUser user;
};
template <class Request>
Task<std::optional<Parsed<Request>>> read_parsed(SandboxCall& call, Exchange& exchange,
                                                 Result<Request> (*parse)(const nlohmann::json&)) {
  auto input = co_await read_connect_input(call, exchange);
  if (!input) co_return std::nullopt;
  auto request = parse(input->message);
  if (!request) {
    co_await connect_failure(exchange, request.error());
    co_return std::nullopt;
  }
  co_return Parsed<Request>{std::move(*request), std::move(input->user)};
}

}  // namespace abx::daemon::routes
