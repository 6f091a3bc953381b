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

// The body's `key`: an array of at most 32 tags (E2bTags::valid_tag); none when absent.
Result<std::vector<std::string>> tags_of(const json& body, const char* key = "tags") {
  std::vector<std::string> tags;
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return tags;
  if (!it->is_array() || it->size() > 32)
    return Error::with_message(std::string(key) + ": an array of at most 32 tags", kErrBadInput);
  for (const auto& tag : *it) {
    if (!tag.is_string() || !E2bTags::valid_tag(tag.get<std::string>()))
      return Error::with_message(
          std::string(key) +
              ": each tag 1-128 letters, digits, '.', '_' or '-', starting with a "
              "letter or digit",
          kErrBadInput);
    tags.push_back(tag.get<std::string>());
  }
  return tags;
}

// The body's string `key`, at most 1 KiB.
Result<std::string> string_of(const json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || !it->is_string() || it->get_ref<const std::string&>().empty() ||
      it->get_ref<const std::string&>().size() > 1024)
    return Error::with_message(std::string(key) + ": a template name (name or name:tag)",
                               kErrBadInput);
  return it->get<std::string>();
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

// E2B's words for a RUN whose user the image does not have (the SDKs' users
// match on them); other failures keep the builder's message.
Status in_e2b_words(const Status& built, const e2b_steps::Translated& steps,
                    const std::string& step) {
  const auto run = steps.runs_as.find(step);
  if (built || run == steps.runs_as.end() || built.error().step != "user" ||
      built.error().errnum != ENOENT)
    return built;
  return Error::with_message("failed to run command '" + run->second.first +
                                 "': command failed: unauthenticated: invalid username: '" +
                                 run->second.second + "'",
                             kErrBadInput);
}

// The build, on the long lane: each upload unpacked into the context (tar
// members may not leave it), then the Sandboxfile built. A failure names
// the E2B step it belongs to in `failed_step` (the base's, when no step had
// started: FROM failed).
Status run_build(templates::TemplateStore& store, E2bBuilds& builds, const std::string& team,
                 const std::string& id, const std::string& build_id,
                 const e2b_steps::Translated& steps, std::string& failed_step) {
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
  std::string step = "base";
  request.step_started = [&](size_t index) { step = e2b_steps::step_name(steps, index); };
  auto built = store.build_sandboxfile(
      request, [&](const std::string& line) { builds.log(build_id, "info", line); });
  if (built) return {};
  failed_step = step;
  return in_e2b_words(built.error(), steps, step);
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
  auto target = E2bTags::split(asked);
  if (!target) co_return co_await respond_error(exchange, target.error());
  const std::string& name = target->name;
  if (asked.find(':') != std::string::npos &&
      std::find(tags->begin(), tags->end(), target->tag) == tags->end())
    tags->push_back(target->tag);
  auto id = build_target(call, name);
  if (!id) co_return co_await respond_error(exchange, id.error());
  const std::string build_id = call.service.e2b_builds().create(call.caller.team, name, *id, *tags);
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
    std::string failed_step;
    const Status built = run_build(store, builds, team, id, build_id, steps, failed_step);
    builds.finish(build_id, built, failed_step);
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

namespace abx::daemon::routes {

// Built outside the coroutine: g++ 12 rejects string literals in braced
// initializers there.
json assigned_json(const E2bTags::Assigned& assigned) {
  return {{"buildID", assigned.build_id}, {"tags", assigned.tags}};
}

// POST /templates/tags {target: "name[:tag]", tags}: the build the target
// names gets the tags too.
Task<void> e2b_template_tags_assign(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto request = json_text::parse_object(*body);
  if (!request) co_return co_await respond_error(exchange, request.error());
  auto asked = string_of(*request, "target");
  if (!asked) co_return co_await respond_error(exchange, asked.error());
  auto target = E2bTags::split(*asked);
  if (!target) co_return co_await respond_error(exchange, target.error());
  auto tags = tags_of(*request);
  if (!tags) co_return co_await respond_error(exchange, tags.error());
  if (tags->empty()) co_return co_await respond_error(exchange, 400, "tags: name at least one");
  auto assigned = call.service.e2b_builds().tags().assign(call.caller.team, *target, *tags);
  if (!assigned) co_return co_await respond_error(exchange, assigned.error());
  co_await respond_json(exchange, 201, assigned_json(*assigned));
}

// DELETE /templates/tags {name, tags}.
Task<void> e2b_template_tags_remove(ControlCall& call, Exchange& exchange) {
  auto body = co_await read_json_body(exchange, 1 << 16);
  if (!body) co_return co_await respond_error(exchange, body.error());
  auto request = json_text::parse_object(*body);
  if (!request) co_return co_await respond_error(exchange, request.error());
  auto name = string_of(*request, "name");
  if (!name) co_return co_await respond_error(exchange, name.error());
  auto tags = tags_of(*request);
  if (!tags) co_return co_await respond_error(exchange, tags.error());
  if (tags->empty()) co_return co_await respond_error(exchange, 400, "tags: name at least one");
  auto target = E2bTags::split(*name);
  if (!target) co_return co_await respond_error(exchange, target.error());
  Status removed = call.service.e2b_builds().tags().remove(call.caller.team, target->name, *tags);
  if (!removed) co_return co_await respond_error(exchange, removed.error());
  co_await exchange.respond(204, "application/json", "");
}

// GET /templates/{id}/tags.
Task<void> e2b_template_tags_list(ControlCall& call, Exchange& exchange) {
  const std::string& name = call.params.at("id");
  if (!E2bTags::valid_name(name))
    co_return co_await respond_error(exchange, 400, "not a template name");
  auto tags = call.service.e2b_builds().tags().list(call.caller.team, name);
  if (!tags) co_return co_await respond_error(exchange, 404, "template '" + name + "' has no tags");
  co_await respond_json(exchange, 200, *tags);
}

}  // namespace abx::daemon::routes
