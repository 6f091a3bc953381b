// Sandbox plane: filesystem.Filesystem's WatchDir (a server stream) and the
// polling watchers the sync Python SDK uses instead (spec/e2b-protocol.md §8).
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/connect_frame.h"
#include "daemon/error_map.h"
#include "daemon/proto_json.h"
#include "daemon/routes.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
using proto_json::field;

// inotify is drained at this pace; it bounds how late an event arrives.
constexpr auto kPollInterval = std::chrono::milliseconds(100);

json event_json(const WatchEvent& event) { return {{"name", event.name}, {"type", event.type}}; }

std::string stream_message(const WatchEvent& event) {
  return json{{"filesystem", event_json(event)}}.dump();
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

std::string string_field(const json& message, const char* camel, const char* snake) {
  const json* value = field(message, camel, snake);
  return value && value->is_string() ? value->get<std::string>() : std::string{};
}

struct Opened {
  std::unique_ptr<DirWatch> watch;
  std::string bad_input;
  std::optional<Error> error;
};

Opened open_watch(SandboxCall& call, const json& message, const envd_auth::SandboxUser& user) {
  const std::string path = string_field(message, "path", "path");
  if (path.empty()) return {nullptr, "path: required", std::nullopt};
  const json* recursive = field(message, "recursive", "recursive");
  if (recursive && !recursive->is_boolean()) {
    return {nullptr, "recursive: must be true or false", std::nullopt};
  }
  auto watch =
      DirWatch::open(call.live->sandbox, runtime::sandbox_fs::absolute_path(path, user.home),
                     recursive && recursive->get<bool>());
  if (!watch) return {nullptr, {}, watch.error()};
  return {std::move(watch.value()), {}, std::nullopt};
}

// Sends the reply for a failed open; false when the watch is usable.
Task<bool> refused(Exchange& exchange, const Opened& opened) {
  if (!opened.bad_input.empty()) {
    co_await connect_error(exchange, "invalid_argument", opened.bad_input);
    co_return true;
  }
  if (opened.error) {
    const std::string code = error_map::connect_code(opened.error->errnum);
    co_await connect_error(exchange, code, opened.error->message());
    co_return true;
  }
  co_return false;
}

// Streams until the client goes away or the directory or sandbox is gone.
Task<void> stream_watch(SandboxCall& call, Exchange& exchange, DirWatch& watch) {
  const auto keepalive = keepalive_of(exchange.request());
  co_await exchange.start_stream(200, "application/connect+json");
  if (!co_await exchange.write_chunk(connect::encode(start_message()))) co_return;
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  auto last_write = std::chrono::steady_clock::now();
  const std::string sandbox_id = call.row.id;
  while (watch.alive() && call.service.find(sandbox_id)) {
    timer.expires_after(kPollInterval);
    co_await timer.async_wait(boost::asio::use_awaitable);
    std::string frames;
    for (const auto& event : watch.drain()) frames += connect::encode(stream_message(event));
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

Task<void> watch_dir(SandboxCall& call, Exchange& exchange, const json& message,
                     const envd_auth::SandboxUser& user) {
  Opened opened;
  co_await call.service.pool().run([&] { opened = open_watch(call, message, user); });
  if (co_await refused(exchange, opened)) co_return;
  co_await stream_watch(call, exchange, *opened.watch);
}

Task<void> create_watcher(SandboxCall& call, Exchange& exchange, const json& message,
                          const envd_auth::SandboxUser& user) {
  Opened opened;
  co_await call.service.pool().run([&] { opened = open_watch(call, message, user); });
  if (co_await refused(exchange, opened)) co_return;
  const std::string id = call.live->watchers->add(std::move(opened.watch));
  co_await respond_json(exchange, 200, watcher_reply(id));
}

Task<void> watcher_call(SandboxCall& call, Exchange& exchange, const std::string& method,
                        const json& message) {
  const std::string id = string_field(message, "watcherId", "watcher_id");
  if (id.empty())
    co_return co_await connect_error(exchange, "invalid_argument", "watcherId: required");
  if (method == "RemoveWatcher") {
    if (!call.live->watchers->remove(id)) {
      co_return co_await connect_error(exchange, "not_found", "watcher " + id + " not found");
    }
    co_return co_await respond_json(exchange, 200, json::object());
  }
  auto watch = call.live->watchers->find(id);
  if (!watch)
    co_return co_await connect_error(exchange, "not_found", "watcher " + id + " not found");
  co_await respond_json(exchange, 200, events_reply(watch->drain()));
}

}  // namespace

bool is_watch_method(const std::string& method) {
  return method == "WatchDir" || method == "CreateWatcher" || method == "GetWatcherEvents" ||
         method == "RemoveWatcher";
}

Task<void> watch(SandboxCall& call, Exchange& exchange, const std::string& method) {
  auto message = co_await read_connect_request(exchange, is_streaming(exchange.request()));
  if (!message) co_return;
  auto user = co_await connect_user(exchange, call.row);
  if (!user) co_return;
  if (method == "WatchDir") co_return co_await watch_dir(call, exchange, *message, *user);
  if (method == "CreateWatcher") co_return co_await create_watcher(call, exchange, *message, *user);
  co_await watcher_call(call, exchange, method, *message);
}

}  // namespace abx::daemon::routes
