// Sandbox plane: envd's filesystem.Filesystem service over Connect-JSON.
// Every path goes through runtime::sandbox_fs (openat2 RESOLVE_IN_ROOT), on
// the blocking pool by way of sandbox_ops.
// See spec/e2b-protocol.md §8.
#include "daemon/envd_requests.h"
#include "daemon/error_map.h"
#include "daemon/proto_json.h"
#include "daemon/routes.h"
#include "daemon/sandbox_ops.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
namespace sfs = runtime::sandbox_fs;

std::string absolute(const std::string& path, const envd_auth::SandboxUser& user) {
  return sfs::absolute_path(path, user.home);
}

// Built outside coroutines: g++ 12 rejects string literals in braced
// initializers inside a coroutine body.
json entry_reply(const sfs::EntryInfo& info) { return {{"entry", proto_json::entry_info(info)}}; }

// The {"entry": EntryInfo} reply of Stat, MakeDir and Move.
Task<void> reply_entry(SandboxCall& call, Exchange& exchange, const std::string& path) {
  auto info = co_await sandbox_ops::stat(call.service, *call.live->sandbox, path);
  if (!info) co_return co_await connect_failure(exchange, info.error());
  co_await respond_json(exchange, 200, entry_reply(*info));
}

json entries_reply(const std::vector<sfs::EntryInfo>& entries) {
  json out = json::array();
  for (const auto& entry : entries) out.push_back(proto_json::entry_info(entry));
  return {{"entries", out}};
}

}  // namespace

Task<void> fs_stat(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_path_request);
  if (!parsed) co_return;
  co_await reply_entry(call, exchange, absolute(parsed->request.path, parsed->user));
}

Task<void> fs_make_dir(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_path_request);
  if (!parsed) co_return;
  const std::string path = absolute(parsed->request.path, parsed->user);
  const Status made =
      co_await sandbox_ops::make_dir(call.service, *call.live->sandbox, path, parsed->user.uid);
  if (!made) co_return co_await connect_failure(exchange, made.error());
  co_await reply_entry(call, exchange, path);
}

Task<void> fs_move(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_move);
  if (!parsed) co_return;
  const std::string from = absolute(parsed->request.source, parsed->user);
  const std::string to = absolute(parsed->request.destination, parsed->user);
  const Status moved = co_await sandbox_ops::move(call.service, *call.live->sandbox, from, to);
  if (!moved) co_return co_await connect_failure(exchange, moved.error());
  co_await reply_entry(call, exchange, to);
}

Task<void> fs_list_dir(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_list_dir);
  if (!parsed) co_return;
  const std::string path = absolute(parsed->request.path, parsed->user);
  auto entries = co_await sandbox_ops::list_dir(call.service, *call.live->sandbox, path,
                                                parsed->request.depth);
  if (!entries) co_return co_await connect_failure(exchange, entries.error());
  co_await respond_json(exchange, 200, entries_reply(*entries));
}

Task<void> fs_remove(SandboxCall& call, Exchange& exchange) {
  auto parsed = co_await read_parsed(call, exchange, &parse_path_request);
  if (!parsed) co_return;
  const std::string path = absolute(parsed->request.path, parsed->user);
  const Status removed = co_await sandbox_ops::remove(call.service, *call.live->sandbox, path);
  // envd removes with os.RemoveAll: nothing there is no error.
  const bool gone = removed || removed.error().errnum == ENOENT;
  if (!gone) co_return co_await connect_failure(exchange, removed.error());
  if (removed)
    call.live->log->event("files", "removed", {{"path", path}});  // not: nothing was there
  co_await respond_json(exchange, 200, json::object());
}

}  // namespace abx::daemon::routes
