// The Streamable HTTP transport of the MCP server: one mcp::Session per
// Mcp-Session-Id, the same tools as `abx mcp serve`, answered as plain JSON.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <map>
#include <mutex>

#include "common/ids.h"
#include "common/json_text.h"
#include "daemon/routes.h"
#include "mcp/session.h"
#include "mcp/stdio_server.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

constexpr size_t kMaxMessageBytes = 32u << 20;  // file_write carries whole files
constexpr auto kIdleSessionLimit = std::chrono::hours(1);
constexpr auto kReplyPoll = std::chrono::milliseconds(10);

constexpr const char* kNoHostFiles =
    "upload and download are not offered over the daemon's /mcp: the host paths would be on the "
    "daemon's machine. Use file_write/file_read, or run `abx mcp serve` where the files are.";

struct SessionEntry {
  std::shared_ptr<mcp::Session> session;
  std::string key_id;  // the API key that opened it: only that key may use it
  std::chrono::steady_clock::time_point last_used;
};

// Sessions by id. A session answers only the key that opened it; to any
// other it does not exist.
class Sessions {
 public:
  std::string add(std::shared_ptr<mcp::Session> session, const std::string& key_id) {
    std::lock_guard lock(mutex_);
    std::string id = ids::random_hex(16);
    entries_[id] = {std::move(session), key_id, std::chrono::steady_clock::now()};
    return id;
  }
  std::shared_ptr<mcp::Session> find(const std::string& id, const std::string& key_id) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.key_id != key_id) return nullptr;
    it->second.last_used = std::chrono::steady_clock::now();
    return it->second.session;
  }
  std::shared_ptr<mcp::Session> remove(const std::string& id, const std::string& key_id) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end() || it->second.key_id != key_id) return nullptr;
    auto session = std::move(it->second.session);
    entries_.erase(it);
    return session;
  }
  // Sessions whose client went quiet without a DELETE.
  std::vector<std::shared_ptr<mcp::Session>> take_idle() {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<mcp::Session>> idle;
    const auto cutoff = std::chrono::steady_clock::now() - kIdleSessionLimit;
    std::erase_if(entries_, [&](const auto& item) {
      if (item.second.last_used >= cutoff) return false;
      idle.push_back(item.second.session);
      return true;
    });
    return idle;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, SessionEntry> entries_;
};

Sessions& sessions() {
  static Sessions instance;
  return instance;
}

// Replies arrive from the session's worker threads; the coroutine polls for
// them so no worker ever touches asio (they may outlive the io_context).
struct Replies {
  std::mutex mutex;
  std::vector<json> answers;
  size_t pending = 0;

  bool complete() {
    std::lock_guard lock(mutex);
    return pending == 0;
  }
};

// Shares ownership: a worker may answer after the request's coroutine is gone.
mcp::Reply reply_into(std::shared_ptr<Replies> replies, const json& id) {
  return [replies = std::move(replies), id](std::optional<json> answer) {
    std::lock_guard lock(replies->mutex);
    replies->answers.push_back(
        answer ? std::move(*answer)
               : mcp::rpc_error(id, mcp::kRequestCancelled, "request cancelled"));
    --replies->pending;
  };
}

// Notifications get no answer; a malformed one is dropped like its answer.
void ignore_reply(std::optional<json>) {}

bool is_request(const json& message) {
  return message.is_object() && message.contains("method") && message.contains("id");
}

bool is_initialize(const json& message) {
  return is_request(message) && message["method"] == "initialize";
}

// The daemon's own API, at the address it listens on: never one a request
// names (a Host header could point the session's tools anywhere).
e2b::Endpoint own_endpoint(const Service& service, const std::string& api_key) {
  const auto& address = service.listen_address();
  return {{address.host, std::to_string(address.port), ""}, api_key};
}

std::string too_large_message() {
  return "body: larger than " + std::to_string(kMaxMessageBytes >> 20) + " MiB";
}

Task<void> respond_rpc_error(Exchange& exchange, int status, int code, const std::string& text) {
  co_await exchange.respond(status, "application/json",
                            mcp::wire_text(mcp::rpc_error(nullptr, code, text)));
}

// Closing a session kills its sandbox through the daemon's own API, so it
// runs on the long lane: it must not hold a thread that the kill needs.
void close_in_background(Service& service, std::vector<std::shared_ptr<mcp::Session>> idle) {
  for (auto& session : idle) service.start_long([session] { session->close(); });
}

Task<void> wait_for(Replies& replies) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  while (!replies.complete()) {
    timer.expires_after(kReplyPoll);
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

Task<void> post(Service& service, Exchange& exchange, const std::string& api_key,
                const std::string& key_id) {
  bool fits = true;
  const std::string body = co_await http::read_body(exchange, kMaxMessageBytes, &fits);
  if (!fits) {
    const std::string why = too_large_message();
    co_return co_await respond_rpc_error(exchange, 413, mcp::kParseError, why);
  }
  auto parsed = json_text::parse(body);
  if (!parsed) {
    const std::string why = parsed.error().message() + ": send one JSON-RPC message (JSON)";
    co_return co_await respond_rpc_error(exchange, 400, mcp::kParseError, why);
  }
  const json& message = *parsed;
  const json batch = message.is_array() ? message : json::array({message});
  std::shared_ptr<mcp::Session> session;
  http::Headers headers;
  if (batch.size() == 1 && is_initialize(batch[0])) {
    session = std::make_shared<mcp::Session>(
        mcp::ToolboxOptions{own_endpoint(service, api_key), {}, kNoHostFiles});
    headers.emplace_back("Mcp-Session-Id", sessions().add(session, key_id));
  } else {
    const std::string id = exchange.request().header("mcp-session-id");
    if (id.empty()) {
      co_return co_await respond_rpc_error(exchange, 400, mcp::kInvalidRequest,
                                           "missing Mcp-Session-Id: send initialize first");
    }
    session = sessions().find(id, key_id);
    if (!session) {
      co_return co_await respond_rpc_error(exchange, 404, mcp::kInvalidRequest,
                                           "unknown or ended MCP session; initialize again");
    }
  }
  auto replies = std::make_shared<Replies>();
  for (const auto& item : batch) replies->pending += is_request(item) ? 1u : 0u;
  const bool any_request = replies->pending > 0;
  for (const auto& item : batch) {
    session->dispatch(item, is_request(item) ? reply_into(replies, item["id"]) : ignore_reply);
  }
  if (!any_request) co_return co_await exchange.respond(202, "", "", std::move(headers));
  co_await wait_for(*replies);
  const json out = message.is_array() ? json(replies->answers) : replies->answers.front();
  co_await exchange.respond(200, "application/json", mcp::wire_text(out), std::move(headers));
}

}  // namespace

Task<void> mcp_post(ControlCall& call, Exchange& exchange) {
  close_in_background(call.service, sessions().take_idle());
  co_await post(call.service, exchange, exchange.request().header("x-api-key"), call.caller.key_id);
}

Task<void> mcp_delete(ControlCall& call, Exchange& exchange) {
  close_in_background(call.service, sessions().take_idle());
  auto session = sessions().remove(exchange.request().header("mcp-session-id"), call.caller.key_id);
  if (!session) co_return co_await respond_error(exchange, 404, "unknown or ended MCP session");
  // A named function, not a temporary in the co_await: g++ 12 destroys such
  // temporaries twice, and this one holds the session.
  std::function<void()> close = [session] { session->close(); };
  co_await call.service.run_long(std::move(close));
  co_await exchange.respond(200, "", "");
}

}  // namespace abx::daemon::routes
