// Health checks of both planes, the daemon's version and info, and envd's small GET endpoints.
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

nlohmann::json info_json(const runtime::CheckpointSupport& checkpoints) {
  nlohmann::json out = version_json();
  out["checkpoint"] = {{"available", checkpoints.available}, {"reason", checkpoints.reason}};
  return out;
}

}  // namespace

Task<void> info_get(ControlCall& call, Exchange& exchange) {
  co_await respond_json(exchange, 200, info_json(call.service.checkpoint_support()));
}

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
