#include "daemon/snapshots.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/ids.h"

namespace abx::daemon {
namespace {

using json = nlohmann::json;

constexpr const char* kKind = "snapshot";
constexpr const char* kIdPrefix = "snap";
constexpr const char* kStagingPrefix = ".staging-";

json root_to_json(const RootSource& root) {
  return {{"template_id", root.template_id},
          {"alias", root.alias},
          {"template_layers", root.template_layers},
          {"template_binds", root.template_binds},
          {"allow_setid", root.allow_setid},
          {"snapshot_layers", root.snapshot_layers},
          {"template_env", root.template_env},
          {"default_user",
           {{"name", root.default_user},
            {"uid", root.default_uid},
            {"gid", root.default_gid},
            {"home", root.default_home},
            {"cwd", root.default_cwd}}}};
}

RootSource root_from_json(const json& j) {
  RootSource root;
  root.template_id = j.at("template_id").get<std::string>();
  root.alias = j.value("alias", root.template_id);
  root.template_layers = j.at("template_layers").get<std::vector<std::string>>();
  root.template_binds =
      j.at("template_binds").get<std::vector<std::pair<std::string, std::string>>>();
  root.allow_setid = j.value("allow_setid", false);
  root.snapshot_layers = j.at("snapshot_layers").get<std::vector<std::string>>();
  root.template_env = j.value("template_env", std::map<std::string, std::string>{});
  const json& user = j.at("default_user");
  root.default_user = user.value("name", "");
  root.default_uid = user.value("uid", 1000u);
  root.default_gid = user.value("gid", 1000u);
  root.default_home = user.value("home", "");
  root.default_cwd = user.value("cwd", "");
  return root;
}

json snapshot_to_json(const Snapshot& s) {
  return {{"name", s.name},
          {"owner", s.owner},
          {"sandbox_id", s.sandbox_id},
          {"created_ms", s.created_ms},
          {"size_bytes", s.size_bytes},
          {"root", root_to_json(s.root)}};
}

Snapshot snapshot_from_json(const std::string& id, const json& j) {
  Snapshot s;
  s.id = id;
  s.name = j.value("name", "");
  s.owner = j.at("owner").get<std::string>();
  s.sandbox_id = j.value("sandbox_id", "");
  s.created_ms = j.value("created_ms", int64_t{0});
  s.size_bytes = j.value("size_bytes", uint64_t{0});
  s.root = root_from_json(j.at("root"));
  return s;
}

// Layer ids are ours ("l" + hex): anything else in the dir is not a layer.
bool is_layer_id(const std::string& name) {
  if (name.size() < 2 || name[0] != 'l') return false;
  return name.find_first_not_of("0123456789abcdef", 1) == std::string::npos;
}

}  // namespace

SnapshotStore::SnapshotStore(fs::path dir, Store& store) : dir_(std::move(dir)), store_(store) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  ::chmod(dir_.c_str(), 0700);
  for (const auto& entry : fs::directory_iterator(dir_, ec))
    if (entry.path().filename().string().rfind(kStagingPrefix, 0) == 0)
      fs::remove_all(entry.path(), ec);
  auto records = store_.load_records(kKind);
  if (!records) {
    spdlog::error("snapshots: {}", records.error().message());
    return;
  }
  for (const auto& record : *records) {
    try {
      snapshots_[record.name] = snapshot_from_json(record.name, record.data);
    } catch (const json::exception& e) {
      spdlog::warn("snapshot {}: cannot decode ({}); skipped", record.name, e.what());
    }
  }
}

bool SnapshotStore::is_snapshot_id(const std::string& id) {
  return id.size() > 4 && id.rfind(kIdPrefix, 0) == 0 &&
         id.find_first_not_of("0123456789abcdef", 4) == std::string::npos;
}

std::string SnapshotStore::new_snapshot_id() { return kIdPrefix + ids::random_hex(10); }

Result<SnapshotStore::Staged> SnapshotStore::stage() {
  Staged staged{"l" + ids::random_hex(10), {}};
  staged.path = dir_ / (kStagingPrefix + staged.layer);
  if (::mkdir(staged.path.c_str(), 0700) != 0)
    return Error::from_errno("make snapshot staging dir", staged.path.string());
  return staged;
}

Status SnapshotStore::commit(const Staged& staged) {
  const fs::path to = layer_path(staged.layer);
  if (::rename(staged.path.c_str(), to.c_str()) != 0)
    return Error::from_errno("commit snapshot layer", to.string());
  std::lock_guard lock(mutex_);
  pending_.insert(staged.layer);
  return {};
}

void SnapshotStore::settle(const std::string& layer) {
  std::lock_guard lock(mutex_);
  if (const auto it = pending_.find(layer); it != pending_.end()) pending_.erase(it);
}

void SnapshotStore::discard(const Staged& staged) {
  std::error_code ec;
  fs::remove_all(staged.path, ec);
  if (ec) spdlog::warn("snapshot staging {}: {}", staged.path.string(), ec.message());
}

Status SnapshotStore::put(const Snapshot& snapshot) {
  if (Status s = store_.put_record(kKind, snapshot.id, snapshot_to_json(snapshot)); !s) return s;
  std::lock_guard lock(mutex_);
  snapshots_[snapshot.id] = snapshot;
  return {};
}

std::optional<Snapshot> SnapshotStore::find_for(const std::string& team,
                                                const std::string& id) const {
  std::lock_guard lock(mutex_);
  const auto it = snapshots_.find(id);
  if (it == snapshots_.end() || it->second.owner != team) return std::nullopt;
  return it->second;
}

std::vector<Snapshot> SnapshotStore::list_for(const std::string& team) const {
  std::vector<Snapshot> out = all();
  std::erase_if(out, [&](const Snapshot& s) { return s.owner != team; });
  return out;
}

std::vector<Snapshot> SnapshotStore::all() const {
  std::lock_guard lock(mutex_);
  std::vector<Snapshot> out;
  for (const auto& [id, snapshot] : snapshots_) out.push_back(snapshot);
  return out;
}

Result<bool> SnapshotStore::remove_for(const std::string& team, const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = snapshots_.find(id);
  if (it == snapshots_.end() || it->second.owner != team) return false;
  if (Status s = store_.remove_record(kKind, id); !s) return s.error();
  snapshots_.erase(it);
  return true;
}

std::pair<size_t, uint64_t> SnapshotStore::usage_of(const std::string& team) const {
  std::lock_guard lock(mutex_);
  size_t count = 0;
  uint64_t bytes = 0;
  for (const auto& [id, snapshot] : snapshots_) {
    if (snapshot.owner != team) continue;
    ++count;
    bytes += snapshot.size_bytes;
  }
  return {count, bytes};
}

void SnapshotStore::collect_garbage(const std::set<std::string>& in_use) {
  std::set<std::string> keep = in_use;
  {
    std::lock_guard lock(mutex_);
    keep.insert(pending_.begin(), pending_.end());
    for (const auto& [id, snapshot] : snapshots_)
      keep.insert(snapshot.root.snapshot_layers.begin(), snapshot.root.snapshot_layers.end());
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_layer_id(name) || keep.count(name)) continue;
    std::error_code removing;
    fs::remove_all(entry.path(), removing);
    if (removing) spdlog::warn("snapshot layer {}: {}", name, removing.message());
  }
}

}  // namespace abx::daemon
