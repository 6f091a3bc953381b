// Our own API (not E2B's): /abx/v1/templates — list, inspect, build (an
// NDJSON progress stream) and remove templates.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>

#include "common/base64.h"
#include "common/fd_io.h"
#include "common/json_text.h"
#include "common/unique_fd.h"
#include "daemon/routes.h"
#include "templates/build_context.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
namespace net = boost::asio;
namespace fs = std::filesystem;

constexpr auto kProgressPoll = std::chrono::milliseconds(200);

// "name" is what the team calls it; "resolved" its id (templateID in E2B's
// shapes), which differs for a team's template (name@team).
json info_json(const templates::TemplateInfo& info) {
  const std::string name = templates::TemplateStore::name_of_id(info.name);
  return {{"name", name},
          {"resolved", info.resolved},
          {"source", info.source},
          {"built", info.built},
          {"sizeBytes", info.size_bytes},
          {"createdMs", info.created_ms},
          {"env", info.env},
          {"workdir", info.workdir},
          {"user", info.user},
          {"layers", info.layers},
          {"owner", info.owner},
          {"startCmd", info.start_cmd},
          {"readyCmd", info.ready_cmd}};
}

json list_json(const std::vector<templates::TemplateInfo>& infos) {
  json out = json::array();
  for (const auto& info : infos) out.push_back(info_json(info));
  return json{{"templates", out}};
}

// Lines a build on the blocking pool hands to the streaming coroutine.
struct BuildChannel {
  std::mutex mutex;
  std::deque<std::string> lines;
  std::optional<Result<templates::TemplateInfo>> result;
};

std::string progress_line(const std::string& text) {
  return json_text::dump(json{{"progress", text}}) + "\n";
}

std::string result_line(const Result<templates::TemplateInfo>& result) {
  if (result) return json_text::dump(json{{"done", info_json(result.value())}}) + "\n";
  const Error& error = result.error();
  return json_text::dump(json{{"error", {{"message", error.message()}, {"errno", error.errnum}}}}) +
         "\n";
}

// Takes what the build produced so far; true once the build has finished.
bool drain(BuildChannel& channel, std::string& out) {
  std::lock_guard lock(channel.mutex);
  for (const auto& line : channel.lines) out += progress_line(line);
  channel.lines.clear();
  if (!channel.result) return false;
  out += result_line(*channel.result);
  return true;
}

using BuildJob =
    std::function<Result<templates::TemplateInfo>(const templates::BuildProgressFn& progress)>;

// Runs `job` on the long lane, its progress lines going to `channel`.
void start_job(Service& service, const std::shared_ptr<BuildChannel>& channel, BuildJob job) {
  service.start_long([channel, job = std::move(job)]() mutable {
    auto result = job([&channel](const std::string& line) {
      std::lock_guard lock(channel->mutex);
      channel->lines.push_back(line);
    });
    job = nullptr;  // drops its upload dir before the client hears the outcome
    std::lock_guard lock(channel->mutex);
    channel->result.emplace(std::move(result));
  });
}

// {"noCache": true|false}; a body that is not a JSON object builds with the
// cache, as before. A noCache of another type is refused (it used to throw: a 500).
Result<bool> parse_no_cache(const std::string& body) {
  auto request = json_text::parse_object(body);
  if (!request) return false;
  const auto it = request->find("noCache");
  if (it == request->end() || it->is_null()) return false;
  if (!it->is_boolean()) return Error::with_message("noCache: must be true or false", kErrBadInput);
  return it->get<bool>();
}

bool query_flag(const http::Request& request, const std::string& name, bool fallback) {
  const auto it = request.query.find(name);
  if (it == request.query.end()) return fallback;
  return it->second == "true" || it->second == "1";
}

// ?stepTimeout=SECONDS: how long one RUN may take (default 30 min).
Result<uint32_t> step_timeout_of(const http::Request& request) {
  const auto it = request.query.find("stepTimeout");
  if (it == request.query.end()) return templates::kDefaultStepTimeoutS;
  const std::string& text = it->second;
  uint32_t seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc{} || end != text.data() + text.size() || seconds == 0 ||
      seconds > templates::kMaxStepTimeoutS)
    return Error::with_message("stepTimeout: seconds from 1 to 86400, e.g. 3600", kErrBadInput);
  return seconds;
}

// The id of the caller's template `name`: another team's is as unknown as a
// name nobody uses.
Result<std::string> template_id(const ControlCall& call, const std::string& name) {
  return call.service.templates().resolve_for(call.caller.team, name);
}

// A built-in last built by another team does not name that team.
templates::TemplateInfo shown_to(const ControlCall& call, templates::TemplateInfo info) {
  if (info.owner != call.caller.team) info.owner.clear();
  return info;
}

// The id under which `call` builds or imports template `name` (names are
// per team, so another team's use of it does not matter), or why it may not:
// a name that cannot be one (400), or a built-in only an admin may replace
// (403). `replaces` is false for a build of a built-in from its own spec that
// reuses its cached layers, which changes nothing another team's sandboxes run on.
Result<std::string> build_id(const ControlCall& call, const std::string& name, bool replaces) {
  const auto& store = call.service.templates();
  auto id = store.id_for(call.caller.team, name);
  if (!id) return Error::with_message(id.error().message(), kErrBadInput);
  if (replaces && !call.caller.admin && store.is_builtin(*id))
    return Error::with_message(
        "only an admin key may replace or rebuild (noCache) built-in template '" + name + "'",
        EPERM);
  return id;
}

// Streams the job's progress as NDJSON lines, then its outcome.
Task<void> stream_job(Service& service, Exchange& exchange, BuildJob job) {
  auto channel = std::make_shared<BuildChannel>();
  start_job(service, channel, std::move(job));
  co_await exchange.start_stream(200, "application/x-ndjson");
  net::steady_timer timer(co_await net::this_coro::executor);
  for (;;) {
    std::string out;
    const bool finished = drain(*channel, out);
    // The build goes on if the client leaves; its log keeps the story.
    if (!out.empty() && !co_await exchange.write_chunk(out)) co_return;
    if (finished) break;
    timer.expires_after(kProgressPoll);
    co_await timer.async_wait(net::use_awaitable);
  }
  co_await exchange.finish_stream();
}

// An upload may not take the filesystem holding the templates (and usually
// the state db and every sandbox's files) below this share of free space.
constexpr double kUploadFreeReserve = 0.10;
constexpr uint64_t kUploadCheckEvery = 16u << 20;

// Whether `fd`'s filesystem still has room beyond the reserve.
Status upload_room_left(int fd) {
  struct statvfs vfs {};
  if (::fstatvfs(fd, &vfs) != 0) return Error::from_errno("store template upload: statvfs");
  const double total = static_cast<double>(vfs.f_blocks) * static_cast<double>(vfs.f_frsize);
  const double free = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
  if (free >= total * kUploadFreeReserve) return {};
  return Error::with_message(
      "template upload: it would leave the templates filesystem under 10 % free; free some "
      "space (abx template rm) or upload a smaller image",
      kErrTooLarge);
}

// Writes the request body (a tar) to `path`, piece by piece; close-on-exec,
// so a build helper started meanwhile (mmdebstrap) never inherits it.
Task<Status> save_body(Exchange& exchange, const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) co_return Error::from_errno("store template upload", path.string());
  uint64_t since_check = kUploadCheckEvery;
  for (;;) {
    if (since_check >= kUploadCheckEvery) {
      if (Status room = upload_room_left(fd.get()); !room) co_return room;
      since_check = 0;
    }
    const std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) break;
    if (Status s = write_all(fd.get(), piece, "store template upload", path.string()); !s)
      co_return s;
    since_check += piece.size();
  }
  co_return Status{};
}

// A private dir under the templates dir for one upload, removed when the
// job is done (or by the next daemon start if it is killed meanwhile).
Task<Result<std::shared_ptr<templates::UploadDir>>> receive_upload(Service& service,
                                                                   Exchange& exchange) {
  auto dir = service.templates().upload_dir();
  if (!dir) co_return dir.error();
  auto shared = std::make_shared<templates::UploadDir>(std::move(*dir));
  if (Status s = co_await save_body(exchange, shared->path / "upload.tar"); !s) co_return s.error();
  co_return shared;
}

std::map<std::string, std::string> build_args_of(const http::Request& request) {
  std::map<std::string, std::string> args;
  const auto it = request.query.find("buildArgs");
  if (it == request.query.end()) return args;
  auto parsed = json_text::parse_object(it->second, "buildArgs");
  if (!parsed) return args;
  for (const auto& [key, value] : parsed->items())
    if (value.is_string()) args[key] = value.get<std::string>();
  return args;
}

// The caller's credentials for one registry: X-Registry-Auth carries one
// entry of Docker's config.json "auths" (as Docker's does), base64-encoded;
// none: anonymous. Never logged.
Result<std::string> registry_credentials(const http::Request& request) {
  const std::string header = request.header("x-registry-auth");
  if (header.empty()) return std::string();
  auto decoded = base64::decode(header);
  if (!decoded) return Error::with_message("X-Registry-Auth: not base64", kErrBadInput);
  if (auto st = templates::registry::check_credentials(*decoded); !st)
    return Error::with_message(st.error().message(), kErrBadInput);
  return *decoded;
}

// X-Registry-Config (a build's FROM may name any registry): base64 of
// {"host": <auths entry>, ...}, as Docker sends for builds.
Result<std::map<std::string, std::string>> registry_config(const http::Request& request) {
  std::map<std::string, std::string> out;
  const std::string header = request.header("x-registry-config");
  if (header.empty()) return out;
  auto decoded = base64::decode(header);
  const json doc = decoded ? json::parse(*decoded, nullptr, false) : json();
  if (!doc.is_object())
    return Error::with_message("X-Registry-Config: not base64 of a JSON object", kErrBadInput);
  for (const auto& [host, entry] : doc.items()) {
    const std::string text = entry.dump();
    if (auto st = templates::registry::check_credentials(text); !st)
      return Error::with_message(st.error().message(), kErrBadInput);
    out[host] = text;
  }
  return out;
}

// {"ref": "HOST/REPO[:TAG]", "insecure": false} and the caller's credentials.
Task<Result<templates::registry::Access>> registry_access(Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return body.error();
  auto request = json_text::parse_object(*body);
  if (!request) co_return request.error();
  const auto ref_it = request->find("ref");
  if (ref_it == request->end() || !ref_it->is_string())
    co_return Error::with_message("ref: give the image as HOST/REPO[:TAG]", kErrBadInput);
  auto ref = templates::registry::parse_reference(ref_it->get<std::string>());
  if (!ref) co_return Error::with_message(ref.error().message(), kErrBadInput);
  const auto insecure = request->find("insecure");
  if (insecure != request->end() && !insecure->is_boolean())
    co_return Error::with_message("insecure: must be true or false", kErrBadInput);
  auto credentials = registry_credentials(exchange.request());
  if (!credentials) co_return credentials.error();
  templates::registry::Access access;
  access.ref = std::move(*ref);
  access.credentials_json = std::move(*credentials);
  access.insecure = insecure != request->end() && insecure->get<bool>();
  co_return access;
}

Task<void> build_sandboxfile(ControlCall& call, Exchange& exchange) {
  Service& service = call.service;
  const auto& req = exchange.request();
  templates::SandboxfileRequest request;
  auto id = build_id(call, call.params.at("name"), true);
  if (!id) co_return co_await respond_error(exchange, id.error());
  request.name = std::move(*id);
  request.owner = call.caller.team;
  request.no_cache = query_flag(req, "noCache", false);
  request.network = query_flag(req, "network", true);
  auto step_timeout = step_timeout_of(req);
  if (!step_timeout) co_return co_await respond_error(exchange, step_timeout.error());
  request.step_timeout_s = *step_timeout;
  request.build_args = build_args_of(req);
  request.registry_insecure = query_flag(req, "insecureRegistry", false);
  auto registries = registry_config(req);
  if (!registries) co_return co_await respond_error(exchange, registries.error());
  request.registry_credentials = std::move(*registries);
  const auto file_it = req.query.find("file");
  const std::string file = file_it == req.query.end() ? "Sandboxfile" : file_it->second;
  auto upload = co_await receive_upload(service, exchange);
  if (!upload) co_return co_await respond_error(exchange, upload.error());
  BuildJob job = [&store = service.templates(), request, file,
                  upload = std::move(*upload)](const templates::BuildProgressFn& progress) mutable {
    request.context_dir = upload->path / "context";
    auto text =
        templates::build_context::unpack(upload->path / "upload.tar", request.context_dir, file);
    if (!text) return Result<templates::TemplateInfo>(text.error());
    request.sandboxfile = std::move(*text);
    return store.build_sandboxfile(request, progress);
  };
  co_await stream_job(service, exchange, std::move(job));
}

Task<void> build(ControlCall& call, Exchange& exchange) {
  if (exchange.request().header("content-type") == "application/x-tar")
    co_return co_await build_sandboxfile(call, exchange);
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  const auto no_cache = parse_no_cache(*body);
  if (!no_cache) co_return co_await respond_error(exchange, no_cache.error());
  templates::BuildOptions options;
  options.no_cache = no_cache.value();
  options.owner = call.caller.team;
  const std::string& asked = call.params.at("name");
  auto id = build_id(call, asked, options.no_cache);
  if (!id) co_return co_await respond_error(exchange, id.error());
  // Only a built-in has a spec; for any other name the error names what was asked.
  std::string name = call.service.templates().is_builtin(*id) ? *id : asked;
  BuildJob job = [&store = call.service.templates(), name = std::move(name),
                  options](const templates::BuildProgressFn& progress) {
    return store.build(name, options, progress);
  };
  co_await stream_job(call.service, exchange, std::move(job));
}

Task<void> import(ControlCall& call, Exchange& exchange) {
  Service& service = call.service;
  const auto& query = exchange.request().query;
  const auto origin_it = query.find("origin");
  const std::string origin = origin_it == query.end() ? "upload" : origin_it->second;
  auto id = build_id(call, call.params.at("name"), true);
  if (!id) co_return co_await respond_error(exchange, id.error());
  auto upload = co_await receive_upload(service, exchange);
  if (!upload) co_return co_await respond_error(exchange, upload.error());
  BuildJob job = [&store = service.templates(), name = std::move(*id), origin,
                  owner = call.caller.team,
                  upload = std::move(*upload)](const templates::BuildProgressFn& progress) {
    return store.import_image(name, upload->path / "upload.tar", origin, owner, progress);
  };
  co_await stream_job(service, exchange, std::move(job));
}

// The body of a POST /abx/v1/templates/{name}/snapshot: {"snapshotID": "snap…"}.
Result<std::string> snapshot_id_of(const std::string& body) {
  auto doc = json_text::parse_object(body.empty() ? std::string_view("{}") : body);
  if (!doc) return doc.error();
  const auto it = doc->find("snapshotID");
  if (it == doc->end() || !it->is_string() || it->get<std::string>().empty())
    return Error::with_message("snapshotID: name the snapshot (see `abx snapshot list`)",
                               kErrBadInput);
  return it->get<std::string>();
}

Task<void> from_snapshot(ControlCall& call, Exchange& exchange) {
  Service& service = call.service;
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto snapshot_id = snapshot_id_of(*body);
  if (!snapshot_id) co_return co_await respond_error(exchange, snapshot_id.error());
  auto id = build_id(call, call.params.at("name"), true);
  if (!id) co_return co_await respond_error(exchange, id.error());
  auto request = service.snapshot_template(call.caller, *snapshot_id, *id);
  if (!request) co_return co_await respond_error(exchange, request.error());
  BuildJob job = [&store = service.templates(),
                  request = std::move(*request)](const templates::BuildProgressFn& progress) {
    return store.from_snapshot(request, progress);
  };
  co_await stream_job(service, exchange, std::move(job));
}

Task<void> push(ControlCall& call, Exchange& exchange) {
  const std::string& asked = call.params.at("name");
  auto id = template_id(call, asked);
  if (!id)
    co_return co_await respond_error(exchange, templates::TemplateStore::no_such_template(asked));
  auto access = co_await registry_access(exchange);
  if (!access) co_return co_await respond_error(exchange, access.error());
  BuildJob job = [&store = call.service.templates(), name = std::move(*id),
                  access = std::move(*access)](const templates::BuildProgressFn& progress) {
    return store.push(name, access, progress);
  };
  co_await stream_job(call.service, exchange, std::move(job));
}

Task<void> pull(ControlCall& call, Exchange& exchange) {
  auto id = build_id(call, call.params.at("name"), true);
  if (!id) co_return co_await respond_error(exchange, id.error());
  auto access = co_await registry_access(exchange);
  if (!access) co_return co_await respond_error(exchange, access.error());
  BuildJob job = [&store = call.service.templates(), name = std::move(*id),
                  owner = call.caller.team,
                  access = std::move(*access)](const templates::BuildProgressFn& progress) {
    return store.pull(name, access, owner, progress);
  };
  co_await stream_job(call.service, exchange, std::move(job));
}

constexpr size_t kExportChunk = 1u << 20;

// Streams the file at `path` with its length; a pool thread reads each chunk.
Task<void> stream_file(Service& service, Exchange& exchange, const fs::path& path,
                       const std::string& content_type) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0)
    co_return co_await respond_error(exchange, Error::from_errno("open", path.string()));
  co_await exchange.start_stream(200, content_type, {}, static_cast<uint64_t>(st.st_size));
  for (;;) {
    std::string chunk(kExportChunk, '\0');
    ssize_t got = -1;
    co_await service.pool().run([&] { got = ::read(fd.get(), chunk.data(), chunk.size()); });
    if (got <= 0) break;  // the end, or a read error: the client sees a short body
    chunk.resize(static_cast<size_t>(got));
    if (!co_await exchange.write_chunk(std::move(chunk))) co_return;
  }
  co_await exchange.finish_stream();
}

// How many live sandboxes (of every team: a template's layers are shared) run on it.
size_t sandboxes_on(Service& service, const std::string& name) {
  size_t count = 0;
  for (const auto& row : service.list())
    if (row.template_id == name) ++count;
  return count;
}

}  // namespace

Task<void> templates_list(ControlCall& call, Exchange& exchange) {
  std::vector<templates::TemplateInfo> shown;
  const auto& store = call.service.templates();
  for (auto& info : store.list()) {
    if (store.visible_to(info.name, call.caller.team))
      shown.push_back(shown_to(call, std::move(info)));
  }
  co_await respond_json(exchange, 200, list_json(shown));
}

Task<void> template_get(ControlCall& call, Exchange& exchange) {
  const std::string& name = call.params.at("name");
  auto id = template_id(call, name);
  if (!id)
    co_return co_await respond_error(exchange, templates::TemplateStore::no_such_template(name));
  auto info = call.service.templates().inspect(*id);
  if (!info) co_return co_await respond_error(exchange, info.error());
  co_await respond_json(exchange, 200, info_json(shown_to(call, std::move(*info))));
}

json alias_json(const std::string& template_id, bool is_public) {
  return {{"templateID", template_id}, {"public", is_public}};
}

// E2B's GET /templates/aliases/{alias} (Template.exists()): 200 for a name the
// caller may use, 404 else; names are per team, so another team's use of the
// name is nothing to the caller (E2B answers 403 there).
Task<void> template_alias_get(ControlCall& call, Exchange& exchange) {
  const std::string& name = call.params.at("alias");
  auto id = template_id(call, name);
  if (!id) co_return co_await respond_error(exchange, 404, "template '" + name + "' not found");
  co_await respond_json(exchange, 200, alias_json(*id, call.service.templates().is_builtin(*id)));
}

// A foreign template is as absent as an unknown one; a built-in, and one that
// live sandboxes run on, are an admin's to remove.
Task<void> template_remove(ControlCall& call, Exchange& exchange) {
  const std::string& name = call.params.at("name");
  const auto& query = exchange.request().query;
  const bool force = query.count("force") && query.at("force") == "true";
  auto& store = call.service.templates();
  auto found = template_id(call, name);
  if (!found)
    co_return co_await respond_error(exchange, templates::TemplateStore::no_stored_template(name));
  const std::string& id = *found;
  if (!call.caller.admin && store.is_builtin(id)) {
    co_return co_await respond_error(exchange, 403,
                                     "'" + name + "' is built in: only an admin key may remove it");
  }
  const size_t running = sandboxes_on(call.service, id);
  const bool used = running > 0;
  if (used && !force) {
    co_return co_await respond_error(
        exchange, 409,
        "template '" + name + "' is used by running sandboxes; kill them or use --force");
  }
  if (used && !call.caller.admin) {
    co_return co_await respond_error(exchange, 403,
                                     "only an admin key may force-remove a template in use");
  }
  const Status removed = store.remove(id, used);
  if (!removed) co_return co_await respond_error(exchange, removed.error());
  if (!used) co_return co_await exchange.respond(204, "application/json", "");
  // Forced: say how many sandboxes keep its layers until they end.
  json body = json::object();
  body["name"] = name;
  body["runningSandboxes"] = running;
  co_await respond_json(exchange, 200, body);
}

Task<void> template_build(ControlCall& call, Exchange& exchange) { co_await build(call, exchange); }

Task<void> template_import(ControlCall& call, Exchange& exchange) {
  co_await import(call, exchange);
}

Task<void> template_from_snapshot(ControlCall& call, Exchange& exchange) {
  co_await from_snapshot(call, exchange);
}

Task<void> template_push(ControlCall& call, Exchange& exchange) { co_await push(call, exchange); }

Task<void> template_pull(ControlCall& call, Exchange& exchange) { co_await pull(call, exchange); }

Task<void> template_export(ControlCall& call, Exchange& exchange) {
  const std::string& asked = call.params.at("name");
  auto id = template_id(call, asked);
  if (!id)
    co_return co_await respond_error(exchange, templates::TemplateStore::no_such_template(asked));
  const std::string& name = *id;
  Service& service = call.service;
  auto dir = service.templates().upload_dir();  // removed when the stream ends
  if (!dir) co_return co_await respond_error(exchange, dir.error());
  std::optional<Result<fs::path>> tar;
  co_await service.pool().run_long(
      [&] { tar = service.templates().export_image(name, dir->path, [](const std::string&) {}); });
  if (!*tar) co_return co_await respond_error(exchange, tar->error());
  co_await stream_file(service, exchange, tar->value(), "application/x-tar");
}

}  // namespace abx::daemon::routes
