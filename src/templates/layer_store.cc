#include "templates/layer_store.h"

#include <sys/stat.h>

#include "templates/tree_ops.h"

namespace abx::templates {
namespace {

constexpr const char* kStagingPrefix = ".staging-";

}  // namespace

bool LayerStore::has(const std::string& id) const {
  std::error_code ec;
  return fs::is_directory(path(id), ec);
}

Result<fs::path> LayerStore::begin(const std::string& id) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Error{"mkdir", ec.value(), dir_.string()};
  const fs::path staging = dir_ / (kStagingPrefix + id);
  if (auto st = tree::remove_tree(staging); !st) return st.error();
  if (auto st = tree::make_dir(staging, 0755); !st) return st.error();
  return staging;
}

Status LayerStore::commit(const std::string& id, const fs::path& staged_root,
                          const fs::path& staging) const {
  const fs::path old = dir_ / (kStagingPrefix + id + ".old");
  if (auto st = tree::remove_tree(old); !st) return st;
  if (::rename(path(id).c_str(), old.c_str()) != 0 && errno != ENOENT)
    return Error::from_errno("layer rename", path(id).string());
  if (::rename(staged_root.c_str(), path(id).c_str()) != 0)
    return Error::from_errno("layer rename", path(id).string());
  if (auto st = tree::remove_tree(old); !st) return st;
  return tree::remove_tree(staging);
}

void LayerStore::sweep_staging() const {
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().starts_with(kStagingPrefix))
      (void)tree::remove_tree(it->path());
  }
}

void LayerStore::collect_garbage(const std::set<std::string>& referenced) const {
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string id = it->path().filename().string();
    if (!id.starts_with(kStagingPrefix) && !referenced.count(id))
      (void)tree::remove_tree(it->path());
  }
}

}  // namespace abx::templates
