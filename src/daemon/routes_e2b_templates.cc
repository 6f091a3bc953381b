// E2B's template build API, as the unmodified SDKs' Template.build() and
// build_in_background() use it: POST /v3/templates (a build is asked for),
// GET /templates/{id}/files/{hash} (an upload link for a COPY's files, unless
// the team uploaded them before), PUT of the files to that link, POST
// /v2/templates/{id}/builds/{buildID} (the steps: the build starts) and GET
// .../status (its status and log). The steps become a Sandboxfile built by
// TemplateStore, as `abx template build` builds one.
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "common/fd_io.h"
#include "common/json_text.h"
#include "common/unique_fd.h"
#include "daemon/e2b_builds.h"
#include "daemon/e2b_template_steps.h"
#include "daemon/routes.h"
#include "templates/build_context.h"

namespace abx::daemon::routes {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr uint64_t kMaxUploadBytes = 2ull << 30;  // one COPY's files, as the SDK tars them
constexpr size_t kMaxStepsBody = 4u << 20;
constexpr size_t kDefaultLogLimit = 100;
constexpr const char* kUploadPrefix = "/abx/v1/e2b-uploads/";

// "name" or "name:tag": the name (tags are E2B's build labels; see README).
std::string name_of(const std::string& name_and_tag) {
  return name_and_tag.substr(0, name_and_tag.find(':'));
}

// The id under which the caller builds template `name`, or why it may not.
Result<std::string> build_target(const ControlCall& call, const std::string& name) {
  const auto& store = call.service.templates();
  auto id = store.id_for(call.caller.team, name);
  if (!id) return Error::with_message(id.error().message(), kErrBadInput);
  if (!call.caller.admin && store.is_builtin(*id))
    return Error::with_message("only an admin key may replace built-in template '" + name + "'",
                               EPERM);
  return id;
}

Result<std::vector<std::string>> tags_of(const json& body) {
  std::vector<std::string> tags;
  const auto it = body.find("tags");
  if (it == body.end() || it->is_null()) return tags;
  if (!it->is_array() || it->size() > 32)
    return Error::with_message("tags: an array of at most 32 strings", kErrBadInput);
  for (const auto& tag : *it) {
    if (!tag.is_string() || tag.get_ref<const std::string&>().empty() ||
        tag.get_ref<const std::string&>().size() > 128)
      return Error::with_message("tags: each a non-empty string", kErrBadInput);
    tags.push_back(tag.get<std::string>());
  }
  return tags;
}

// What the SDK's PUT goes to: this daemon, as the caller reached it.
std::string upload_url(const Exchange& exchange, const std::string& token) {
  std::string host = exchange.request().header("host");
  if (host.empty() || host.find_first_of("/ \r\n") != std::string::npos) host = "127.0.0.1";
  return "http://" + host + kUploadPrefix + token;
}

// Writes the body to `path`, at most kMaxUploadBytes.
Task<Status> save_upload(Exchange& exchange, const fs::path& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) co_return Error::from_errno("e2b upload", path.string());
  uint64_t total = 0;
  for (;;) {
    const std::string piece = co_await exchange.read_body_some();
    if (piece.empty()) break;
    total += piece.size();
    if (total > kMaxUploadBytes)
      co_return Error::with_message("upload: larger than 2 GiB; copy fewer files at once",
                                    kErrTooLarge);
    if (Status s = write_all(fd.get(), piece, "e2b upload", path.string()); !s) co_return s;
  }
  co_return Status{};
}

// The user the base template runs as, when it is one the team can see.
e2b_steps::BaseUserFn base_user_of(const ControlCall& call) {
  return [&store = call.service.templates(), team = call.caller.team](const std::string& from) {
    auto id = store.resolve_for(team, from);
    if (!id) return std::string();
    auto info = store.inspect(*id);
    return info ? info->user : std::string();
  };
}

// The build, on the long lane: each upload unpacked into the context (tar
// members may not leave it), then the Sandboxfile built.
Status run_build(templates::TemplateStore& store, E2bBuilds& builds, const std::string& team,
                 const std::string& id, const std::string& build_id,
                 const e2b_steps::Translated& steps) {
  auto dir = store.upload_dir();
  if (!dir) return dir.error();
  templates::SandboxfileRequest request;
  request.name = id;
  request.owner = team;
  request.context_dir = dir->path / "context";
  request.sandboxfile = steps.sandboxfile;
  request.no_cache = steps.no_cache;
  for (const std::string& hash : steps.hashes) {
    const fs::path into = request.context_dir / e2b_steps::upload_dir_of(hash);
    std::error_code ec;
    fs::create_directories(into, ec);
    if (ec) return Error{"e2b build: mkdir", ec.value(), into.string()};
    if (Status st = templates::build_context::extract(builds.upload_path(team, hash), into); !st)
      return st;
  }
  for (const std::string& note : steps.notes) builds.log(build_id, "warn", note);
  auto built = store.build_sandboxfile(
      request, [&](const std::string& line) { builds.log(build_id, "info", line); });
  if (!built) return built.error();
  return {};
}

size_t query_number(const http::Request& request, const std::string& name, size_t fallback) {
  const auto it = request.query.find(name);
  if (it == request.query.end()) return fallback;
  size_t value = fallback;
  const auto [end, ec] =
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  return ec == std::errc{} ? value : fallback;
}

}  // namespace

Task<void> e2b_template_request(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto request = json_text::parse_object(*body);
  if (!request) co_return co_await respond_error(exchange, request.error());
  std::string asked;
  for (const char* key : {"name", "alias"}) {
    const auto it = request->find(key);
    if (asked.empty() && it != request->end() && it->is_string()) asked = it->get<std::string>();
  }
  if (asked.empty())
    co_return co_await respond_error(exchange, 400, "name: give the template a name");
  auto tags = tags_of(*request);
  if (!tags) co_return co_await respond_error(exchange, tags.error());
  if (asked.find(':') != std::string::npos) tags->push_back(asked.substr(asked.find(':') + 1));
  const std::string name = name_of(asked);
  auto id = build_target(call, name);
  if (!id) co_return co_await respond_error(exchange, id.error());
  const std::string build_id = call.service.e2b_builds().create(call.caller.team, name, *id);
  json answer = json::object();
  answer["templateID"] = name;
  answer["buildID"] = build_id;
  answer["public"] = false;
  answer["names"] = json::array({name});
  answer["aliases"] = json::array({name});
  answer["tags"] = *tags;
  co_await respond_json(exchange, 202, answer);
}

Task<void> e2b_template_files(ControlCall& call, Exchange& exchange) {
  const std::string& hash = call.params.at("hash");
  if (!e2b_steps::valid_hash(hash))
    co_return co_await respond_error(exchange, 400, "hash: the files' sha256, 64 hex digits");
  E2bBuilds& builds = call.service.e2b_builds();
  json answer = json::object();
  answer["present"] = builds.has_upload(call.caller.team, hash);
  if (!answer["present"].get<bool>())
    answer["url"] = upload_url(exchange, builds.upload_token(call.caller.team, hash));
  co_await respond_json(exchange, 201, answer);
}

// The upload link's PUT: the token is the credential (as a presigned URL is).
Task<void> e2b_template_upload(ControlCall& call, Exchange& exchange) {
  E2bBuilds& builds = call.service.e2b_builds();
  auto grant = builds.take_token(call.params.at("token"));
  if (!grant)
    co_return co_await respond_error(exchange, 404, "upload link unknown or expired; ask again");
  auto partial = builds.partial_path(grant->team);
  if (!partial) co_return co_await respond_error(exchange, partial.error());
  Status saved = co_await save_upload(exchange, *partial);
  const fs::path final_path = builds.upload_path(grant->team, grant->hash);
  if (saved && ::rename(partial->c_str(), final_path.c_str()) != 0)
    saved = Error::from_errno("e2b upload: rename", final_path.string());
  if (!saved) {
    ::unlink(partial->c_str());
    co_return co_await respond_error(exchange, saved.error());
  }
  co_await exchange.respond(200, "application/json", "");
}

Task<void> e2b_template_build_start(ControlCall& call, Exchange& exchange) {
  Service& service = call.service;
  E2bBuilds& builds = service.e2b_builds();
  const std::string& name = call.params.at("id");
  const std::string& build_id = call.params.at("buildID");
  auto body = co_await read_json_body(exchange, kMaxStepsBody);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto request = json_text::parse_object(*body);
  if (!request) co_return co_await respond_error(exchange, request.error());
  auto steps = e2b_steps::translate(*request, base_user_of(call));
  if (!steps) co_return co_await respond_error(exchange, steps.error());
  for (const std::string& hash : steps->hashes)
    if (!builds.has_upload(call.caller.team, hash))
      co_return co_await respond_error(
          exchange, 400, "filesHash " + hash + ": upload the files first (GET .../files/{hash})");
  auto id = builds.start(call.caller.team, name, build_id);
  if (!id) co_return co_await respond_error(exchange, id.error());
  service.start_long([&store = service.templates(), &builds, team = call.caller.team, id = *id,
                      build_id, steps = std::move(*steps)] {
    builds.finish(build_id, run_build(store, builds, team, id, build_id, steps));
  });
  co_await exchange.respond(202, "application/json", "");
}

Task<void> e2b_template_build_status(ControlCall& call, Exchange& exchange) {
  const auto& req = exchange.request();
  const size_t offset = query_number(req, "logsOffset", 0);
  const size_t limit = std::min<size_t>(query_number(req, "limit", kDefaultLogLimit), 1000);
  auto status = call.service.e2b_builds().status(call.caller.team, call.params.at("id"),
                                                 call.params.at("buildID"), offset, limit);
  if (!status) co_return co_await respond_error(exchange, 404, "build not found");
  co_await respond_json(exchange, 200, *status);
}

}  // namespace abx::daemon::routes
