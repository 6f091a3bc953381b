// Sandbox plane: filesystem.Filesystem's WatchDir (a server stream) and the
// polling watchers the sync Python SDK uses instead (spec/e2b-protocol.md §8).
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/connect_frame.h"
#include "common/json_text.h"
#include "daemon/envd_requests.h"
#include "daemon/proto_json.h"
#include "daemon/routes.h"
#include "daemon/sandbox_ops.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

// inotify is drained at this pace; it bounds how late an event arrives.
constexpr auto kPollInterval = std::chrono::milliseconds(100);

json event_json(const WatchEvent& event) {
  json out = {{"name", event.name}, {"type", event.type}};
  if (event.entry) out["entry"] = proto_json::entry_info(*event.entry);
  return out;
}

std::string stream_message(const WatchEvent& event) {
  return json_text::dump(json{{"filesystem", event_json(event)}});
}

// WatchDirResponse has no "event" wrapper, unlike ProcessResponse.
std::string start_message() { return R"({"start":{}})"; }
std::string keepalive_message() { return R"({"keepalive":{}})"; }

json events_reply(const std::vector<WatchEvent>& events) {
  json out = json::array();
  for (const auto& event : events) out.push_back(event_json(event));
  return {{"events", out}};
}

json watcher_reply(const std::string& id) { return {{"watcherId", id}}; }

Error watcher_missing(const std::string& id) { return Error{"watcher " + id, ENOENT, ""}; }

// The watch a request asks for; on failure the error reply has been sent.
Task<std::shared_ptr<DirWatch>> open_watch(SandboxCall& call, Exchange& exchange,
                                           const Parsed<WatchDirRequest>& parsed) {
  const std::string path =
      runtime::sandbox_fs::absolute_path(parsed.request.path, parsed.user.home);
  auto watch = co_await sandbox_ops::open_watch(call.service, call.live->sandbox, path,
                                                parsed.request.recursive);
  if (!watch) {
    co_await connect_failure(exchange, watch.error());
    co_return nullptr;
  }
  if (parsed.request.include_entry) watch.value()->include_entries();
  co_return std::shared_ptr<DirWatch>(std::move(watch.value()));
}

// Streams until the client goes away or the directory or sandbox is gone.
Task<void> stream_watch(SandboxCall& call, Exchange& exchange, std::shared_ptr<DirWatch> watch) {
  const auto keepalive = keepalive_of(exchange.request());
  co_await exchange.start_stream(200, "application/connect+json");
  if (!co_await exchange.write_chunk(connect::encode(start_message()))) co_return;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  auto last_write = std::chrono::steady_clock::now();
  const std::string sandbox_id = call.row.id;
  while (watch->alive() && call.service.find(sandbox_id)) {
    timer.expires_after(kPollInterval);
    co_await timer.async_wait(boost::asio::use_awaitable);
    std::string frames;
    const auto events = co_await sandbox_ops::drain_watch(call.service, watch);
    for (const auto& event : events) frames += connect::encode(stream_message(event));
    const auto now = std::chrono::steady_clock::now();
    if (frames.empty() && now - last_write >= keepalive) {
      frames = connect::encode(keepalive_message());
    }
    if (frames.empty()) continue;
    if (!co_await exchange.write_chunk(std::move(frames))) co_return;
    last_write = now;
  }
  if (co_await exchange.write_chunk(connect::encode("{}", connect::kFlagEndStream))) {
    co_await exchange.finish_stream();
  }
}

}  // namespace

Task<void> fs_watch_dir(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_watch_dir);
  if (!parsed) co_return;
  auto watch = co_await open_watch(call, exchange, *parsed);
  if (watch) co_await stream_watch(call, exchange, std::move(watch));
}

Task<void> fs_create_watcher(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_watch_dir);
  if (!parsed) co_return;
  auto watch = co_await open_watch(call, exchange, *parsed);
  if (!watch) co_return;
  const std::string id = call.live->watchers->add(std::move(watch));
  co_await respond_json(exchange, 200, watcher_reply(id));
}

Task<void> fs_get_watcher_events(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_watcher);
  if (!parsed) co_return;
  const std::string& id = parsed->request.watcher_id;
  auto watch = call.live->watchers->find(id);
  if (!watch) co_return co_await connect_failure(exchange, watcher_missing(id));
  const auto events = co_await sandbox_ops::drain_watch(call.service, watch);
  co_await respond_json(exchange, 200, events_reply(events));
}

Task<void> fs_remove_watcher(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_watcher);
  if (!parsed) co_return;
  const std::string& id = parsed->request.watcher_id;
  if (!call.live->watchers->remove(id)) {
    co_return co_await connect_failure(exchange, watcher_missing(id));
  }
  co_await respond_json(exchange, 200, json::object());
}

}  // namespace abx::daemon::routes
