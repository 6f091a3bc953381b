#include "daemon/e2b_tags.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/clock.h"
#include "common/fd_io.h"
#include "common/file_replacement.h"
#include "common/json_text.h"
#include "daemon/codec.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxTagBytes = 128;
constexpr size_t kMaxTagsPerTemplate = 64;
constexpr size_t kMaxTemplates = 10000;  // across teams: the file stays small
constexpr const char* kDefaultTag = "default";

bool tag_char(char c, bool first) {
  const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  return alnum || (!first && (c == '.' || c == '_' || c == '-'));
}

Error bad_tag(const std::string& tag) {
  return Error::with_message(
      "tag '" + tag.substr(0, kMaxTagBytes) +
          "' is not a tag: 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
      kErrBadInput);
}

}  // namespace

E2bTags::E2bTags(fs::path file) : file_(std::move(file)) { load(); }

bool E2bTags::valid_tag(const std::string& tag) {
  if (tag.empty() || tag.size() > kMaxTagBytes) return false;
  for (size_t i = 0; i < tag.size(); ++i)
    if (!tag_char(tag[i], i == 0)) return false;
  return true;
}

bool E2bTags::valid_name(const std::string& name) {
  if (name.empty() || name.size() > 256) return false;
  return std::none_of(name.begin(), name.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

Result<E2bTags::Target> E2bTags::split(const std::string& name_and_tag) {
  const size_t colon = name_and_tag.find(':');
  Target target{name_and_tag.substr(0, colon),
                colon == std::string::npos ? kDefaultTag : name_and_tag.substr(colon + 1)};
  if (!valid_name(target.name))
    return Error::with_message(
        "not a template name (name or name:tag, 1-256 bytes, no control characters)", kErrBadInput);
  if (!valid_tag(target.tag)) return bad_tag(target.tag);
  return target;
}

Status E2bTags::record_build(const std::string& team, const std::string& name,
                             const std::string& build_id, const std::vector<std::string>& tags) {
  std::lock_guard lock(mutex_);
  const Key key{team, name};
  if (!templates_.contains(key) && templates_.size() >= kMaxTemplates)
    return Error::with_message("too many tagged templates on this daemon", kErrTooLarge);
  Template& tmpl = templates_[key];
  tmpl.latest_build = build_id;
  const int64_t now = unix_ms_now();
  for (const std::string& tag : tags.empty() ? std::vector<std::string>{kDefaultTag} : tags) {
    if (!valid_tag(tag)) return bad_tag(tag);
    if (!tmpl.tags.contains(tag) && tmpl.tags.size() >= kMaxTagsPerTemplate)
      return Error::with_message("template '" + name + "' has 64 tags; remove some first",
                                 kErrBadInput);
    tmpl.tags[tag] = TagRow{build_id, now};
  }
  return save();
}

Result<E2bTags::Assigned> E2bTags::assign(const std::string& team, const Target& target,
                                          const std::vector<std::string>& tags) {
  for (const std::string& tag : tags)
    if (!valid_tag(tag)) return bad_tag(tag);
  std::lock_guard lock(mutex_);
  const auto it = templates_.find({team, target.name});
  if (it == templates_.end() || !it->second.tags.contains(target.tag))
    return Error::with_message("template '" + target.name + "' has no tag '" + target.tag + "'",
                               ENOENT);
  Template& tmpl = it->second;
  size_t added = 0;
  for (const std::string& tag : tags) added += tmpl.tags.contains(tag) ? 0u : 1u;
  if (tmpl.tags.size() + added > kMaxTagsPerTemplate)
    return Error::with_message("template '" + target.name + "' would have over 64 tags",
                               kErrBadInput);
  const std::string build_id = tmpl.tags.at(target.tag).build_id;
  const int64_t now = unix_ms_now();
  for (const std::string& tag : tags) tmpl.tags[tag] = TagRow{build_id, now};
  if (Status st = save(); !st) return st.error();
  return Assigned{build_id, tags};
}

Status E2bTags::remove(const std::string& team, const std::string& name,
                       const std::vector<std::string>& tags) {
  std::lock_guard lock(mutex_);
  const auto it = templates_.find({team, name});
  if (it == templates_.end())
    return Error::with_message("template '" + name + "' has no tags", ENOENT);
  for (const std::string& tag : tags)
    if (!it->second.tags.contains(tag))
      return Error::with_message("template '" + name + "' has no tag '" + tag.substr(0, 256) + "'",
                                 ENOENT);
  for (const std::string& tag : tags) it->second.tags.erase(tag);
  return save();
}

std::optional<json> E2bTags::list(const std::string& team, const std::string& name) const {
  std::lock_guard lock(mutex_);
  const auto it = templates_.find({team, name});
  if (it == templates_.end()) return std::nullopt;
  std::vector<std::pair<std::string, TagRow>> rows(it->second.tags.begin(), it->second.tags.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.created_ms < b.second.created_ms;
  });
  json out = json::array();
  for (const auto& [tag, row] : rows)
    out.push_back({{"tag", tag},
                   {"buildID", row.build_id},
                   {"createdAt", codec::rfc3339(row.created_ms / 1000,
                                                (row.created_ms % 1000) * 1000000, true)}});
  return out;
}

std::optional<E2bTags::Lookup> E2bTags::find(const std::string& team, const Target& target) const {
  std::lock_guard lock(mutex_);
  const auto it = templates_.find({team, target.name});
  if (it == templates_.end()) return std::nullopt;
  const auto tag = it->second.tags.find(target.tag);
  if (tag == it->second.tags.end()) return std::nullopt;
  return Lookup{tag->second.build_id, tag->second.build_id == it->second.latest_build};
}

Status E2bTags::save() const {
  json doc = json::array();
  for (const auto& [key, tmpl] : templates_) {
    json tags = json::object();
    for (const auto& [tag, row] : tmpl.tags)
      tags[tag] = {{"buildID", row.build_id}, {"createdMs", row.created_ms}};
    doc.push_back({{"team", key.first},
                   {"name", key.second},
                   {"latestBuild", tmpl.latest_build},
                   {"tags", tags}});
  }
  std::error_code ec;
  fs::create_directories(file_.parent_path(), ec);
  return replace_file(file_, json_text::dump(doc), 0600);
}

void E2bTags::load() {
  auto text = read_file(file_);
  if (!text) return;  // none yet
  try {
    for (const json& row : json::parse(*text)) {
      Template& tmpl =
          templates_[{row.at("team").get<std::string>(), row.at("name").get<std::string>()}];
      tmpl.latest_build = row.at("latestBuild").get<std::string>();
      for (const auto& [tag, value] : row.at("tags").items())
        tmpl.tags[tag] =
            TagRow{value.at("buildID").get<std::string>(), value.at("createdMs").get<int64_t>()};
    }
  } catch (const json::exception& e) {
    spdlog::warn("e2b tags: {} is damaged ({}); set aside, starting with no tags", file_.string(),
                 e.what());
    templates_.clear();
    std::error_code ec;
    fs::rename(file_, fs::path(file_.string() + ".damaged"), ec);
  }
}

}  // namespace abx::daemon
