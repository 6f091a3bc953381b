// Sandbox plane: envd's filesystem.Filesystem service over Connect-JSON.
// Every path goes through runtime::sandbox_fs (openat2 RESOLVE_IN_ROOT).
// spec/e2b-protocol.md §8.
#include "daemon/error_map.h"
#include "daemon/proto_json.h"
#include "daemon/routes.h"
#include "runtime/sandbox_fs.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
using proto_json::field;
namespace sfs = runtime::sandbox_fs;

struct Outcome {
  json reply;
  std::optional<Error> error;
  std::string bad_input;  // invalid_argument, naming the field
};

std::optional<std::string> path_field(const json& message, const char* name) {
  const json* value = field(message, name, name);
  if (!value || !value->is_string() || value->get<std::string>().empty()) return std::nullopt;
  return value->get<std::string>();
}

Outcome entry_reply(const runtime::Sandbox& sb, const std::string& path) {
  auto info = sfs::stat(sb, path);
  if (!info) return {{}, info.error(), {}};
  return {{{"entry", proto_json::entry_info(*info)}}, std::nullopt, {}};
}

Outcome list_dir(const runtime::Sandbox& sb, const std::string& path, const json& message) {
  int depth = 1;
  if (const json* value = field(message, "depth", "depth")) {
    if (!value->is_number_integer() || value->get<int>() < 0) {
      return {{}, std::nullopt, "depth: must be a non-negative integer"};
    }
    depth = std::max(1, value->get<int>());
  }
  auto entries = sfs::list_dir(sb, path, depth);
  if (!entries) return {{}, entries.error(), {}};
  json out = json::array();
  for (const auto& entry : *entries) out.push_back(proto_json::entry_info(entry));
  return {{{"entries", out}}, std::nullopt, {}};
}

Outcome run(const std::string& method, const json& message, const runtime::Sandbox& sb,
            const envd_auth::SandboxUser& user) {
  auto resolve = [&](const std::string& path) { return sfs::absolute_path(path, user.home); };
  if (method == "Move") {
    const auto from = path_field(message, "source");
    const auto to = path_field(message, "destination");
    if (!from || !to) return {{}, std::nullopt, "source, destination: required paths"};
    if (Status s = sfs::move(sb, resolve(*from), resolve(*to)); !s) return {{}, s.error(), {}};
    return entry_reply(sb, resolve(*to));
  }
  const auto path = path_field(message, "path");
  if (!path) return {{}, std::nullopt, "path: required"};
  const std::string absolute = resolve(*path);
  if (method == "Stat") return entry_reply(sb, absolute);
  if (method == "ListDir") return list_dir(sb, absolute, message);
  if (method == "MakeDir") {
    if (Status s = sfs::make_dir(sb, absolute, user.uid); !s) return {{}, s.error(), {}};
    return entry_reply(sb, absolute);
  }
  if (method == "Remove") {
    if (Status s = sfs::remove(sb, absolute); !s) return {{}, s.error(), {}};
    return {json::object(), std::nullopt, {}};
  }
  return {{}, Error{"filesystem.Filesystem/" + method + " is not served", ENOSYS, ""}, {}};
}

}  // namespace

Task<void> filesystem(SandboxCall& call, Exchange& exchange, const std::string& method) {
  if (is_watch_method(method)) co_return co_await watch(call, exchange, method);
  const bool streaming = is_streaming(exchange.request());
  auto message = co_await read_connect_request(exchange, streaming);
  if (!message) co_return;
  auto user = co_await connect_user(exchange, call.row);
  if (!user) co_return;
  Outcome outcome;
  co_await call.service.pool().run(
      [&] { outcome = run(method, *message, *call.live->sandbox, *user); });
  if (!outcome.bad_input.empty()) {
    co_return co_await connect_error(exchange, "invalid_argument", outcome.bad_input);
  }
  if (outcome.error) {
    const std::string code = outcome.error->errnum == ENOSYS
                                 ? "unimplemented"
                                 : error_map::connect_code(outcome.error->errnum);
    co_return co_await connect_error(exchange, code, outcome.error->message());
  }
  co_await respond_json(exchange, 200, outcome.reply);
}

}  // namespace abx::daemon::routes
