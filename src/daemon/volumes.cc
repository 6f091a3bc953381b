#include "daemon/volumes.h"

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
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
#include "runtime/loop_image.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxName = 63;
constexpr uint32_t kUser = 1000;                   // who owns a new volume's top directory
constexpr uint64_t kMinImage = uint64_t{1} << 20;  // below this mkfs.ext4 makes nothing

namespace loop_image = runtime::loop_image;

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
  volumes->no_images_ = loop_image::unavailable_reason();
  if (Status s = volumes->load(); !s) return s.error();
  return volumes;
}

// A volume whose meta.json is unreadable is left alone (and not listed, nor
// mounted); the leftovers of a create or a remove that was cut short go.
// Image volumes are mounted, or found mounted by the daemon before this one
// (killed, its mounts outlived it): adopted, never attached twice.
Status Volumes::load() {
  std::error_code ec;
  std::vector<fs::path> leftovers;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(".trash-") || name.starts_with(".new-")) {
      leftovers.push_back(entry.path());
      continue;
    }
    std::ifstream in(entry.path() / "meta.json");
    std::stringstream text;
    text << in.rdbuf();
    auto doc = json_text::parse_object(text.str());
    if (!doc) continue;
    auto volume = from_json(*doc);
    if (!volume || volume->id != name) continue;
    volume->image = fs::exists(entry.path() / "image", ec);
    volumes_[volume->id] = std::move(*volume);
  }
  if (ec) return Error{"read volumes dir", ec.value(), dir_.string()};
  for (const fs::path& path : leftovers) {
    // Never a walk into a mounted filesystem: that would empty a volume.
    if (Status s = loop_image::unmount(path / "data"); !s) {
      spdlog::warn("volumes: {}", s.error().message());
      continue;
    }
    fs::remove_all(path, ec);
  }
  for (const auto& [id, volume] : volumes_)
    if (volume.image)
      if (Status s = mount(id); !s) spdlog::warn("volumes: {}", s.error().message());
  return {};
}

Status Volumes::mount(const std::string& id) const {
  if (!no_images_.empty())
    return Error::with_message("volume " + id + " is an image, and " + no_images_, ENODEV);
  std::lock_guard lock(mounting_);
  return loop_image::mount(dir_ / id / "image", dir_ / id / "data");
}

// A quota of none: as large as the data dir's filesystem (sparse, so only
// what is written takes room).
uint64_t Volumes::image_size(uint64_t size_bytes) const {
  if (size_bytes == 0) {
    struct statvfs st {};
    if (::statvfs(dir_.c_str(), &st) == 0) size_bytes = uint64_t{st.f_blocks} * st.f_frsize;
  }
  return std::max(size_bytes, kMinImage);
}

bool Volumes::mountable(const Volume& volume) const {
  if (mounts_configured_) return *mounts_configured_;
  return volume.image && no_images_.empty();
}

// Made under .new-<id> (a start removes it, were the daemon killed
// meanwhile) and renamed into place whole, then mounted.
Result<Volume> Volumes::create(const std::string& team, const std::string& name,
                               uint64_t size_bytes) {
  if (Status s = check_volume_name(name); !s) return s.error();
  std::lock_guard lock(mutex_);
  for (const auto& [id, v] : volumes_)
    if (v.team == team && v.name == name)
      return Error::with_message("volume " + name + " already exists", EEXIST);
  Volume volume{new_id(), name, team, "vt_" + ids::random_hex(24), unix_ms(), no_images_.empty()};
  const fs::path made = dir_ / (".new-" + volume.id);
  const fs::path home = dir_ / volume.id;
  const fs::path data = made / "data";
  if (::mkdir(made.c_str(), 0700) != 0) return Error::from_errno("create volume", made.string());
  auto undo = [&](const fs::path& at, Error error) {
    std::error_code ec;
    if (loop_image::unmount(at / "data")) fs::remove_all(at, ec);
    return error;
  };
  if (::mkdir(data.c_str(), 0755) != 0)
    return undo(made, Error::from_errno("create volume", data.string()));
  const uid_t uid = owners_.host_uid(kUser);
  const gid_t gid = owners_.host_gid(kUser);
  if (volume.image) {
    if (Status s = loop_image::make_ext4(made / "image", image_size(size_bytes), uid, gid); !s)
      return undo(made, s.error());
  } else if (::chown(data.c_str(), uid, gid) != 0) {
    return undo(made, Error::from_errno("chown volume", data.string()));
  }
  if (Status s = replace_file(made / "meta.json", to_json(volume).dump(), 0600, true); !s)
    return undo(made, s.error());
  if (::rename(made.c_str(), home.c_str()) != 0)
    return undo(made, Error::from_errno("create volume", home.string()));
  if (volume.image) {
    if (Status s = mount(volume.id); !s) return undo(home, s.error());
    ::rmdir((home / "data" / "lost+found").c_str());  // e2fsck makes it again if it needs it
  }
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
    // Lazily: a content call still reading keeps its files until it ends.
    if (Status s = loop_image::unmount(dir_ / id / "data"); !s) return s.error();
    std::error_code ec;
    fs::rename(dir_ / id, trash, ec);
    if (ec) return Error{"remove volume", ec.value(), id};
    volumes_.erase(it);
  }
  std::error_code ec;
  fs::remove_all(trash, ec);  // symlinks are removed, never followed
  return true;
}

Result<fs::path> Volumes::data_dir(const std::string& id) const {
  const fs::path data = dir_ / id / "data";
  const auto volume = find_any(id);
  if (!volume) return Error::with_message("volume " + id + " is gone", ENOENT);
  if (!volume->image || loop_image::is_mount_point(data)) return data;
  if (Status s = mount(id); !s)
    return Error::with_message(
        "volume " + volume->name + " is not mounted on the host: " + s.error().message(), ENODEV);
  return data;
}

Result<UniqueFd> Volumes::open_root(const std::string& id) const {
  auto data = data_dir(id);
  if (!data) return data.error();
  UniqueFd root(::open(data->c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!root.valid()) return Error::from_errno("open volume", id);
  struct stat mine {
  }, home{};
  const auto volume = find_any(id);
  if (volume && volume->image &&
      (::fstat(root.get(), &mine) != 0 || ::stat((dir_ / id).c_str(), &home) != 0 ||
       mine.st_dev == home.st_dev))
    return Error::with_message("volume " + volume->name + " is being remounted: try again", EAGAIN);
  return root;
}

Status Volumes::fit(const std::string& id, uint64_t size_bytes) const {
  const auto volume = find_any(id);
  if (!volume || !volume->image || size_bytes == 0) return {};
  auto data = data_dir(id);
  if (!data) return data.error();
  std::lock_guard lock(mounting_);
  return loop_image::grow(dir_ / id / "image", *data, size_bytes);
}

void Volumes::unmount_all() const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, volume] : volumes_)
    if (volume.image)
      if (Status s = loop_image::unmount(dir_ / id / "data"); !s)
        spdlog::warn("volumes: {}", s.error().message());
}

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
  auto root = open_root(id);
  return root ? bytes_under(root->get(), 0) : 0;
}

Result<std::vector<VolumeMountRow>> Volumes::resolve(const std::string& team,
                                                     const std::vector<VolumeMountRequest>& mounts,
                                                     uint64_t quota_bytes) const {
  std::vector<VolumeMountRow> rows;
  if (!mounts.empty() && mounts_configured_ == false)
    return Error::with_message(
        "volume mounts are off on this daemon (its config.json says \"volumes\": {\"mounts\": "
        "false}); its operator turns them on with \"volumes\": {\"mounts\": true}",
        kErrBadInput);
  for (const auto& mount : mounts) {
    auto volume = find_by_name(team, mount.name);
    if (!volume)
      return Error::with_message(
          "volume " + mount.name + " not found (abx volume create " + mount.name + ")", ENOENT);
    if (!mountable(*volume))
      return Error::with_message(
          "volume mounts are off on this daemon: volume " + mount.name + " is a plain directory (" +
              (no_images_.empty() ? "made before volumes were size-limited images"
                                  : no_images_ + ", so no loop-mounted image") +
              "), whose size quota is not enforced on a sandbox's own writes, so its operator "
              "turns them on knowingly with \"volumes\": {\"mounts\": true} in config.json",
          kErrBadInput);
    // A quota raised since the image was made: the image follows it.
    if (Status s = fit(volume->id, quota_bytes); !s)
      spdlog::warn("volumes: grow {}: {}", volume->id, s.error().message());
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
    auto data = data_dir(row.id);
    if (!data) return data.error();
    binds.push_back({*data, row.path});
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

Result<std::optional<bool>> load_volume_mounts(const std::filesystem::path& config_file) {
  std::ifstream in(config_file);
  if (!in) return std::optional<bool>();
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (!doc.is_object() || !doc.contains("volumes")) return std::optional<bool>();
  const nlohmann::json& volumes = doc["volumes"];
  const auto bad = [&](const std::string& why) {
    return Error::with_message("config " + config_file.string() + ": volumes" + why, kErrBadInput);
  };
  if (!volumes.is_object()) return bad(" must be an object");
  for (const auto& [key, value] : volumes.items())
    if (key != "mounts") return bad("." + key + ": unknown (volumes takes mounts)");
  if (!volumes.contains("mounts")) return std::optional<bool>();
  if (!volumes["mounts"].is_boolean()) return bad(".mounts must be true or false");
  return std::optional<bool>(volumes["mounts"].get<bool>());
}

}  // namespace abx::daemon
