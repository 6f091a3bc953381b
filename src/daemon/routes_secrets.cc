// /abx/v1/secrets: a team's secrets for network.rules headers. Names only
// ever come back, never a value.
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {

using nlohmann::json;

namespace {

// Outside the coroutines: g++ 12 mishandles string literals in their braced initializers.
json names_body(const std::vector<std::string>& names) { return {{"secrets", names}}; }

Error value_required() { return Error::with_message("value: required string", kErrBadInput); }

}  // namespace

Task<void> secrets_list(ControlCall& call, Exchange& exchange) {
  const json body = names_body(call.service.secrets().names(call.caller.team));
  co_await respond_json(exchange, 200, body);
}

Task<void> secret_set(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto doc = json_text::parse_object(*body);
  if (!doc) co_return co_await respond_error(exchange, doc.error());
  if (!doc->contains("value") || !(*doc)["value"].is_string())
    co_return co_await respond_error(exchange, value_required());
  const Status saved = call.service.secrets().set(call.caller.team, call.params.at("name"),
                                                  (*doc)["value"].get<std::string>());
  if (!saved) co_return co_await respond_error(exchange, saved.error());
  co_await exchange.respond(204, "", "");
}

Task<void> secret_remove(ControlCall& call, Exchange& exchange) {
  const Status removed = call.service.secrets().remove(call.caller.team, call.params.at("name"));
  if (!removed) co_return co_await respond_error(exchange, removed.error());
  co_await exchange.respond(204, "", "");
}

}  // namespace abx::daemon::routes
