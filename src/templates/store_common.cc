#include "templates/store_common.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "common/nearest_word.h"

namespace abx::templates::store {
namespace {

constexpr size_t kMaxNameLength = 63;

// Serialises builds between threads; the flock does the same between
// processes sharing a templates dir.
std::mutex build_mutex;

}  // namespace

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

namespace {

// A team name as api_keys.cc accepts it: 1-63 of a-z, 0-9, '_' and '-'.
bool valid_team(std::string_view team) {
  if (team.empty() || team.size() > 63) return false;
  for (char c : team) {
    const bool ok = std::islower(static_cast<unsigned char>(c)) ||
                    std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool valid_id(const std::string& id) {
  const auto at = id.rfind('@');
  if (at == std::string::npos) return valid_name(id);
  return valid_name(id.substr(0, at)) && valid_team(std::string_view(id).substr(at + 1));
}

Error unbuildable_name(const std::string& name) {
  return Error{"template build", EINVAL,
               "'" + name + "' cannot be a template name: use [a-z0-9._-] (host is built in)"};
}

Status check_buildable_name(const std::string& id) {
  if (valid_id(id) && id != kHost) return {};
  return unbuildable_name(id);
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
  if (::chmod(dir.c_str(), 0755) != 0) return Error::from_errno("chmod", dir.string());
  return {};
}

Result<std::unique_ptr<BuildLock>> take_build_lock(const fs::path& templates_dir) {
  auto lock = std::make_unique<BuildLock>();
  lock->threads = std::unique_lock<std::mutex>(build_mutex);
  if (auto st = ensure_templates_dir(templates_dir); !st) return st.error();
  auto file = lock_builds(templates_dir, true);
  if (!file) return file.error();
  lock->file = std::move(*file);
  return lock;
}

std::unique_ptr<BuildLock> try_build_lock(const fs::path& templates_dir) {
  auto lock = std::make_unique<BuildLock>();
  lock->threads = std::unique_lock<std::mutex>(build_mutex, std::try_to_lock);
  if (!lock->threads.owns_lock()) return nullptr;
  auto file = lock_builds(templates_dir, false);
  if (!file) return nullptr;
  lock->file = std::move(*file);
  return lock;
}

Error unknown_template(const std::string& name, const std::string& known) {
  std::vector<std::string> names;
  for (size_t start = 0; start < known.size();) {
    const size_t comma = std::min(known.find(", ", start), known.size());
    names.push_back(known.substr(start, comma - start));
    start = comma + 2;
  }
  const auto guess = nearest_word(name, names);
  // The whole message: the errno's "No such file or directory" would read as a missing
  // file, not as a name the user mistyped.
  return Error::with_message("unknown template '" + name + "'; " +
                                 (guess ? "did you mean " + *guess + "? " : "") + "known: " + known,
                             ENOENT);
}

std::string mib_text(uint64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

}  // namespace abx::templates::store
