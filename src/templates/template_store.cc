#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <mutex>

#include "common/unique_fd.h"
#include "templates/host_template.h"
#include "templates/templates.h"
#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

constexpr const char* kHost = "host";

// Until the Debian-built `base` lands, every known name serves the host template.
const std::vector<TemplateInfo>& known_templates() {
  static const std::vector<TemplateInfo> known = {
      {"base", kHost, "alias of host until the Debian-built base template lands"},
      {"code-interpreter-v1", kHost, "alias of host (the name E2B's code interpreter expects)"},
      {kHost, kHost, "read-only views of the host's system directories"},
  };
  return known;
}

std::string known_names() {
  std::string names;
  for (const auto& info : known_templates()) names += (names.empty() ? "" : ", ") + info.name;
  return names;
}

// Serialises first-use builds between threads; the flock below does the same
// between processes sharing a data dir.
std::mutex build_mutex;

Result<UniqueFd> lock_builds(const fs::path& templates_dir) {
  const fs::path lock_path = templates_dir / ".build.lock";
  UniqueFd fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("template lock", lock_path.string());
  if (::flock(fd.get(), LOCK_EX) != 0)
    return Error::from_errno("template lock", lock_path.string());
  return fd;
}

Status ensure_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error{"mkdir", ec.value(), dir.string()};
  return {};
}

host::Owners owners_from(const runtime::Runtime& runtime) {
  return {runtime.host_uid(0), runtime.host_gid(0), runtime.host_uid(1000), runtime.host_gid(1000)};
}

// Builds next to the final dir and renames it into place, so a template dir
// that exists is complete; a build interrupted by a crash leaves only the
// temp dir, which the next build removes first.
Status build_host_once(const fs::path& templates_dir, const runtime::Runtime& runtime) {
  const fs::path ready = templates_dir / kHost;
  if (fs::is_directory(ready)) return {};
  std::lock_guard guard(build_mutex);
  if (auto st = ensure_dir(templates_dir); !st) return st;
  if (::chmod(templates_dir.c_str(), 0755) != 0) {
    return Error::from_errno("chmod", templates_dir.string());
  }
  auto lock = lock_builds(templates_dir);
  if (!lock) return lock.error();
  if (fs::is_directory(ready)) return {};
  const fs::path building = templates_dir / (std::string(kHost) + ".building");
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

// Overlayfs looks up lower layers with the credentials of the mounter, which
// is sandbox root, an unprivileged host uid: every dir above the template must
// let it through. A private data dir (0700) is the usual cause.
Status check_searchable_by(const fs::path& dir, uid_t sandbox_root) {
  for (fs::path path = dir;; path = path.parent_path()) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Error::from_errno("template", path.string());
    if ((st.st_mode & S_IXOTH) == 0 && st.st_uid != sandbox_root) {
      return Error{"template", EACCES,
                   path.string() + " is not searchable by sandbox root (host uid " +
                       std::to_string(sandbox_root) + "); run: chmod o+x " + path.string()};
    }
    if (path == path.parent_path()) return {};
  }
}

}  // namespace

TemplateStore::TemplateStore(std::filesystem::path data_dir, const runtime::Runtime& runtime)
    : dir_(std::move(data_dir) / "templates"), runtime_(runtime) {}

Result<runtime::RootfsSpec> TemplateStore::rootfs(const std::string& name) {
  auto id = resolve(name);
  if (!id) return id.error();
  if (auto st = build_host_once(dir_, runtime_); !st) return st.error();
  if (auto st = check_searchable_by(dir_ / kHost, runtime_.host_uid(0)); !st) return st.error();
  return host::rootfs_spec(dir_ / kHost);
}

Result<std::string> TemplateStore::resolve(const std::string& name) const {
  for (const auto& info : known_templates()) {
    if (info.name == name) return info.resolved;
  }
  return Error{"template", ENOENT, "unknown template '" + name + "'; known: " + known_names()};
}

std::vector<TemplateInfo> TemplateStore::list() const { return known_templates(); }

}  // namespace abx::templates
