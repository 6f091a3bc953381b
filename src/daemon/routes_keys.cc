// Our API: /abx/v1/keys — API keys and their teams (admin keys only).
#include "common/json_text.h"
#include "daemon/codec.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;

json key_json(const ApiKeyRecord& record) {
  return {{"id", record.id},
          {"team", record.team},
          {"admin", record.admin},
          {"name", record.name},
          {"createdMs", record.created_ms}};
}

// Built outside the coroutines: g++ 12 rejects string literals in braced
// initializers inside a coroutine body.
json keys_json(const std::vector<ApiKeyRecord>& records) {
  json out = json::array();
  for (const ApiKeyRecord& record : records) out.push_back(key_json(record));
  return {{"keys", out}};
}

json new_key_json(const NewApiKey& made) {
  json out = key_json(made.record);
  out["key"] = made.key;  // the only time it is shown
  return out;
}

struct KeyRequest {
  std::string team = kDefaultTeam;
  bool admin = false;
  std::string name;
};

Result<KeyRequest> parse_key_request(const std::string& body) {
  auto parsed = json_text::parse(body.empty() ? std::string_view("{}") : body);
  if (!parsed) return parsed.error();
  const json& doc = *parsed;
  if (!doc.is_object()) {
    return Error::with_message(R"(body: expected {"team": "...", "admin": false, "name": "..."})",
                               kErrBadInput);
  }
  KeyRequest out;
  for (const auto& [field, value] : doc.items()) {
    if (field == "team" && value.is_string())
      out.team = value;
    else if (field == "name" && value.is_string())
      out.name = value;
    else if (field == "admin" && value.is_boolean())
      out.admin = value;
    else
      return Error::with_message(
          "body: '" + field + "' is not a field (or has the wrong type); use team, admin, name",
          kErrBadInput);
  }
  return out;
}

}  // namespace

Task<void> keys_list(ControlCall& call, Exchange& exchange) {
  co_await respond_json(exchange, 200, keys_json(call.service.keys().list()));
}

Task<void> key_create(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto request = parse_key_request(*body);
  if (!request) co_return co_await respond_error(exchange, request.error());
  auto made = call.service.keys().create(request->team, request->admin, request->name);
  if (!made) co_return co_await respond_error(exchange, made.error());
  co_await respond_json(exchange, 201, new_key_json(*made));
}

Task<void> key_revoke(ControlCall& call, Exchange& exchange) {
  const Status revoked = call.service.keys().revoke(call.params.at("id"));
  if (!revoked) co_return co_await respond_error(exchange, revoked.error());
  co_await exchange.respond(204, "", "");
}

}  // namespace abx::daemon::routes
