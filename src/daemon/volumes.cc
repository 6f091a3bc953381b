#include "daemon/volumes.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "common/file_replacement.h"
#include "common/ids.h"
#include "common/json_text.h"
#include "common/unique_fd.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxName = 63;
constexpr uint32_t kUser = 1000;  // who owns a new volume's top directory

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// 8-4-4-4-12 hex, as E2B's volume ids.
std::string new_id() {
  const std::string hex = ids::random_hex(16);
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20, 12);
}

json to_json(const Volume& v) {
  return {{"id", v.id},
          {"name", v.name},
          {"team", v.team},
          {"token", v.token},
          {"createdMs", v.created_ms}};
}

std::optional<Volume> from_json(const json& doc) {
  if (!doc.is_object()) return std::nullopt;
  Volume v;
  v.id = doc.value("id", "");
  v.name = doc.value("name", "");
  v.team = doc.value("team", "");
  v.token = doc.value("token", "");
  v.created_ms = doc.value("createdMs", int64_t{0});
  if (!is_volume_id(v.id) || !check_volume_name(v.name) || v.team.empty() || v.token.empty())
    return std::nullopt;
  return v;
}

}  // namespace

Status check_volume_name(const std::string& name) {
  auto bad = [&](const std::string& why) {
    return Error::with_message("volume name '" + name + "': " + why, kErrBadInput);
  };
  if (name.empty()) return bad("must not be empty");
  if (name.size() > kMaxName) return bad("longer than 63 characters");
  if (name.front() == '.' || name.front() == '-') return bad("must not start with '.' or '-'");
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return bad("may hold only letters, digits, '.', '_' and '-'");
  return {};
}

bool is_volume_id(const std::string& id) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? id[i] != '-' : !std::isxdigit(static_cast<unsigned char>(id[i]))) return false;
  }
  return true;
}

Volumes::Volumes(fs::path dir, VolumeOwners owners)
    : dir_(std::move(dir)), owners_(std::move(owners)) {}

Result<std::unique_ptr<Volumes>> Volumes::open(fs::path dir, VolumeOwners owners) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"create volumes dir", ec.value(), dir.string()};
  fs::permissions(dir, fs::perms::owner_all, ec);
  std::unique_ptr<Volumes> volumes(new Volumes(std::move(dir), std::move(owners)));
  if (Status s = volumes->load(); !s) return s.error();
  return volumes;
}

// A volume whose meta.json is unreadable is left alone (and not listed);
// the leftovers of a remove that was cut short go.
Status Volumes::load() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".trash-")) {
      fs::remove_all(entry.path(), ec);
      continue;
    }
    std::ifstream in(entry.path() / "meta.json");
    std::stringstream text;
    text << in.rdbuf();
    auto doc = json_text::parse_object(text.str());
    if (!doc) continue;
    auto volume = from_json(*doc);
    if (volume && volume->id == name) volumes_[volume->id] = std::move(*volume);
  }
  if (ec) return Error{"read volumes dir", ec.value(), dir_.string()};
  return {};
}

Result<Volume> Volumes::create(const std::string& team, const std::string& name) {
  if (Status s = check_volume_name(name); !s) return s.error();
  std::lock_guard lock(mutex_);
  for (const auto& [id, v] : volumes_)
    if (v.team == team && v.name == name)
      return Error::with_message("volume " + name + " already exists", EEXIST);
  Volume volume{new_id(), name, team, "vt_" + ids::random_hex(24), unix_ms()};
  const fs::path home = dir_ / volume.id;
  const fs::path data = home / "data";
  if (::mkdir(home.c_str(), 0700) != 0) return Error::from_errno("create volume", home.string());
  auto undo = [&](Error error) {
    std::error_code ec;
    fs::remove_all(home, ec);
    return error;
  };
  if (::mkdir(data.c_str(), 0755) != 0)
    return undo(Error::from_errno("create volume", data.string()));
  if (::chown(data.c_str(), owners_.host_uid(kUser), owners_.host_gid(kUser)) != 0)
    return undo(Error::from_errno("chown volume", data.string()));
  if (Status s = replace_file(home / "meta.json", to_json(volume).dump(), 0600, true); !s)
    return undo(s.error());
  volumes_[volume.id] = volume;
  return volume;
}

std::vector<Volume> Volumes::list(const std::string& team) const {
  std::lock_guard lock(mutex_);
  std::vector<Volume> out;
  for (const auto& [id, v] : volumes_)
    if (v.team == team) out.push_back(v);
  std::sort(out.begin(), out.end(), [](const Volume& a, const Volume& b) {
    return std::tie(a.created_ms, a.name) < std::tie(b.created_ms, b.name);
  });
  return out;
}

std::optional<Volume> Volumes::find(const std::string& team, const std::string& id) const {
  auto volume = find_any(id);
  if (!volume || volume->team != team) return std::nullopt;
  return volume;
}

std::optional<Volume> Volumes::find_by_name(const std::string& team,
                                            const std::string& name) const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, v] : volumes_)
    if (v.team == team && v.name == name) return v;
  return std::nullopt;
}

std::optional<Volume> Volumes::find_any(const std::string& id) const {
  std::lock_guard lock(mutex_);
  const auto it = volumes_.find(id);
  if (it == volumes_.end()) return std::nullopt;
  return it->second;
}

// Renamed aside first, so a crash halfway leaves no half volume listed.
Result<bool> Volumes::remove(const std::string& team, const std::string& id,
                             const std::function<bool(const std::string&)>& in_use) {
  fs::path trash;
  {
    std::lock_guard lock(mutex_);
    const auto it = volumes_.find(id);
    if (it == volumes_.end() || it->second.team != team) return false;
    if ((holds_.contains(id) && holds_.at(id) > 0) || in_use(id))
      return Error::with_message("volume " + it->second.name +
                                     " is mounted by a sandbox: kill the sandboxes that mount "
                                     "it first",
                                 EBUSY);
    trash = dir_ / (".trash-" + id);
    std::error_code ec;
    fs::rename(dir_ / id, trash, ec);
    if (ec) return Error{"remove volume", ec.value(), id};
    volumes_.erase(it);
  }
  std::error_code ec;
  fs::remove_all(trash, ec);  // symlinks are removed, never followed
  return true;
}

fs::path Volumes::data_dir(const std::string& id) const { return dir_ / id / "data"; }

namespace {

// Deeper than any path the content API takes (4096 bytes), so nothing it
// writes escapes the count; one fd held a level.
constexpr int kMaxWalkDepth = 4096;

// Each name is looked at from its directory's fd, never by a full path: a
// sandbox that swaps a directory for a link to a host dir mid-walk cannot
// make the daemon stat host files (their sizes would show in usedBytes).
uint64_t bytes_under(int dir_fd, int depth) {
  uint64_t bytes = 0;
  std::vector<std::string> dirs;  // entered once the listing is closed
  {
    UniqueFd listing(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    DIR* dir = listing.valid() ? ::fdopendir(listing.get()) : nullptr;
    if (dir == nullptr) return 0;
    (void)listing.release();
    while (const dirent* d = ::readdir(dir)) {
      const std::string_view name = d->d_name;
      struct stat st {};
      if (name == "." || name == ".." ||
          ::fstatat(dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      if (S_ISREG(st.st_mode)) bytes += static_cast<uint64_t>(st.st_blocks) * 512;
      if (S_ISDIR(st.st_mode) && depth < kMaxWalkDepth) dirs.emplace_back(name);
    }
    ::closedir(dir);
  }
  for (const std::string& name : dirs) {
    UniqueFd child(::openat(dir_fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (child.valid()) bytes += bytes_under(child.get(), depth + 1);
  }
  return bytes;
}

}  // namespace

// Links are counted as themselves, never followed.
uint64_t Volumes::usage_bytes(const std::string& id) const {
  UniqueFd root(::open(data_dir(id).c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  return root.valid() ? bytes_under(root.get(), 0) : 0;
}

Result<std::vector<VolumeMountRow>> Volumes::resolve(const std::string& team,
                                                     const std::vector<VolumeMountRequest>& mounts,
                                                     uint64_t quota_bytes) const {
  std::vector<VolumeMountRow> rows;
  if (!mounts.empty() && !mounts_allowed_)
    return Error::with_message(
        "volume mounts are off on this daemon: a volume's size quota is not enforced on a "
        "sandbox's own writes, so its operator turns them on knowingly with \"volumes\": "
        "{\"mounts\": true} in config.json",
        kErrBadInput);
  for (const auto& mount : mounts) {
    auto volume = find_by_name(team, mount.name);
    if (!volume)
      return Error::with_message(
          "volume " + mount.name + " not found (abx volume create " + mount.name + ")", ENOENT);
    if (quota_bytes) {
      const uint64_t used = usage_bytes(volume->id);
      if (used > quota_bytes)
        return Error::with_message("quota: volume " + mount.name + " holds " +
                                       std::to_string(used >> 20) + " MB, past its " +
                                       std::to_string(quota_bytes >> 20) +
                                       " MB quota: remove files from it (Volume.remove) first",
                                   kErrQuota);
    }
    rows.push_back({volume->id, volume->name, mount.path});
  }
  return rows;
}

Result<std::vector<runtime::BindMount>> Volumes::binds_of(
    const std::vector<VolumeMountRow>& rows) const {
  std::vector<runtime::BindMount> binds;
  for (const auto& row : rows) {
    if (!find_any(row.id)) return Error::with_message("volume " + row.name + " is gone", ENOENT);
    binds.push_back({data_dir(row.id), row.path});
  }
  return binds;
}

void Volumes::hold(const std::string& id) {
  std::lock_guard lock(mutex_);
  ++holds_[id];
}

void Volumes::release(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (--holds_[id] <= 0) holds_.erase(id);
}

bool Volumes::held(const std::string& id) const {
  std::lock_guard lock(mutex_);
  return holds_.contains(id);
}

Result<bool> load_volume_mounts_allowed(const std::filesystem::path& config_file) {
  std::ifstream in(config_file);
  if (!in) return false;
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (!doc.is_object() || !doc.contains("volumes")) return false;
  const nlohmann::json& volumes = doc["volumes"];
  const auto bad = [&](const std::string& why) {
    return Error::with_message("config " + config_file.string() + ": volumes" + why, kErrBadInput);
  };
  if (!volumes.is_object()) return bad(" must be an object");
  for (const auto& [key, value] : volumes.items())
    if (key != "mounts") return bad("." + key + ": unknown (volumes takes mounts)");
  if (!volumes.contains("mounts")) return false;
  if (!volumes["mounts"].is_boolean()) return bad(".mounts must be true or false");
  return volumes["mounts"].get<bool>();
}

}  // namespace abx::daemon
