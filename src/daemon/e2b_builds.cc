#include "daemon/e2b_builds.h"

#include <sys/stat.h>

#include "common/clock.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "daemon/codec.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxBuilds = 256;         // kept for status polls; the oldest finished go first
constexpr size_t kMaxEntries = 20000;      // log entries kept per build
constexpr size_t kMaxMessageBytes = 4096;  // a longer log line is cut
constexpr auto kTokenLifetime = std::chrono::hours(1);
constexpr size_t kMaxTokens = 4096;

std::string uuid() {
  const std::string hex = ids::random_hex(16);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

json entry_json(int64_t unix_ms, const std::string& level, const std::string& message) {
  return {{"timestamp", codec::rfc3339(unix_ms / 1000, (unix_ms % 1000) * 1000000, true)},
          {"level", level},
          {"message", message}};
}

}  // namespace

E2bBuilds::E2bBuilds(fs::path uploads_dir)
    : dir_(std::move(uploads_dir)), tags_(dir_.parent_path() / "e2b-tags.json") {}

std::string E2bBuilds::create(const std::string& team, const std::string& name,
                              const std::string& id, std::vector<std::string> tags) {
  std::lock_guard lock(mutex_);
  forget_old_builds();
  const std::string build_id = uuid();
  Build& build = builds_[build_id];
  build.team = team;
  build.name = name;
  build.id = id;
  build.tags = std::move(tags);
  build.updated_ms = unix_ms_now();
  return build_id;
}

Result<std::string> E2bBuilds::start(const std::string& team, const std::string& name,
                                     const std::string& build_id) {
  std::lock_guard lock(mutex_);
  const auto it = builds_.find(build_id);
  if (it == builds_.end() || it->second.team != team || it->second.name != name)
    return Error::with_message("build '" + build_id + "' of template '" + name + "' not found",
                               ENOENT);
  if (it->second.status != "waiting")
    return Error::with_message("build '" + build_id + "' was started already", EEXIST);
  it->second.status = "building";
  it->second.updated_ms = unix_ms_now();
  return it->second.id;
}

void E2bBuilds::log(const std::string& build_id, const std::string& level,
                    const std::string& message) {
  std::lock_guard lock(mutex_);
  const auto it = builds_.find(build_id);
  if (it == builds_.end() || it->second.entries.size() >= kMaxEntries) return;
  it->second.entries.push_back(Entry{unix_ms_now(), level, message.substr(0, kMaxMessageBytes)});
}

void E2bBuilds::finish(const std::string& build_id, const Status& built,
                       const std::string& failed_step) {
  std::lock_guard lock(mutex_);
  const auto it = builds_.find(build_id);
  if (it == builds_.end()) return;
  Build& build = it->second;
  // Tags name a build only once it is there to start.
  const Status outcome =
      built ? tags_.record_build(build.team, build.name, build_id, build.tags) : built;
  build.status = outcome ? "ready" : "error";
  if (!outcome) build.reason = outcome.error().message();
  if (!outcome) build.failed_step = built ? "finalize" : failed_step;
  build.updated_ms = unix_ms_now();
}

std::optional<json> E2bBuilds::status(const std::string& team, const std::string& name,
                                      const std::string& build_id, size_t offset,
                                      size_t limit) const {
  std::lock_guard lock(mutex_);
  const auto it = builds_.find(build_id);
  if (it == builds_.end() || it->second.team != team || it->second.name != name)
    return std::nullopt;
  const Build& build = it->second;
  json entries = json::array();
  for (size_t i = offset; i < build.entries.size() && entries.size() < limit; ++i) {
    const Entry& e = build.entries[i];
    entries.push_back(entry_json(e.unix_ms, e.level, e.message));
  }
  json out = {{"templateID", build.name},
              {"buildID", build_id},
              {"status", build.status},
              {"logs", json::array()},
              {"logEntries", entries}};
  if (build.status == "error") {
    out["reason"] = {{"message", build.reason}};
    if (!build.failed_step.empty()) out["reason"]["step"] = build.failed_step;
  }
  return out;
}

void E2bBuilds::forget_old_builds() {
  while (builds_.size() >= kMaxBuilds) {
    auto oldest = builds_.end();
    for (auto it = builds_.begin(); it != builds_.end(); ++it) {
      const bool finished = it->second.status == "ready" || it->second.status == "error" ||
                            it->second.status == "waiting";
      if (finished &&
          (oldest == builds_.end() || it->second.updated_ms < oldest->second.updated_ms))
        oldest = it;
    }
    if (oldest == builds_.end()) return;  // all building: keep them
    builds_.erase(oldest);
  }
}

// A team's name may be any text: its dir is named by a digest of it.
fs::path E2bBuilds::upload_path(const std::string& team, const std::string& hash) const {
  return dir_ / sha256_hex("team\n" + team).substr(0, 32) / (hash + ".tar");
}

bool E2bBuilds::has_upload(const std::string& team, const std::string& hash) const {
  struct stat st {};
  return ::lstat(upload_path(team, hash).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string E2bBuilds::upload_token(const std::string& team, const std::string& hash) {
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(tokens_, [&](const auto& entry) { return entry.second.expires < now; });
  if (tokens_.size() >= kMaxTokens) tokens_.erase(tokens_.begin());
  const std::string token = ids::random_hex(24);
  tokens_[token] = Grant{UploadGrant{team, hash}, now + kTokenLifetime};
  return token;
}

std::optional<E2bBuilds::UploadGrant> E2bBuilds::take_token(const std::string& token) {
  std::lock_guard lock(mutex_);
  const auto it = tokens_.find(token);
  if (it == tokens_.end()) return std::nullopt;
  Grant grant = it->second;
  tokens_.erase(it);
  if (grant.expires < std::chrono::steady_clock::now()) return std::nullopt;
  return grant.grant;
}

Result<fs::path> E2bBuilds::partial_path(const std::string& team) {
  const fs::path dir = upload_path(team, "x").parent_path();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"e2b upload: mkdir", ec.value(), dir.string()};
  ::chmod(dir_.c_str(), 0700);
  return dir / (".partial-" + ids::random_hex(8));
}

}  // namespace abx::daemon
