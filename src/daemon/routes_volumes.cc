// E2B's volumes: /volumes (the team's volumes, by API key) and the volume
// content API /volumecontent/{volumeID}/{dir,file,path} (by the volume's
// bearer token, or an API key of its team). Shapes as E2B's openapi
// (Volume, VolumeAndToken, VolumeEntryStat).
#include <algorithm>

#include "common/fd_io.h"
#include "common/json_text.h"
#include "common/secrets.h"
#include "daemon/codec.h"
#include "daemon/routes.h"
#include "daemon/volume_files.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
using volume_files::Entry;
using volume_files::Metadata;
using volume_files::Tree;

constexpr size_t kChunk = 256 * 1024;

json volume_json(const Volume& v) { return {{"volumeID", v.id}, {"name", v.name}}; }

json volume_and_token(const Volume& v) {
  json out = volume_json(v);
  out["token"] = v.token;
  return out;
}

std::string time_text(const struct timespec& t) { return codec::rfc3339(t.tv_sec, t.tv_nsec); }

json entry_json(const Entry& e) {
  json out = {{"name", e.name},
              {"path", e.path},
              {"type", e.type},
              {"size", e.size},
              {"mode", e.mode},
              {"uid", e.uid},
              {"gid", e.gid},
              {"atime", time_text(e.atime)},
              {"mtime", time_text(e.mtime)},
              {"ctime", time_text(e.ctime)}};
  if (e.target) out["target"] = *e.target;
  return out;
}

Error volume_not_found(const std::string& id) {
  return Error::with_message("volume " + id + " not found", ENOENT);
}

// The sandboxes (live or filesystem-paused) of the team that mount `id`.
std::vector<std::string> mounted_by(ControlCall& call, const std::string& id) {
  std::vector<std::string> out;
  for (const SandboxRow& row : call.service.list_for(call.caller))
    for (const auto& mount : row.volume_mounts)
      if (mount.id == id) out.push_back(row.id);
  return out;
}

uint64_t quota_bytes(ControlCall& call, const std::string& team) {
  return call.service.quotas().quota_for(team).max_volume_mb << 20;
}

// --- the content API's caller, query and answers --------------------------------------------

// The volume {volumeID} if the request may act on it: an API key of its
// team (another team's volume is not found, as one that never was), or its
// bearer token (anything else hears 401, whether the volume exists or not).
Result<Volume> authorized_volume(ControlCall& call, const http::Request& request) {
  const std::string& id = call.params.at("volumeID");
  if (call.caller.kind == Caller::Kind::api_key) {
    auto volume = call.service.volumes().find(call.caller.team, id);
    if (!volume) return volume_not_found(id);
    return *volume;
  }
  const std::string header = request.header("authorization");
  const std::string prefix = "Bearer ";
  std::optional<Volume> volume =
      is_volume_id(id) ? call.service.volumes().find_any(id) : std::nullopt;
  if (!header.starts_with(prefix) || !volume ||
      !secrets_equal(header.substr(prefix.size()), volume->token))
    return Error::with_message(
        "volume content needs the volume's token (Authorization: Bearer <token> from GET "
        "/volumes/{volumeID}) or an API key of its team",
        kErrUnauthorized);
  return *volume;
}

std::string query_value(const http::Request& request, const char* key) {
  const auto it = request.query.find(key);
  return it == request.query.end() ? std::string() : it->second;
}

Result<std::string> path_query(const http::Request& request) {
  const auto it = request.query.find("path");
  if (it == request.query.end())
    return Error::with_message("path: required query parameter", kErrBadInput);
  if (it->second.find('\0') != std::string::npos || it->second.size() > 4096)
    return Error::with_message("path: must be at most 4096 bytes, without NUL", kErrBadInput);
  return volume_files::normalize(it->second);
}

Result<std::optional<uint32_t>> number_query(const http::Request& request, const char* key) {
  const std::string text = query_value(request, key);
  if (text.empty()) return std::optional<uint32_t>();
  try {
    size_t used = 0;
    const unsigned long value = std::stoul(text, &used);
    if (used == text.size() && value <= UINT32_MAX)
      return std::optional<uint32_t>(static_cast<uint32_t>(value));
  } catch (const std::exception&) {
  }
  return Error::with_message(std::string(key) + ": must be a whole number", kErrBadInput);
}

Result<Metadata> metadata_query(const http::Request& request) {
  Metadata meta;
  for (auto [key, field] : {std::pair{"uid", &Metadata::uid}, std::pair{"gid", &Metadata::gid},
                            std::pair{"mode", &Metadata::mode}}) {
    auto value = number_query(request, key);
    if (!value) return value.error();
    meta.*field = *value;
  }
  return meta;
}

Result<Metadata> metadata_body(const std::string& body) {
  auto doc = json_text::parse_object(body.empty() ? std::string_view("{}") : body);
  if (!doc) return doc.error();
  Metadata meta;
  for (auto [key, field] : {std::pair{"uid", &Metadata::uid}, std::pair{"gid", &Metadata::gid},
                            std::pair{"mode", &Metadata::mode}}) {
    const auto it = doc->find(key);
    if (it == doc->end() || it->is_null()) continue;
    if (!it->is_number_unsigned() || it->get<uint64_t>() > UINT32_MAX)
      return Error::with_message(std::string(key) + ": must be a whole number", kErrBadInput);
    meta.*field = it->get<uint32_t>();
  }
  return meta;
}

bool force_query(const http::Request& request) { return query_value(request, "force") == "true"; }

// Runs `work` (blocking, on the volume's tree) on the pool.
template <class T>
Task<Result<T>> on_tree(ControlCall& call, const Volume& volume,
                        std::function<Result<T>(const Tree&)> work) {
  Result<T> out = Error::with_message("volume " + volume.name + ": not reached", EIO);
  co_await call.service.pool().run([&] {
    auto tree = Tree::open(call.service.volumes(), volume.id);
    out = tree ? work(*tree) : Result<T>(tree.error());
  });
  co_return out;
}

}  // namespace

// --- /volumes ---------------------------------------------------------------------------------

Task<void> volumes_list(ControlCall& call, Exchange& exchange) {
  json out = json::array();
  for (const Volume& v : call.service.volumes().list(call.caller.team))
    out.push_back(volume_json(v));
  co_await respond_json(exchange, 200, out);
}

Task<void> volume_create(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto doc = json_text::parse_object(*body);
  if (!doc) co_return co_await respond_error(exchange, doc.error());
  const auto name = doc->find("name");
  if (name == doc->end() || !name->is_string())
    co_return co_await respond_error(exchange,
                                     Error::with_message("name: required string", kErrBadInput));
  Volumes& volumes = call.service.volumes();
  const std::string& team = call.caller.team;
  if (Status s = call.service.quotas().check_volumes(team, volumes.list(team).size()); !s)
    co_return co_await respond_error(exchange, s.error());
  Result<Volume> volume = Error::with_message("volume: not made", EIO);
  co_await call.service.pool().run(
      [&] { volume = volumes.create(team, name->get<std::string>(), quota_bytes(call, team)); });
  if (!volume) co_return co_await respond_error(exchange, volume.error());
  co_await respond_json(exchange, 201, volume_and_token(*volume));
}

// E2B's VolumeAndToken, and what `abx volume list` shows beside it: the
// bytes it holds, its quota and the sandboxes that mount it.
Task<void> volume_get(ControlCall& call, Exchange& exchange) {
  const std::string& id = call.params.at("volumeID");
  auto volume = call.service.volumes().find(call.caller.team, id);
  if (!volume) co_return co_await respond_error(exchange, volume_not_found(id));
  uint64_t used = 0;
  // A walk as long as the volume's sandboxes make it (millions of names): on
  // the long lane, so no create or kill of any team waits behind it.
  co_await call.service.pool().run_long([&] { used = call.service.volumes().usage_bytes(id); });
  json out = volume_and_token(*volume);
  out["usedBytes"] = used;
  out["quotaBytes"] = quota_bytes(call, volume->team);
  // "image": the quota is hard (the kernel stops writes past it); "directory":
  // soft, and sandboxes mount it only where config.json turns mounts on.
  out["storage"] = volume->image ? "image" : "directory";
  out["mountable"] = call.service.volumes().mountable(*volume);
  out["mountedBy"] = mounted_by(call, id);
  co_await respond_json(exchange, 200, out);
}

// Refused (409) while a sandbox mounts it; E2B's API has no force.
Task<void> volume_delete(ControlCall& call, Exchange& exchange) {
  const std::string& id = call.params.at("volumeID");
  if (!call.service.volumes().find(call.caller.team, id))
    co_return co_await respond_error(exchange, volume_not_found(id));
  const std::vector<std::string> mounting = mounted_by(call, id);
  Result<bool> removed = false;
  co_await call.service.pool().run([&] {
    removed = call.service.volumes().remove(call.caller.team, id,
                                            [&](const std::string&) { return !mounting.empty(); });
  });
  if (!removed) {
    Error error = removed.error();
    if (!mounting.empty()) {
      std::string ids;
      for (const auto& sandbox : mounting) ids += (ids.empty() ? "" : ", ") + sandbox;
      error = Error::with_message(error.message() + " (" + ids + ")", error.errnum);
    }
    co_return co_await respond_error(exchange, error);
  }
  if (!*removed) co_return co_await respond_error(exchange, volume_not_found(id));
  co_await exchange.respond(204, "", "");
}

// --- /volumecontent/{volumeID}/... -----------------------------------------------------------

// What every content call starts from: the volume the caller may reach and
// the path inside it the query names.
struct ContentTarget {
  Volume volume;
  std::string path;
};

Result<ContentTarget> content_target(ControlCall& call, const http::Request& request) {
  auto volume = authorized_volume(call, request);
  if (!volume) return volume.error();
  auto path = path_query(request);
  if (!path) return path.error();
  return ContentTarget{std::move(*volume), std::move(*path)};
}

Task<void> volume_dir_list(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  auto target = content_target(call, request);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const Volume* volume = &target->volume;
  const std::string* path = &target->path;
  auto depth = number_query(request, "depth");
  if (!depth) co_return co_await respond_error(exchange, depth.error());
  const int levels = static_cast<int>(std::min<uint32_t>(depth->value_or(1), 1000));
  auto entries = co_await on_tree<std::vector<Entry>>(
      call, *volume, [&](const Tree& tree) { return tree.list(*path, levels); });
  if (!entries) co_return co_await respond_error(exchange, entries.error());
  json out = json::array();
  for (const Entry& e : *entries) out.push_back(entry_json(e));
  co_await respond_json(exchange, 200, out);
}

Task<void> volume_dir_make(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  auto target = content_target(call, request);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const Volume* volume = &target->volume;
  const std::string* path = &target->path;
  auto meta = metadata_query(request);
  if (!meta) co_return co_await respond_error(exchange, meta.error());
  const bool parents = force_query(request);
  auto entry = co_await on_tree<Entry>(
      call, *volume, [&](const Tree& tree) { return tree.make_dir(*path, parents, *meta); });
  if (!entry) co_return co_await respond_error(exchange, entry.error());
  co_await respond_json(exchange, 201, entry_json(*entry));
}

Task<void> volume_path_stat(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  auto target = content_target(call, request);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const Volume* volume = &target->volume;
  const std::string* path = &target->path;
  auto entry =
      co_await on_tree<Entry>(call, *volume, [&](const Tree& tree) { return tree.stat(*path); });
  if (!entry) co_return co_await respond_error(exchange, entry.error());
  co_await respond_json(exchange, 200, entry_json(*entry));
}

Task<void> volume_path_remove(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  auto target = content_target(call, request);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const Volume* volume = &target->volume;
  const std::string* path = &target->path;
  auto removed = co_await on_tree<bool>(call, *volume, [&](const Tree& tree) -> Result<bool> {
    if (Status s = tree.remove(*path); !s) return s.error();
    return true;
  });
  if (!removed) co_return co_await respond_error(exchange, removed.error());
  co_await exchange.respond(204, "", "");
}

Task<void> volume_path_update(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  auto target = content_target(call, request);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const Volume* volume = &target->volume;
  const std::string* path = &target->path;
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto meta = metadata_body(*body);
  if (!meta) co_return co_await respond_error(exchange, meta.error());
  auto entry = co_await on_tree<Entry>(
      call, *volume, [&](const Tree& tree) { return tree.set_metadata(*path, *meta); });
  if (!entry) co_return co_await respond_error(exchange, entry.error());
  co_await respond_json(exchange, 200, entry_json(*entry));
}

// Streamed to the client in pieces read on the pool.
Task<void> volume_file_read(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  auto target = content_target(call, request);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const Volume* volume = &target->volume;
  const std::string* path = &target->path;
  auto file = co_await on_tree<UniqueFd>(call, *volume,
                                         [&](const Tree& tree) { return tree.open_read(*path); });
  if (!file) co_return co_await respond_error(exchange, file.error());
  struct stat st {};
  const std::optional<uint64_t> length =
      ::fstat(file->get(), &st) == 0 ? std::optional<uint64_t>(st.st_size) : std::nullopt;
  co_await exchange.start_stream(200, "application/octet-stream", {}, length);
  for (;;) {
    std::string piece(kChunk, '\0');
    ssize_t n = 0;
    co_await call.service.pool().run([&] { n = ::read(file->get(), piece.data(), piece.size()); });
    if (n <= 0) break;
    piece.resize(static_cast<size_t>(n));
    if (!co_await exchange.write_chunk(std::move(piece))) co_return;
  }
  co_await exchange.finish_stream();
}

// Written under a temporary name, then renamed into place: a write that
// fails (or passes the quota) leaves the old file whole.
Task<void> volume_file_write(ControlCall& call, Exchange& exchange) {
  const auto& request = exchange.request();
  auto target = content_target(call, request);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const Volume* volume = &target->volume;
  const std::string* path = &target->path;
  auto meta = metadata_query(request);
  if (!meta) co_return co_await respond_error(exchange, meta.error());
  const bool replace = force_query(request);
  const uint64_t quota = quota_bytes(call, volume->team);
  uint64_t used = 0;  // a long walk: see volume_get
  co_await call.service.pool().run_long([&] {
    // A quota raised since the image was made: the image follows it.
    (void)call.service.volumes().fit(volume->id, quota);
    used = call.service.volumes().usage_bytes(volume->id);
  });
  auto upload = co_await on_tree<Tree::Upload>(
      call, *volume, [&](const Tree& tree) { return tree.begin_upload(*path, replace); });
  if (!upload) co_return co_await respond_error(exchange, upload.error());
  // What the volume may still take, counting the file this one replaces.
  const uint64_t room =
      used >= quota + upload->replaced_bytes ? 0 : quota + upload->replaced_bytes - used;
  uint64_t written = 0;
  std::optional<Error> failure;
  for (;;) {
    std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) break;
    written += piece.size();
    if (quota && written > room) {
      failure = Error::with_message("volume " + volume->name + " is full: its quota is " +
                                        std::to_string(quota >> 20) +
                                        " MB (remove files, or an admin raises it: abx quota "
                                        "set --team " +
                                        volume->team + " --volume-mb N)",
                                    ENOSPC);
      break;
    }
    co_await call.service.pool().run([&] {
      if (Status s = write_all(upload->file.get(), piece, "write", *path); !s) failure = s.error();
    });
    if (failure) break;
  }
  if (failure) {
    co_await call.service.pool().run([&] { Tree::abort_upload(*upload); });
    co_return co_await respond_error(exchange, *failure);
  }
  auto entry = co_await on_tree<Entry>(
      call, *volume, [&](const Tree& tree) { return tree.commit_upload(*upload, *meta); });
  if (!entry) {
    co_await call.service.pool().run([&] { Tree::abort_upload(*upload); });
    co_return co_await respond_error(exchange, entry.error());
  }
  co_await respond_json(exchange, 201, entry_json(*entry));
}

}  // namespace abx::daemon::routes
