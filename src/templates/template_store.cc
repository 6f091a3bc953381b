#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <fstream>
#include <mutex>

#include "common/unique_fd.h"
#include "templates/catalog.h"
#include "templates/debian_build.h"
#include "templates/host_template.h"
#include "templates/layer.h"
#include "templates/spec.h"
#include "templates/templates.h"
#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHost = "host";
constexpr const char* kBase = "base";
constexpr const char* kCodeInterpreter = "code-interpreter-v1";
constexpr const char* kBuildingPrefix = ".building-";
constexpr const char* kTrashPrefix = ".trash-";
constexpr size_t kMaxNameLength = 63;

// Until the Debian base passes the whole suite here, `base` serves the host
// template unless a Debian base has been built (`abx template build base`).
constexpr bool kBuildBaseOnFirstUse = false;

// Serialises builds between threads; the flock below does the same between
// processes sharing a data dir.
std::mutex build_mutex;

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    const bool ok = std::islower(static_cast<unsigned char>(c)) ||
                    std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

Result<UniqueFd> lock_builds(const fs::path& templates_dir, bool wait) {
  const fs::path lock_path = templates_dir / ".build.lock";
  UniqueFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("template lock", lock_path.string());
  if (::flock(fd.get(), LOCK_EX | (wait ? 0 : LOCK_NB)) != 0)
    return Error::from_errno("template lock", lock_path.string());
  return fd;
}

Status ensure_templates_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"mkdir", ec.value(), dir.string()};
  // Sandbox root (an unprivileged host uid) looks up the layers through here.
  if (::chmod(dir.c_str(), 0755) != 0) return Error::from_errno("chmod", dir.string());
  return {};
}

host::Owners owners_from(const runtime::Runtime& runtime) {
  return {runtime.host_uid(0), runtime.host_gid(0), runtime.host_uid(1000), runtime.host_gid(1000)};
}

// Builds next to the final dir and renames it into place, so a template dir
// that exists is complete; a build interrupted by a crash leaves only the
// temp dir, which the next daemon start removes.
Status build_host_once(const fs::path& templates_dir, const runtime::Runtime& runtime) {
  const fs::path ready = templates_dir / kHost;
  if (fs::is_directory(ready)) return {};
  std::lock_guard guard(build_mutex);
  if (auto st = ensure_templates_dir(templates_dir); !st) return st;
  auto lock = lock_builds(templates_dir, true);
  if (!lock) return lock.error();
  if (fs::is_directory(ready)) return {};
  const fs::path building = templates_dir / (std::string(kBuildingPrefix) + kHost);
  if (auto st = tree::remove_tree(building); !st) return st;
  if (auto st = host::build(building, owners_from(runtime)); !st) {
    (void)tree::remove_tree(building);
    return st;
  }
  if (::rename(building.c_str(), ready.c_str()) != 0) {
    return Error::from_errno("template rename", ready.string());
  }
  return {};
}

TemplateInfo info_from(const TemplateMeta& meta) {
  TemplateInfo info;
  info.name = meta.name;
  info.resolved = meta.name;
  info.source = meta.source;
  info.size_bytes = meta.size_bytes;
  info.created_ms = meta.created_ms;
  info.env = meta.env;
  info.workdir = meta.workdir;
  info.user = meta.user;
  return info;
}

TemplateInfo host_info() {
  return {kHost, kHost, "read-only views of the host's system directories"};
}

// An alias entry: what `name` serves while it is not built itself.
TemplateInfo alias_info(const std::string& name, const std::string& target, bool buildable) {
  TemplateInfo info{name, target, "alias of " + target};
  if (buildable)
    info.source += "; `abx template build " + name + "` builds it from templates/" + name;
  info.built = false;
  return info;
}

// Moves `dir` aside, then deletes it: a template dir is either complete or gone.
Status discard(const fs::path& dir) {
  const fs::path trash = dir.parent_path() / (kTrashPrefix + dir.filename().string());
  if (auto st = tree::remove_tree(trash); !st) return st;
  if (::rename(dir.c_str(), trash.c_str()) != 0 && errno != ENOENT) {
    return Error::from_errno("template rename", dir.string());
  }
  return tree::remove_tree(trash);
}

void sweep_interrupted(const fs::path& templates_dir) {
  std::error_code ec;
  if (!fs::is_directory(templates_dir, ec)) return;
  auto lock = lock_builds(templates_dir, false);
  if (!lock) return;  // another process is building: its temp dirs are live
  for (fs::directory_iterator it(templates_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(kBuildingPrefix) || name.starts_with(kTrashPrefix)) {
      (void)tree::remove_tree(it->path());
    }
  }
}

class LogFile {
 public:
  explicit LogFile(const fs::path& path) : out_(path, std::ios::trunc) {}
  void line(const std::string& text) { out_ << text << '\n' << std::flush; }

 private:
  std::ofstream out_;
};

}  // namespace

TemplateStore::TemplateStore(std::filesystem::path data_dir, const runtime::Runtime& runtime)
    : dir_(std::move(data_dir) / "templates"), runtime_(runtime) {
  sweep_interrupted(dir_);
}

Result<runtime::RootfsSpec> TemplateStore::rootfs(const std::string& name) {
  auto id = resolve(name);
  if (!id) return id.error();
  if (*id == kHost) {
    if (auto st = build_host_once(dir_, runtime_); !st) return st.error();
    return host::rootfs_spec(dir_ / kHost);
  }
  if (!fs::exists(dir_ / *id / "meta.json")) {
    auto built = build(*id, {}, [](const std::string&) {});
    if (!built) return built.error();
  }
  const fs::path rootfs = dir_ / *id / "rootfs";
  runtime::RootfsSpec spec;
  spec.lower_layers = {rootfs};
  return spec;
}

Result<std::string> TemplateStore::resolve(const std::string& name) const {
  if (name == kHost) return std::string(kHost);
  if (valid_name(name) && fs::exists(dir_ / name / "meta.json")) return name;
  if (name == kCodeInterpreter) return resolve(kBase);
  if (name == kBase) return std::string(kBuildBaseOnFirstUse ? kBase : kHost);
  std::string names;
  for (const auto& info : list()) names += (names.empty() ? "" : ", ") + info.name;
  return Error{"template", ENOENT, "unknown template '" + name + "'; known: " + names};
}

std::vector<TemplateInfo> TemplateStore::list() const {
  std::vector<TemplateInfo> out;
  for (const char* name : {kBase, kCodeInterpreter}) {
    auto info = inspect(name);
    if (info) out.push_back(*info);
  }
  out.push_back(host_info());
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == kBase || name == kCodeInterpreter || !valid_name(name)) continue;
    if (auto meta = read_meta(it->path())) out.push_back(info_from(*meta));
  }
  return out;
}

Result<TemplateInfo> TemplateStore::inspect(const std::string& name) const {
  if (name == kHost) return host_info();
  if (valid_name(name)) {
    if (auto meta = read_meta(dir_ / name)) return info_from(*meta);
  }
  if (name == kBase || name == kCodeInterpreter) {
    auto target = resolve(name);
    if (!target) return target.error();
    return alias_info(name, *target, has_spec(name));
  }
  return Error{"template", ENOENT, "no template named '" + name + "'; see `abx template list`"};
}

std::filesystem::path TemplateStore::log_path(const std::string& name) const {
  return dir_ / (name + ".log");
}

Result<TemplateInfo> TemplateStore::build(const std::string& name, const BuildOptions& options,
                                          const BuildProgressFn& progress) {
  if (!valid_name(name) || name == kHost) {
    return Error{"template build", EINVAL,
                 "'" + name + "' cannot be built: names are [a-z0-9._-], and host is built in"};
  }
  auto spec = load_spec(name);
  if (!spec) return spec.error();
  const bool existed = fs::exists(dir_ / name / "meta.json");
  std::lock_guard guard(build_mutex);
  if (auto st = ensure_templates_dir(dir_); !st) return st.error();
  auto lock = lock_builds(dir_, true);
  if (!lock) return lock.error();
  // Another request built it while this one waited: that build is the answer.
  if (!existed && !options.no_cache && fs::exists(dir_ / name / "meta.json")) return inspect(name);
  LogFile log(log_path(name));
  const auto both = [&](const std::string& line) {
    log.line(line);
    progress(line);
  };
  both("step: building " + name + " (spec " + spec->hash + ", log " + log_path(name).string() +
       ")");
  auto tar = debian_rootfs_tar(
      *spec, options.no_cache, [&](const std::string& l) { log.line(l); }, both);
  if (!tar) {
    log.line("failed: " + tar.error().message());
    return tar.error();
  }
  const fs::path staging = dir_ / (kBuildingPrefix + name);
  auto made = [&]() -> Status {
    if (auto st = tree::remove_tree(staging); !st) return st;
    if (auto st = tree::make_dir(staging, 0755); !st) return st;
    if (auto st = tree::make_dir(staging / "rootfs", 0755); !st) return st;
    both("step: extracting " + tar->string());
    const IdShift shift{runtime_.host_uid(0), runtime_.host_gid(0)};
    auto stats =
        apply_layer(*tar, fs::canonical(staging / "rootfs"), shift, [&](const LayerStats& s) {
          both("extracted: " + std::to_string(s.entries) + " files, " +
               std::to_string(s.bytes >> 20) + " MiB");
        });
    if (!stats) return stats.error();
    TemplateMeta meta;
    meta.name = name;
    meta.source = "mmdebstrap " + spec->suite + " (templates/" + name + ")";
    meta.created_ms = unix_ms_now();
    meta.size_bytes = disk_usage(staging / "rootfs");
    meta.spec_hash = spec->hash;
    if (auto st = write_meta(staging, meta); !st) return st;
    if (auto st = discard(dir_ / name); !st) return st;
    if (::rename(staging.c_str(), (dir_ / name).c_str()) != 0)
      return Error::from_errno("template rename", (dir_ / name).string());
    return {};
  }();
  if (!made) {
    (void)tree::remove_tree(staging);
    log.line("failed: " + made.error().message());
    return made.error();
  }
  auto info = inspect(name);
  if (info) both("done: " + name + ", " + std::to_string(info->size_bytes >> 20) + " MiB");
  return info;
}

Status TemplateStore::remove(const std::string& name) {
  if (name == kHost) return Error{"template rm", EPERM, "host is built in and cannot be removed"};
  if (!valid_name(name) || !fs::exists(dir_ / name / "meta.json")) {
    return Error{"template rm", ENOENT, "no stored template named '" + name + "'"};
  }
  std::lock_guard guard(build_mutex);
  auto lock = lock_builds(dir_, true);
  if (!lock) return lock.error();
  return discard(dir_ / name);
}

}  // namespace abx::templates
