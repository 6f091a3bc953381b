// Health checks of both planes, the daemon's version and envd's small GET endpoints.
#include "common/version.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

nlohmann::json envd_metric_json(LiveSandbox& live) {
  const nlohmann::json sample = sandbox_metric(live);
  return {{"ts", sample["timestampUnix"]},        {"cpu_count", sample["cpuCount"]},
          {"cpu_used_pct", sample["cpuUsedPct"]}, {"mem_total", sample["memTotal"]},
          {"mem_used", sample["memUsed"]},        {"mem_cache", sample["memCache"]},
          {"disk_used", sample["diskUsed"]},      {"disk_total", sample["diskTotal"]}};
}

// Built outside the coroutine (g++ 12 and braced string literals).
nlohmann::json version_json() {
  return {{"version", version::kNumber}, {"commit", version::commit()}};
}

}  // namespace

Task<void> version_get(ControlCall&, Exchange& exchange) {
  co_await respond_json(exchange, 200, version_json());
}

Task<void> control_health(ControlCall&, Exchange& exchange) {
  co_await exchange.respond(204, "", "");
}

Task<void> envd_health(SandboxCall&, Exchange& exchange) { co_await exchange.respond(204, "", ""); }

Task<void> envd_envs(SandboxCall& call, Exchange& exchange) {
  co_await respond_json(exchange, 200, call.row.env_vars);
}

Task<void> envd_metrics(SandboxCall& call, Exchange& exchange) {
  co_await respond_json(exchange, 200, envd_metric_json(*call.live));
}

}  // namespace abx::daemon::routes
