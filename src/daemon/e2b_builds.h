// E2B's template builds (POST /v3/templates and what follows it): the builds
// the SDKs asked for and their logs, and the files they uploaded for COPY
// steps, stored by content hash under the data dir, per team. The building
// itself is TemplateStore's (routes_e2b_templates.cc starts it).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/e2b_tags.h"

namespace abx::daemon {

class E2bBuilds {
 public:
  // Uploads live in `uploads_dir` (made on first use), one dir per team;
  // the tags in e2b-tags.json beside it.
  explicit E2bBuilds(std::filesystem::path uploads_dir);

  E2bTags& tags() { return tags_; }

  // A new build of the team's template `name` (as the team names it; `id` is
  // the store's id for it), waiting for its steps; `tags` name it once it is
  // ready (E2bTags::record_build). Returns the build id.
  std::string create(const std::string& team, const std::string& name, const std::string& id,
                     std::vector<std::string> tags);
  // The store id of the team's waiting build, which is now building; an
  // error when the team has no such build or it was started already.
  Result<std::string> start(const std::string& team, const std::string& name,
                            const std::string& build_id);
  void log(const std::string& build_id, const std::string& level, const std::string& message);
  // `failed_step` is E2B's name of the step a failure belongs to ("base",
  // "1", ..., "finalize"; "" when none): the SDKs show that step's call site.
  void finish(const std::string& build_id, const Status& outcome,
              const std::string& failed_step = {});
  // TemplateBuildInfo with the log entries from `offset` (at most `limit`);
  // nothing when the team has no such build.
  std::optional<nlohmann::json> status(const std::string& team, const std::string& name,
                                       const std::string& build_id, size_t offset,
                                       size_t limit) const;

  // Where the team's upload of `hash` (a valid files hash) is kept.
  std::filesystem::path upload_path(const std::string& team, const std::string& hash) const;
  bool has_upload(const std::string& team, const std::string& hash) const;
  // A one-time token for the upload link; it names the team and the hash.
  std::string upload_token(const std::string& team, const std::string& hash);
  struct UploadGrant {
    std::string team;
    std::string hash;
  };
  // The grant a token carries (used up), or nothing for an unknown or expired one.
  std::optional<UploadGrant> take_token(const std::string& token);
  // A private file beside the team's uploads, to write an upload into before
  // it is renamed into place.
  Result<std::filesystem::path> partial_path(const std::string& team);

 private:
  struct Entry {
    int64_t unix_ms;
    std::string level;
    std::string message;
  };
  struct Build {
    std::string team, name, id;
    std::string status = "waiting";  // waiting, building, ready, error
    std::vector<Entry> entries;
    std::string reason;
    std::string failed_step;
    std::vector<std::string> tags;
    int64_t updated_ms = 0;
  };
  struct Grant {
    UploadGrant grant;
    std::chrono::steady_clock::time_point expires;
  };
  void forget_old_builds();  // with mutex_ held

  std::filesystem::path dir_;
  mutable std::mutex mutex_;
  std::map<std::string, Build> builds_;
  std::map<std::string, Grant> tokens_;
  E2bTags tags_;
};

}  // namespace abx::daemon
