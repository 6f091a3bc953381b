// Helpers every route file shares: bodies in, errors out.
#include <stdexcept>

#include "common/ids.h"
#include "daemon/routes.h"

namespace abx::daemon::routes {

namespace {

// A quota refusal that waiting cures says when to come back.
http::Headers retry_headers(const Error& error) {
  if (error.retry_after_s <= 0) return {};
  return {{"Retry-After", std::to_string(error.retry_after_s)}};
}

}  // namespace

Task<void> respond_error(Exchange& exchange, const Error& error) {
  const int status = error_map::http_status(error);
  co_await respond_json(exchange, status, error_json(status, error.message()),
                        retry_headers(error));
}

Task<Result<std::string>> read_json_body(Exchange& exchange, size_t limit) {
  bool fits = true;
  std::string body = co_await http::read_body(exchange, limit, &fits);
  if (!fits) {
    co_return Error::with_message("body: larger than " + std::to_string(limit >> 10) + " KiB",
                                  kErrTooLarge);
  }
  co_return body;
}

bool sandbox_gone(const SandboxCall& call) { return call.service.find(call.row.id) != call.live; }

void drop_stream(const SandboxCall& call) {
  throw std::runtime_error("sandbox " + call.row.id + " stopped mid-stream; connection dropped");
}

Result<std::string> id_param(const ControlCall& call) {
  const std::string& id = call.params.at("id");
  if (!ids::is_valid_sandbox_id(id))
    return Error::with_message(
        "not a valid sandbox id: sandbox ids are lowercase letters and digits (at most 64)",
        kErrBadInput);
  return id;
}

Error sandbox_not_found(const std::string& id) {
  return Error::with_message("sandbox " + id + " not found", ENOENT);
}

Result<std::shared_ptr<LiveSandbox>> sandbox_of(const ControlCall& call) {
  auto id = id_param(call);
  if (!id) return id.error();
  auto live = call.service.find_for(call.caller, *id);
  if (!live) return sandbox_not_found(*id);
  return live;
}

}  // namespace abx::daemon::routes
