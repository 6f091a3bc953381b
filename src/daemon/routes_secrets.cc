// /abx/v1/secrets: a team's secrets for network.rules headers. Names only
// ever come back, never a value.
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {

using nlohmann::json;

namespace {

// Outside the coroutines: g++ 12 mishandles string literals in their braced initializers.
// "secrets" keeps the names alone, as before secrets had hosts.
json list_body(const std::map<std::string, SecretPlaces>& listed) {
  json names = json::array(), hosts = json::object(), headers = json::object();
  for (const auto& [name, places] : listed) {
    names.push_back(name);
    hosts[name] = places.hosts;
    headers[name] = places.headers;
  }
  return {{"secrets", names}, {"hosts", hosts}, {"headers", headers}};
}

// {"value": "...", "hosts": ["api.example.com"], "headers": ["Authorization"]};
// no headers: Authorization only.
Result<Secret> parse_secret(const std::string& body) {
  auto doc = json_text::parse_object(body);
  if (!doc) return doc.error();
  if (!doc->contains("value") || !(*doc)["value"].is_string())
    return Error::with_message("value: required string", kErrBadInput);
  Secret secret{(*doc)["value"].get<std::string>(), {}};
  const auto hosts = doc->find("hosts");
  if (hosts == doc->end() || !hosts->is_array())
    return Error::with_message(
        "hosts: required list of the hosts the secret may be sent to, e.g. [\"api.openai.com\"]",
        kErrBadInput);
  for (const auto& host : *hosts) {
    if (!host.is_string()) return Error::with_message("hosts: strings only", kErrBadInput);
    secret.places.hosts.push_back(host.get<std::string>());
  }
  const auto headers = doc->find("headers");
  if (headers == doc->end() || headers->is_null()) return secret;
  if (!headers->is_array())
    return Error::with_message(
        "headers: a list of the headers the secret may be sent in, e.g. [\"Authorization\"]",
        kErrBadInput);
  for (const auto& header : *headers) {
    if (!header.is_string()) return Error::with_message("headers: strings only", kErrBadInput);
    secret.places.headers.push_back(header.get<std::string>());
  }
  return secret;
}

}  // namespace

Task<void> secrets_list(ControlCall& call, Exchange& exchange) {
  const json body = list_body(call.service.secrets().list(call.caller.team));
  co_await respond_json(exchange, 200, body);
}

Task<void> secret_set(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto secret = parse_secret(*body);
  if (!secret) co_return co_await respond_error(exchange, secret.error());
  const Status saved =
      call.service.secrets().set(call.caller.team, call.params.at("name"), std::move(*secret));
  if (!saved) co_return co_await respond_error(exchange, saved.error());
  co_await exchange.respond(204, "", "");
}

Task<void> secret_remove(ControlCall& call, Exchange& exchange) {
  const Status removed = call.service.secrets().remove(call.caller.team, call.params.at("name"));
  if (!removed) co_return co_await respond_error(exchange, removed.error());
  co_await exchange.respond(204, "", "");
}

}  // namespace abx::daemon::routes
