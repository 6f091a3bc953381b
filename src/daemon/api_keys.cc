#include "daemon/api_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "common/fd_io.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/unique_fd.h"

namespace abx::daemon {

namespace fs = std::filesystem;

fs::path extra_keys_path(const fs::path& data_dir) { return data_dir / "api_keys"; }

Result<std::vector<ApiKeyEntry>> read_extra_keys(const fs::path& file) {
  std::vector<ApiKeyEntry> out;
  auto text = read_file(file);  // close-on-exec, unlike an ifstream
  if (!text) {
    if (text.error().errnum == ENOENT) return out;
    return text.error();
  }
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    ApiKeyEntry entry;
    if (!(fields >> entry.key >> entry.created_unix)) continue;
    std::getline(fields >> std::ws, entry.name);
    out.push_back(std::move(entry));
  }
  return out;
}

Result<ApiKeyEntry> create_extra_key(const fs::path& file, const std::string& name) {
  if (name.find('\n') != std::string::npos) {
    return Error{"create api key", EINVAL, "the name must be one line"};
  }
  ApiKeyEntry entry{ids::api_key(),
                    std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count(),
                    name};
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("open api keys file", file.string());
  const std::string line =
      entry.key + " " + std::to_string(entry.created_unix) + " " + entry.name + "\n";
  if (Status s = write_all(fd.get(), line, "write api keys file", file.string()); !s)
    return s.error();
  if (::fsync(fd.get()) != 0) {
    return Error::from_errno("write api keys file", file.string());
  }
  return entry;
}

ApiKeys::ApiKeys(std::string primary, fs::path extra_file)
    : primary_(std::move(primary)), extra_file_(std::move(extra_file)) {}

namespace {

// Names a key in logs and rows without revealing it.
std::string key_id_of(const std::string& key) { return "key-" + sha256_hex(key).substr(0, 12); }

}  // namespace

// Every key is the default team's for now; the daemon's own key is its admin.
std::optional<Caller> ApiKeys::caller_for(const std::string& key) {
  if (key.empty()) return std::nullopt;
  if (key == primary_) return Caller{Caller::Kind::api_key, key_id_of(key), kDefaultTeam, true, {}};
  struct stat st {};
  const bool exists = ::stat(extra_file_.c_str(), &st) == 0;
  std::lock_guard lock(mutex_);
  const std::timespec mtime = exists ? st.st_mtim : std::timespec{};
  if (mtime.tv_sec != seen_mtime_.tv_sec || mtime.tv_nsec != seen_mtime_.tv_nsec) {
    seen_mtime_ = mtime;
    extra_.clear();
    if (auto entries = read_extra_keys(extra_file_)) {
      for (const auto& entry : *entries) extra_.insert(entry.key);
    }
  }
  if (!extra_.count(key)) return std::nullopt;
  return Caller{Caller::Kind::api_key, key_id_of(key), kDefaultTeam, false, {}};
}

}  // namespace abx::daemon
