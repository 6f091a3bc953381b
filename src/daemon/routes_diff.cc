// GET /abx/v1/sandboxes/{id}/diff: what the sandbox changed on top of its
// template (and the snapshots it stands on), like `docker diff`
// (runtime/layer_diff.h), read from its writable layer on request.
#include "daemon/routes.h"
#include "daemon/service.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

// The layers under the sandbox's writable layer, topmost first.
std::vector<std::filesystem::path> lowers_of(Service& service, const SandboxRow& row) {
  std::vector<std::filesystem::path> lowers;
  for (const std::string& layer : row.snapshot_layers)
    lowers.push_back(service.snapshots().layer_path(layer));
  for (const std::string& layer : row.template_layers) lowers.emplace_back(layer);
  return lowers;
}

json diff_json(const runtime::layer_diff::Diff& diff) {
  json changes = json::array();
  for (const auto& entry : diff.changes)
    changes.push_back({{"path", entry.path},
                       {"kind", entry.kind},
                       {"change", runtime::layer_diff::change_name(entry.change)},
                       {"size", entry.size}});
  return {{"changes", std::move(changes)}, {"truncated", diff.truncated}};
}

}  // namespace

Task<void> sandbox_diff(ControlCall& call, Exchange& exchange) {
  auto live = sandbox_of(call);
  if (!live) co_return co_await respond_error(exchange, live.error());
  const SandboxRow row = (*live)->snapshot();
  const auto lowers = lowers_of(call.service, row);
  Result<runtime::layer_diff::Diff> diff = Error::with_message("not read", EIO);
  co_await call.service.pool().run([&] { diff = (*live)->sandbox->diff_writable_layer(lowers); });
  if (!diff) co_return co_await respond_error(exchange, diff.error());
  co_await respond_json(exchange, 200, diff_json(*diff));
}

}  // namespace abx::daemon::routes
