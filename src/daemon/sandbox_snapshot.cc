// Snapshots of a sandbox's filesystem, fork, and the filesystem-only pause
// (E2B's keep_memory=False). All three copy the sandbox's writable layer
// into a snapshot layer (daemon/snapshots.h) while it is frozen; sandboxes
// then start on that layer over their template's. No process or memory is
// carried over: a filesystem-paused sandbox cold boots on resume.
#include <fcntl.h>
#include <spdlog/spdlog.h>

#include "common/clock.h"
#include "common/ids.h"
#include "daemon/service.h"
#include "interp/interp.h"

namespace abx::daemon {
namespace {

constexpr int kMaxForkCount = 20;  // what E2B's SDKs send at most
constexpr size_t kMaxRuntimeLayers = 127;
constexpr size_t kMaxSnapshotName = 128;

// A copy the caller made too big is theirs to fix; anything else but a full
// disk or a sandbox that cannot be copied is the daemon's problem.
Error copy_failure(const Error& error) {
  if (error.errnum == E2BIG)
    return Error::with_message("cannot snapshot the sandbox: its writable layer has " +
                                   error.detail + "; remove files and retry",
                               kErrBadInput);
  const bool kept = error.errnum == ENOSPC || error.errnum == EDQUOT ||
                    error.errnum == EOPNOTSUPP || error.errnum == ESRCH;
  return Error::with_message(error.message(), kept ? error.errnum : EIO);
}

Status check_name(const std::string& name) {
  if (name.size() > kMaxSnapshotName)
    return Error::with_message("snapshot name: at most 128 characters", kErrBadInput);
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("._:/-").find(c) == std::string_view::npos)
      return Error::with_message(
          "snapshot name: letters, digits and . _ : / - only (got '" + name + "')", kErrBadInput);
  return {};
}

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// A new sandbox like `row`: its settings, limits and lifecycle; its own id,
// tokens and network.
CreateSandboxRequest request_like(const SandboxRow& row, int timeout_sec) {
  CreateSandboxRequest request;
  request.template_name = row.alias;
  request.timeout_sec = timeout_sec;
  request.metadata = row.metadata;
  request.env_vars = row.env_vars;
  request.secure = !row.access_token.empty();
  request.allow_internet_access = row.allow_internet_access;
  if (auto settings = parse_network(row.network, row.allow_internet_access))
    request.network = std::move(*settings);
  request.allow_public_traffic = row.traffic_access_token.empty();
  request.cpu_count = row.cpu_count;
  request.memory_mb = row.memory_mb;
  if (row.output_buffer_bytes) request.output_buffer_bytes = row.output_buffer_bytes;
  request.disk_size_mb = row.disk_size_mb;
  request.auto_pause = row.auto_pause;
  request.auto_pause_memory = row.auto_pause_memory;
  request.auto_resume = row.auto_resume;
  // A fork mounts the same volumes (shared, as E2B's are).
  for (const auto& mount : row.volume_mounts)
    request.volume_mounts.push_back({mount.name, mount.path});
  return request;
}

}  // namespace

RootSource Service::root_source_of(const SandboxRow& row) const {
  RootSource root;
  root.template_id = row.template_id;
  root.alias = row.alias;
  root.template_layers = row.template_layers;
  root.template_binds = row.template_binds;
  root.allow_setid = row.allow_setid;
  root.snapshot_layers = row.snapshot_layers;
  root.template_env = row.template_env;
  root.default_user = row.default_user;
  root.default_uid = row.default_uid;
  root.default_gid = row.default_gid;
  root.default_home = row.default_home;
  root.default_cwd = row.default_cwd;
  return root;
}

Result<runtime::RootfsSpec> Service::rootfs_of(const RootSource& source,
                                               templates::ProcessDefaults* defaults) const {
  if (source.template_layers.empty())
    return Error::with_message(
        "the sandbox was made before abx kept what its root is made of: "
        "it cannot be snapshotted or resumed from disk",
        EOPNOTSUPP);
  runtime::RootfsSpec rootfs;
  for (const std::string& layer : source.snapshot_layers) {
    const fs::path path = tenancy_.snapshots->layer_path(layer);
    if (!is_dir(path))
      return Error::with_message("snapshot layer " + layer + " is gone from the data dir", ENOENT);
    rootfs.lower_layers.push_back(path);
  }
  for (const std::string& layer : source.template_layers) {
    if (!is_dir(layer))
      return Error::with_message("the layers of template " + source.template_id +
                                     " this was made on are gone (the template was rebuilt "
                                     "meanwhile); recreate it from the template",
                                 ENOENT);
    rootfs.lower_layers.emplace_back(layer);
  }
  if (rootfs.lower_layers.size() > kMaxRuntimeLayers)
    return Error::with_message(
        "more than 127 layers in all: make a template of it first "
        "(abx snapshot to-template)",
        kErrBadInput);
  for (const auto& [host, inside] : source.template_binds)
    rootfs.read_only_binds.push_back({host, inside});
  rootfs.allow_setid = source.allow_setid;
  defaults->env = source.template_env;
  defaults->workdir = source.default_cwd;
  defaults->user = source.default_user;
  return rootfs;
}

// Frozen for the copy, so the layer is one moment's; thawed after unless
// it was paused before. `then_dying`: marked dying in the same turn, so no
// pause or resume comes between the copy and the sandbox's end.
Result<Service::CopiedLayer> Service::copy_layer(LiveSandbox& live, bool then_dying) {
  const SandboxRow row = live.snapshot();
  if (row.snapshot_layers.size() + 1 > kMaxSnapshotLayers)
    return Error::with_message(
        "sandbox " + row.id + " stands on " + std::to_string(row.snapshot_layers.size()) +
            " snapshot layers already (at most " + std::to_string(kMaxSnapshotLayers) +
            "): make a template of a snapshot of it first",
        kErrBadInput);
  auto staged = snapshots().stage();
  if (!staged) return copy_failure(staged.error());
  UniqueFd into(::open(staged->path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  runtime::layer_copy::Limits limits;
  limits.max_bytes = row.record.limits.disk_bytes ? row.record.limits.disk_bytes
                                                  : uint64_t{row.disk_size_mb} << 20;
  Result<runtime::layer_copy::Copied> copied = Error{"copy", EBADF, "staging dir"};
  {
    std::lock_guard turn(live.pausing);
    if (live.dying) {
      snapshots().discard(*staged);
      return Error::with_message("sandbox " + row.id + " is being killed", ENOENT);
    }
    const bool was_frozen = live.snapshot().paused;
    Status frozen = was_frozen ? Status{} : live.sandbox->set_frozen(true);
    if (!frozen) {
      snapshots().discard(*staged);
      return copy_failure(frozen.error());
    }
    if (into.valid()) copied = live.sandbox->copy_writable_layer(into.get(), limits);
    if (!was_frozen || then_dying) {
      if (Status s = live.sandbox->set_frozen(false); !s)
        spdlog::warn("sandbox {}: thaw after snapshot: {}", row.id, s.error().message());
    }
    if (copied && then_dying) live.dying = true;
  }
  if (!copied) {
    snapshots().discard(*staged);
    return copy_failure(copied.error());
  }
  if (Status s = snapshots().commit(*staged); !s) {
    snapshots().discard(*staged);
    return copy_failure(s.error());
  }
  spdlog::info("sandbox {}: writable layer copied to snapshot layer {} ({} bytes, {} entries)",
               row.id, staged->layer, copied->bytes, copied->entries);
  return CopiedLayer{staged->layer, copied->bytes};
}

void Service::collect_snapshot_layers() {
  std::set<std::string> in_use;
  for (const SandboxRow& row : list())
    in_use.insert(row.snapshot_layers.begin(), row.snapshot_layers.end());
  for (const SandboxRow& row : dormant_rows())
    in_use.insert(row.snapshot_layers.begin(), row.snapshot_layers.end());
  snapshots().collect_garbage(in_use);
}

http::Task<Result<Snapshot>> Service::create_snapshot(std::shared_ptr<LiveSandbox> live,
                                                      std::string name) {
  if (Status s = check_name(name); !s) co_return s.error();
  const SandboxRow row = live->snapshot();
  const auto [count, bytes] = snapshots().usage_of(row.owner);
  if (Status s = quotas().check_snapshot(row.owner, count, bytes, 0); !s) co_return s.error();
  Result<CopiedLayer> layer = Error{"snapshot", EIO, {}};
  co_await pool_.run_long([&] { layer = copy_layer(*live, false); });
  if (!layer) co_return layer.error();
  const uint64_t size = layer->bytes;
  Snapshot snapshot;
  snapshot.id = SnapshotStore::new_snapshot_id();
  snapshot.name = std::move(name);
  snapshot.owner = row.owner;
  snapshot.sandbox_id = row.id;
  snapshot.created_ms = unix_ms_now();
  snapshot.size_bytes = size;
  snapshot.root = root_source_of(row);
  snapshot.root.snapshot_layers.insert(snapshot.root.snapshot_layers.begin(), layer->id);
  Status kept = quotas().check_snapshot(row.owner, count, bytes, size);
  if (kept) kept = snapshots().put(snapshot);
  snapshots().settle(layer->id);
  if (!kept) {
    co_await pool_.run([&] { collect_snapshot_layers(); });
    co_return kept.error();
  }
  live->log->add("info", "snapshot " + snapshot.id + " taken (" + std::to_string(size) + " bytes)");
  live->log->event("lifecycle", "snapshot", {{"snapshotID", snapshot.id}, {"bytes", size}});
  spdlog::info("snapshot {} of sandbox {} for team {}", snapshot.id, row.id, row.owner);
  co_return snapshot;
}

Result<bool> Service::delete_snapshot(const Caller& caller, const std::string& id) {
  auto removed = snapshots().remove_for(caller.team, id);
  if (!removed || !*removed) return removed;
  collect_snapshot_layers();
  release_retired_templates();
  spdlog::info("snapshot {} deleted", id);
  return true;
}

Result<templates::SnapshotTemplateRequest> Service::snapshot_template(
    const Caller& caller, const std::string& id, const std::string& name) const {
  const auto snapshot = tenancy_.snapshots->find_for(caller.team, id);
  if (!snapshot)
    return Error::with_message("snapshot " + id + " not found (see `abx snapshot list`)", ENOENT);
  const RootSource& root = snapshot->root;
  if (!root.template_binds.empty())
    return Error::with_message("a snapshot of a sandbox on template " + root.template_id +
                                   " cannot become a template: part of its root is the host's "
                                   "own directories",
                               EOPNOTSUPP);
  templates::SnapshotTemplateRequest request;
  request.name = name;
  request.owner = caller.team;
  request.origin = "snapshot " + id + " of sandbox " + snapshot->sandbox_id;
  for (const std::string& layer : root.snapshot_layers)
    request.snapshot_layers.emplace_back(layer, tenancy_.snapshots->layer_path(layer));
  for (const std::string& layer : root.template_layers) request.template_layers.emplace_back(layer);
  request.defaults.env = root.template_env;
  request.defaults.workdir = root.default_cwd;
  request.defaults.user = root.default_user;
  // The start command is the template's, if it is still the one the
  // snapshot's sandbox was made on.
  if (auto info = templates_.inspect(root.template_id); info && info->built) {
    request.defaults.start_cmd = info->start_cmd;
    request.defaults.ready_cmd = info->ready_cmd;
  }
  request.allow_setid = root.allow_setid;
  return request;
}

http::Task<Result<std::vector<Result<SandboxRow>>>> Service::fork(std::shared_ptr<LiveSandbox> live,
                                                                  int count, int timeout_sec,
                                                                  const Caller& caller) {
  if (count < 1 || count > kMaxForkCount)
    co_return Error::with_message("count must be an integer between 1 and 20", kErrBadInput);
  const SandboxRow row = live->snapshot();
  Result<CopiedLayer> layer = Error{"fork", EIO, {}};
  co_await pool_.run_long([&] { layer = copy_layer(*live, false); });
  if (!layer) co_return layer.error();
  RootSource source = root_source_of(row);
  source.snapshot_layers.insert(source.snapshot_layers.begin(), layer->id);
  std::vector<Result<SandboxRow>> forks;
  for (int i = 0; i < count; ++i)
    forks.push_back(co_await create_on(request_like(row, timeout_sec), caller, source));
  snapshots().settle(layer->id);
  co_await pool_.run([&] { collect_snapshot_layers(); });  // none made: the layer goes
  live->log->add("info", "forked " + std::to_string(count) + " time(s)");
  nlohmann::json children = nlohmann::json::array();
  for (const auto& fork : forks)
    if (fork) children.push_back(fork.value().id);
  live->log->event("lifecycle", "forked", {{"count", count}, {"sandboxIDs", children}});
  co_return forks;
}

http::Task<Result<bool>> Service::pause_fs_only(std::shared_ptr<LiveSandbox> live) {
  if (live->snapshot().paused) co_return false;
  Result<CopiedLayer> layer = Error{"pause", EIO, {}};
  co_await pool_.run_long([&] { layer = copy_layer(*live, true); });
  if (!layer) co_return layer.error();
  // Dying from here: the saved layer is the sandbox now.
  SandboxRow row;
  {
    std::lock_guard lock(live->mutex);
    const int64_t now = unix_ms_now();
    usage().add_seconds(live->row.owner, static_cast<double>(now - live->accounted_ms) / 1000, now);
    live->accounted_ms = now;
    row = live->row;
  }
  const runtime::SandboxRecord record = row.record;
  row.paused = true;
  row.fs_paused = true;
  row.paused_at_ms = unix_ms_now();
  row.snapshot_layers.insert(row.snapshot_layers.begin(), layer->id);
  row.record = runtime::SandboxRecord{};
  row.record.id = row.id;
  row.record.limits = record.limits;
  // Stored first: a daemon killed from here on finds it paused, and sweeps
  // the runtime's leftovers of it as an orphan.
  if (Status s = store_.put(row); !s) spdlog::warn("sandbox {}: {}", row.id, s.error().message());
  {
    std::lock_guard lock(mutex_);
    if (auto it = live_.find(row.id); it != live_.end() && it->second == live) live_.erase(it);
    dormant_[row.id] = row;
  }
  snapshots().settle(layer->id);
  co_await pool_.run([&] {
    {
      std::lock_guard lock(live->mutex);
      live->interpreter.reset();
    }
    if (Status s = runtime_.destroy(record); !s)
      spdlog::warn("sandbox {}: destroy: {}", row.id, s.error().message());
    if (record.net_address && egress_changed_) egress_changed_(record.net_address);
  });
  spdlog::info("sandbox {} paused, filesystem only", row.id);
  co_return true;
}

http::Task<Result<SandboxRow>> Service::cold_boot(const std::string& id, int seconds) {
  SandboxRow row;
  {
    std::lock_guard lock(mutex_);
    const auto it = dormant_.find(id);
    if (it == dormant_.end()) co_return Error::with_message("sandbox " + id + " not found", ENOENT);
    if (!booting_.insert(id).second)
      co_return Error::with_message("a resume of sandbox " + id + " is under way: retry", EBUSY);
    row = it->second;
  }
  struct Unmark {
    Service& service;
    const std::string& id;
    ~Unmark() {
      std::lock_guard lock(service.mutex_);
      service.booting_.erase(id);
    }
  } unmark{*this, id};
  if (Status s = quotas().check_timeout(row.owner, seconds); !s) co_return s.error();
  const Demand demand{row.memory_mb, row.disk_size_mb, seconds};
  auto admitted = quotas().admit_create(row.owner, demand, [this] { return list(); });
  if (!admitted) co_return admitted.error();
  struct Settle {
    Quotas& quotas;
    uint64_t ticket;
    ~Settle() { quotas.settle(ticket); }
  } settle{quotas(), *admitted};

  runtime::SandboxSpec spec;
  spec.id = row.id;
  spec.limits.cpu_millicores = row.cpu_count * 1000;
  spec.limits.memory_bytes = uint64_t{row.memory_mb} << 20;
  spec.limits.disk_bytes = uint64_t{row.disk_size_mb} << 20;
  std::unique_ptr<runtime::Sandbox> sandbox;
  std::optional<Error> failure;
  co_await pool_.run([&] {
    templates::ProcessDefaults defaults;
    auto rootfs = rootfs_of(root_source_of(row), &defaults);
    if (!rootfs) {
      failure = rootfs.error();
      return;
    }
    spec.rootfs = std::move(*rootfs);
    auto volumes = tenancy_.volumes->binds_of(row.volume_mounts);
    if (!volumes) {
      failure = volumes.error();
      return;
    }
    spec.rootfs.volumes = std::move(*volumes);
    auto created = runtime_.create(spec);
    if (!created) {
      failure = copy_failure(created.error());
      return;
    }
    auto settings = parse_network(row.network, row.allow_internet_access);
    Status s = settings ? apply_network(**created, *settings, &row) : Status(settings.error());
    if (!s) {
      (void)runtime_.destroy((*created)->record());
      failure = s.error();
      return;
    }
    sandbox = std::move(*created);
  });
  if (failure) co_return *failure;
  row.record = sandbox->record();
  row.paused = false;
  row.fs_paused = false;
  row.end_at_ms = unix_ms_now() + int64_t{seconds} * 1000;
  auto live = make_live(row, std::move(sandbox));
  bool killed = false;
  {
    std::lock_guard lock(mutex_);
    killed = dormant_.erase(id) == 0;  // killed while it booted
    if (!killed) live_[id] = live;
  }
  if (killed || !store_.put(row)) {
    if (!killed)
      (void)co_await kill(id);
    else
      co_await pool_.run([&] { (void)runtime_.destroy(row.record); });
    co_return Error::with_message("sandbox " + id + " not found", ENOENT);
  }
  live->log->add("info",
                 "resumed from its filesystem (a cold boot) for " + std::to_string(seconds) + " s");
  spdlog::info("sandbox {} cold-booted from its filesystem", id);
  co_return row;
}

bool Service::kill_dormant(const std::string& id) {
  {
    std::lock_guard lock(mutex_);
    if (dormant_.erase(id) == 0) return false;
  }
  if (Status s = store_.remove(id); !s) spdlog::warn("sandbox {}: {}", id, s.error().message());
  collect_snapshot_layers();
  release_retired_templates();
  spdlog::info("sandbox {} destroyed (it was paused, filesystem only)", id);
  return true;
}

std::vector<SandboxRow> Service::dormant_rows() const {
  std::lock_guard lock(mutex_);
  std::vector<SandboxRow> rows;
  for (const auto& [id, row] : dormant_) rows.push_back(row);
  return rows;
}

std::optional<SandboxRow> Service::dormant(const std::string& id) const {
  std::lock_guard lock(mutex_);
  const auto it = dormant_.find(id);
  if (it == dormant_.end()) return std::nullopt;
  return it->second;
}

std::optional<SandboxRow> Service::dormant_for(const Caller& caller, const std::string& id) const {
  auto row = dormant(id);
  if (!row || row->owner != caller.team) return std::nullopt;
  return row;
}

}  // namespace abx::daemon
