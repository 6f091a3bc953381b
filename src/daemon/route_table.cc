#include "daemon/route_table.h"

#include <array>

namespace abx::daemon {
namespace {

using namespace routes;
using P = Plane;
using C = Credential;

#define ROW(method, pattern, plane, credential, handler) \
  Route { method, pattern, plane, credential, &handler, #handler }

// clang-format off
const std::array kRoutes = {
    // Control plane: E2B's API (spec/daemon-api.md) and our own under /abx/v1.
    ROW("GET",    "/health",                           P::control, C::none,    control_health),
    ROW("GET",    "/sandboxes",                        P::control, C::api_key, sandboxes_list),
    ROW("POST",   "/sandboxes",                        P::control, C::api_key, sandboxes_create),
    ROW("GET",    "/v2/sandboxes",                     P::control, C::api_key, sandboxes_list_v2),
    ROW("POST",   "/v2/sandboxes",                     P::control, C::api_key, sandboxes_create_v2),
    ROW("GET",    "/sandboxes/metrics",                P::control, C::api_key, sandboxes_metrics),
    ROW("GET",    "/sandboxes/{id}",                   P::control, C::api_key, sandbox_get),
    ROW("DELETE", "/sandboxes/{id}",                   P::control, C::api_key, sandbox_kill),
    ROW("POST",   "/sandboxes/{id}/timeout",           P::control, C::api_key, sandbox_set_timeout),
    ROW("POST",   "/sandboxes/{id}/pause",             P::control, C::api_key, sandbox_pause),
    ROW("POST",   "/sandboxes/{id}/resume",            P::control, C::api_key, sandbox_resume),
    ROW("POST",   "/sandboxes/{id}/connect",           P::control, C::api_key, sandbox_connect),
    ROW("POST",   "/v2/sandboxes/{id}/connect",        P::control, C::api_key, sandbox_connect),
    ROW("GET",    "/sandboxes/{id}/metrics",           P::control, C::api_key, sandbox_metrics),
    ROW("GET",    "/sandboxes/{id}/logs",              P::control, C::api_key, sandbox_logs),
    ROW("PUT",    "/sandboxes/{id}/network",           P::control, C::api_key, sandbox_network_update),
    ROW("POST",   "/sandboxes/{id}/snapshots",         P::control, C::api_key, sandbox_snapshot_create),
    ROW("POST",   "/sandboxes/{id}/fork",              P::control, C::api_key, sandbox_fork),
    ROW("GET",    "/snapshots",                        P::control, C::api_key, snapshots_list),
    ROW("POST",   "/templates/tags",                   P::control, C::api_key, e2b_template_tags_assign),
    ROW("DELETE", "/templates/tags",                   P::control, C::api_key, e2b_template_tags_remove),
    ROW("GET",    "/templates/{id}/tags",              P::control, C::api_key, e2b_template_tags_list),
    ROW("DELETE", "/templates/{id}",                   P::control, C::api_key, snapshot_delete),
    ROW("GET",    "/templates/aliases/{alias}",        P::control, C::api_key, template_alias_get),
    ROW("POST",   "/v3/templates",                     P::control, C::api_key, e2b_template_request),
    ROW("GET",    "/templates/{id}/files/{hash}",      P::control, C::api_key, e2b_template_files),
    ROW("POST",   "/v2/templates/{id}/builds/{buildID}", P::control, C::api_key, e2b_template_build_start),
    ROW("GET",    "/templates/{id}/builds/{buildID}/status", P::control, C::api_key, e2b_template_build_status),
    ROW("PUT",    "/abx/v1/e2b-uploads/{token}",       P::control, C::none,    e2b_template_upload),
    ROW("GET",    "/volumes",                          P::control, C::api_key, volumes_list),
    ROW("POST",   "/volumes",                          P::control, C::api_key, volume_create),
    ROW("GET",    "/volumes/{volumeID}",               P::control, C::api_key, volume_get),
    ROW("DELETE", "/volumes/{volumeID}",               P::control, C::api_key, volume_delete),
    ROW("GET",    "/volumecontent/{volumeID}/dir",     P::control, C::volume_token, volume_dir_list),
    ROW("POST",   "/volumecontent/{volumeID}/dir",     P::control, C::volume_token, volume_dir_make),
    ROW("GET",    "/volumecontent/{volumeID}/file",    P::control, C::volume_token, volume_file_read),
    ROW("PUT",    "/volumecontent/{volumeID}/file",    P::control, C::volume_token, volume_file_write),
    ROW("GET",    "/volumecontent/{volumeID}/path",    P::control, C::volume_token, volume_path_stat),
    ROW("DELETE", "/volumecontent/{volumeID}/path",    P::control, C::volume_token, volume_path_remove),
    ROW("PATCH",  "/volumecontent/{volumeID}/path",    P::control, C::volume_token, volume_path_update),
    ROW("GET",    "/abx/v1/templates",                 P::control, C::api_key, templates_list),
    ROW("GET",    "/abx/v1/templates/{name}",          P::control, C::api_key, template_get),
    ROW("DELETE", "/abx/v1/templates/{name}",          P::control, C::api_key, template_remove),
    ROW("POST",   "/abx/v1/templates/{name}/build",    P::control, C::api_key, template_build),
    ROW("POST",   "/abx/v1/templates/{name}/import",   P::control, C::api_key, template_import),
    ROW("POST",   "/abx/v1/templates/{name}/snapshot", P::control, C::api_key, template_from_snapshot),
    ROW("POST",   "/abx/v1/templates/{name}/push",     P::control, C::api_key, template_push),
    ROW("POST",   "/abx/v1/templates/{name}/pull",     P::control, C::api_key, template_pull),
    ROW("GET",    "/abx/v1/templates/{name}/export",   P::control, C::api_key, template_export),
    ROW("GET",    "/abx/v1/keys",                      P::control, C::admin_key, keys_list),
    ROW("POST",   "/abx/v1/keys",                      P::control, C::admin_key, key_create),
    ROW("DELETE", "/abx/v1/keys/{id}",                 P::control, C::admin_key, key_revoke),
    ROW("GET",    "/abx/v1/teams/{team}/quota",        P::control, C::api_key, team_quota_get),
    ROW("PUT",    "/abx/v1/teams/{team}/quota",        P::control, C::admin_key, team_quota_set),
    ROW("GET",    "/abx/v1/sandboxes/ended",           P::control, C::api_key, sandboxes_ended),
    ROW("GET",    "/abx/v1/sandboxes/{id}/processes",  P::control, C::api_key, sandbox_processes),
    ROW("GET",    "/abx/v1/sandboxes/{id}/processes/{pid}/output", P::control, C::api_key, process_output),
    ROW("GET",    "/abx/v1/sandboxes/{id}/events", P::control, C::api_key, sandbox_events),
    ROW("GET",    "/abx/v1/sandboxes/{id}/diff", P::control, C::api_key, sandbox_diff),
    ROW("GET",    "/abx/v1/usage",                     P::control, C::api_key, usage_get),
    ROW("GET",    "/abx/v1/version",                   P::control, C::api_key, version_get),
    ROW("GET",    "/abx/v1/info",                      P::control, C::api_key, info_get),
    ROW("GET",    "/abx/v1/secrets",                   P::control, C::api_key, secrets_list),
    ROW("PUT",    "/abx/v1/secrets/{name}",            P::control, C::api_key, secret_set),
    ROW("DELETE", "/abx/v1/secrets/{name}",            P::control, C::api_key, secret_remove),
    ROW("POST",   "/mcp",                              P::control, C::api_key, mcp_post),
    ROW("DELETE", "/mcp",                              P::control, C::api_key, mcp_delete),
    // The web dashboard: its page and assets are public, its session cookie
    // counts as an api key here and on every route above.
    ROW("GET",    "/dashboard",                        P::control, C::none,    dashboard_page),
    ROW("GET",    "/dashboard/assets/{name}",          P::control, C::none,    dashboard_asset),
    ROW("GET",    "/dashboard/assets/{version}/{name}", P::control, C::none,   dashboard_versioned_asset),
    ROW("POST",   "/dashboard/login",                  P::control, C::none,    dashboard_login),
    ROW("POST",   "/dashboard/logout",                 P::control, C::api_key, dashboard_logout),
    ROW("GET",    "/dashboard/session",                P::control, C::api_key, dashboard_session),
    ROW("GET",    "/dashboard/bootstrap",              P::control, C::api_key, dashboard_bootstrap),
    ROW("GET",    "/dashboard/events",                 P::control, C::api_key, dashboard_events),
    // Sandbox plane, port 49983: envd's plain HTTP endpoints and Connect RPCs.
    ROW("GET",    "/health",                           P::envd, C::none,               envd_health),
    ROW("GET",    "/envs",                             P::envd, C::access_token,       envd_envs),
    ROW("GET",    "/metrics",                          P::envd, C::access_token,       envd_metrics),
    ROW("GET",    "/files",                            P::envd, C::token_or_signature, files_download),
    ROW("POST",   "/files",                            P::envd, C::token_or_signature, files_upload),
    ROW("POST",   "/process.Process/Start",            P::envd, C::access_token,       process_start),
    ROW("POST",   "/process.Process/Connect",          P::envd, C::access_token,       process_connect),
    ROW("POST",   "/process.Process/List",             P::envd, C::access_token,       process_list),
    ROW("POST",   "/process.Process/SendInput",        P::envd, C::access_token,       process_send_input),
    ROW("POST",   "/process.Process/Update",           P::envd, C::access_token,       process_update),
    ROW("POST",   "/process.Process/SendSignal",       P::envd, C::access_token,       process_send_signal),
    ROW("POST",   "/process.Process/CloseStdin",       P::envd, C::access_token,       process_close_stdin),
    ROW("POST",   "/filesystem.Filesystem/Stat",       P::envd, C::access_token,       fs_stat),
    ROW("POST",   "/filesystem.Filesystem/MakeDir",    P::envd, C::access_token,       fs_make_dir),
    ROW("POST",   "/filesystem.Filesystem/Move",       P::envd, C::access_token,       fs_move),
    ROW("POST",   "/filesystem.Filesystem/ListDir",    P::envd, C::access_token,       fs_list_dir),
    ROW("POST",   "/filesystem.Filesystem/Remove",     P::envd, C::access_token,       fs_remove),
    ROW("POST",   "/filesystem.Filesystem/WatchDir",   P::envd, C::access_token,       fs_watch_dir),
    ROW("POST",   "/filesystem.Filesystem/CreateWatcher",    P::envd, C::access_token, fs_create_watcher),
    ROW("POST",   "/filesystem.Filesystem/GetWatcherEvents", P::envd, C::access_token, fs_get_watcher_events),
    ROW("POST",   "/filesystem.Filesystem/RemoveWatcher",    P::envd, C::access_token, fs_remove_watcher),
    // Sandbox plane, port 49999: the code interpreter. E2B's SDKs send the
    // access token to /execute only; /contexts is a port of the sandbox
    // there, public unless the sandbox was made with allowPublicTraffic false.
    ROW("GET",    "/health",                           P::interpreter, C::none,         interp_health),
    ROW("POST",   "/execute",                          P::interpreter, C::access_token, interp_execute),
    ROW("GET",    "/contexts",                         P::interpreter, C::traffic_token,  interp_list_contexts),
    ROW("POST",   "/contexts",                         P::interpreter, C::traffic_token,  interp_create_context),
    ROW("DELETE", "/contexts/{context}",               P::interpreter, C::traffic_token,  interp_remove_context),
    ROW("POST",   "/contexts/{context}/restart",       P::interpreter, C::traffic_token,  interp_restart_context),
    // Sandbox plane, any other port: forwarded to the server the sandbox runs.
    ROW("*",      "*",                                 P::proxy, C::traffic_token,     proxy_port),
};
// clang-format on

#undef ROW

// Next "/"-separated segment of `text` from `pos` (without the slash).
std::string_view segment(std::string_view text, size_t& pos) {
  if (pos < text.size() && text[pos] == '/') ++pos;
  const size_t end = std::min(text.find('/', pos), text.size());
  const std::string_view out = text.substr(pos, end - pos);
  pos = end;
  return out;
}

// Matches `path` against `pattern` segment by segment, filling `params`.
bool path_matches(std::string_view pattern, std::string_view path,
                  std::map<std::string, std::string>& params) {
  if (pattern == "*") return true;
  size_t at_pattern = 0;
  size_t at_path = 0;
  while (at_pattern < pattern.size() && at_path < path.size()) {
    const std::string_view want = segment(pattern, at_pattern);
    const std::string_view got = segment(path, at_path);
    if (want.size() > 2 && want.front() == '{' && want.back() == '}') {
      if (got.empty()) return false;
      params.emplace(std::string(want.substr(1, want.size() - 2)), std::string(got));
    } else if (want != got) {
      return false;
    }
  }
  return at_pattern == pattern.size() && at_path == path.size();
}

}  // namespace

std::span<const Route> route_table() { return kRoutes; }

RouteMatch match_route(Plane plane, std::string_view method, std::string_view path) {
  RouteMatch out;
  if (!path.starts_with('/')) return out;  // "health" is not "/health"
  for (const Route& route : kRoutes) {
    if (route.plane != plane) continue;
    std::map<std::string, std::string> params;
    if (!path_matches(route.pattern, path, params)) continue;
    if (route.method == method || route.method == "*") {
      out.route = &route;
      out.params = std::move(params);
      return out;
    }
    out.allowed += (out.allowed.empty() ? "" : ", ") + std::string(route.method);
  }
  return out;
}

std::string_view plane_name(Plane plane) {
  switch (plane) {
    case Plane::control:
      return "control";
    case Plane::envd:
      return "envd";
    case Plane::interpreter:
      return "interpreter";
    case Plane::proxy:
      return "proxy";
  }
  return "?";
}

std::string_view credential_name(Credential credential) {
  switch (credential) {
    case Credential::none:
      return "none";
    case Credential::api_key:
      return "api key";
    case Credential::admin_key:
      return "admin api key";
    case Credential::access_token:
      return "access token or team key";
    case Credential::token_or_signature:
      return "access token, team key or signed URL";
    case Credential::traffic_token:
      return "traffic token if required";
    case Credential::volume_token:
      return "volume token or team key";
  }
  return "?";
}

}  // namespace abx::daemon
