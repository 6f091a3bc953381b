// Connect protocol plumbing shared by the process and filesystem routes
// (spec/e2b-protocol.md §7).
#include "common/connect_frame.h"
#include "common/json_text.h"
#include "daemon/error_map.h"
#include "daemon/proto_json.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {

namespace {
constexpr size_t kMaxRequestBytes = 16u << 20;
constexpr auto kDefaultKeepalive = std::chrono::seconds(90);
}  // namespace

std::chrono::seconds keepalive_of(const http::Request& request) {
  try {
    const int seconds = std::stoi(request.header("keepalive-ping-interval"));
    if (seconds > 0) return std::chrono::seconds(seconds);
  } catch (const std::exception&) {
  }
  return kDefaultKeepalive;
}

std::string stream_error(const std::string& code, const std::string& message) {
  return json_text::dump(nlohmann::json{{"error", {{"code", code}, {"message", message}}}});
}

bool is_streaming(const http::Request& request) {
  return request.header("content-type").rfind("application/connect+", 0) == 0;
}

Task<void> respond_json(Exchange& exchange, int status, const nlohmann::json& body,
                        http::Headers extra) {
  co_await exchange.respond(status, "application/json", json_text::dump(body), std::move(extra));
}

nlohmann::json error_json(int status, const std::string& message) {
  return {{"code", status}, {"message", message}};
}

Task<void> respond_error(Exchange& exchange, int status, const std::string& message) {
  co_await respond_json(exchange, status, error_json(status, message));
}

Task<void> connect_error(Exchange& exchange, const std::string& code, const std::string& message) {
  if (!is_streaming(exchange.request())) {
    co_await exchange.respond(error_map::http_status_for_connect_code(code), "application/json",
                              proto_json::error_body(code, message));
    co_return;
  }
  co_await exchange.respond(200, "application/connect+json",
                            connect::encode(stream_error(code, message), connect::kFlagEndStream));
}

Task<std::optional<nlohmann::json>> read_connect_request(Exchange& exchange, bool streaming) {
  bool fits = true;
  std::string body = co_await http::read_body(exchange, kMaxRequestBytes, &fits);
  if (!fits) {
    co_await connect_error(exchange, "resource_exhausted", "request message too large");
    co_return std::nullopt;
  }
  if (streaming) {
    connect::FrameReader reader;
    reader.feed(body);
    std::string error;
    auto frame = reader.next(&error);
    if (!frame || (frame->flags & connect::kFlagCompressed)) {
      co_await connect_error(exchange, "invalid_argument",
                             frame ? "compressed envelopes are not supported"
                                   : "request body is not one Connect envelope");
      co_return std::nullopt;
    }
    body = std::move(frame->payload);
  }
  if (body.empty()) body = "{}";
  auto message = json_text::parse_object(body, "request message");
  if (!message) {
    co_await connect_error(exchange, "invalid_argument", message.error().message());
    co_return std::nullopt;
  }
  co_return std::move(*message);
}

envd_auth::SandboxUser default_user_of(const SandboxRow& row) {
  if (row.default_user.empty()) return envd_auth::standard_user();
  return {row.default_user, row.default_uid, row.default_gid, row.default_home};
}

Task<std::optional<envd_auth::SandboxUser>> connect_user(Exchange& exchange,
                                                         const SandboxRow& row) {
  std::string error;
  const envd_auth::SandboxUser fallback = default_user_of(row);
  auto user = envd_auth::user_from_authorization(exchange.request().header("authorization"),
                                                 fallback, &error);
  if (!user) co_await connect_error(exchange, "unauthenticated", error);
  co_return user;
}

Task<std::optional<ConnectInput>> read_connect_input(SandboxCall& call, Exchange& exchange) {
  auto message = co_await read_connect_request(exchange, is_streaming(exchange.request()));
  if (!message) co_return std::nullopt;
  auto user = co_await connect_user(exchange, call.row);
  if (!user) co_return std::nullopt;
  co_return ConnectInput{std::move(*message), std::move(*user)};
}

Task<void> connect_failure(Exchange& exchange, const Error& error) {
  const std::string code = error_map::connect_code(error);
  const std::string message = error.message();
  co_await connect_error(exchange, code, message);
}

}  // namespace abx::daemon::routes
