// E2B's template tags: labels ("v1", "production") that name one build of a
// team's template, as `Template.build(t, "name:v1")`, assign_tags, get_tags
// and remove_tags of the SDKs use them. A build with no tag gets "default".
// Kept in one JSON file under the data dir (rewritten whole on each change),
// so tags outlive a daemon restart. The store keeps a template's latest build
// only: a tag of an earlier build still lists, but names no template to start.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::daemon {

class E2bTags {
 public:
  // Reads `file` when it exists (a damaged one is set aside, tags start empty).
  explicit E2bTags(std::filesystem::path file);

  // A tag is 1-128 of [A-Za-z0-9._-], starting with a letter or digit.
  static bool valid_tag(const std::string& tag);
  // A template name as tags know it: 1-256 bytes, no control characters (the
  // store says whether it names a template).
  static bool valid_name(const std::string& name);
  // "name" or "name:tag" (the tag "default" when none): kErrBadInput for a
  // bad name or tag.
  struct Target {
    std::string name, tag;
  };
  static Result<Target> split(const std::string& name_and_tag);

  // Build `build_id` of the team's template `name` is ready: `tags` (or
  // "default") now name it, whichever build they named before.
  Status record_build(const std::string& team, const std::string& name, const std::string& build_id,
                      const std::vector<std::string>& tags);
  // The build `target` names gets `tags` too. ENOENT when the team has no such
  // template or tag; kErrBadInput for a malformed tag.
  struct Assigned {
    std::string build_id;
    std::vector<std::string> tags;
  };
  Result<Assigned> assign(const std::string& team, const Target& target,
                          const std::vector<std::string>& tags);
  // ENOENT (nothing removed) when the template or one of the tags is unknown.
  Status remove(const std::string& team, const std::string& name,
                const std::vector<std::string>& tags);
  // [{tag, buildID, createdAt}], oldest first; nothing for an unknown template.
  std::optional<nlohmann::json> list(const std::string& team, const std::string& name) const;
  // The build a tag names, and whether it is the template's latest build.
  struct Lookup {
    std::string build_id;
    bool latest = false;
  };
  std::optional<Lookup> find(const std::string& team, const Target& target) const;

 private:
  struct TagRow {
    std::string build_id;
    int64_t created_ms = 0;
  };
  struct Template {
    std::map<std::string, TagRow> tags;
    std::string latest_build;
  };
  using Key = std::pair<std::string, std::string>;  // team, name

  Status save() const;  // with mutex_ held
  void load();

  std::filesystem::path file_;
  mutable std::mutex mutex_;
  std::map<Key, Template> templates_;
};

}  // namespace abx::daemon
