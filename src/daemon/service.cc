#include "daemon/service.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <thread>

#include "common/clock.h"
#include "common/ids.h"
#include "daemon/sandbox_adoption.h"
#include "daemon/sandbox_trust.h"
#include "daemon/start_command.h"
#include "interp/interp.h"
#include "interp/prestart.h"
#include "runtime/sandbox_users.h"

namespace abx::daemon {

namespace net = boost::asio;

int64_t now_ms() { return unix_ms_now(); }

SandboxRow LiveSandbox::snapshot() const {
  std::lock_guard lock(const_cast<std::mutex&>(mutex));
  return row;
}

Service::Service(net::io_context& ioc, BlockingPool& pool, runtime::Runtime& runtime,
                 templates::TemplateStore& templates, Store& store, Tenancy tenancy)
    : ioc_(ioc),
      pool_(pool),
      runtime_(runtime),
      templates_(templates),
      store_(store),
      tenancy_(std::move(tenancy)),
      host_cores_(std::max(1u, std::thread::hardware_concurrency())) {
  runtime_.on_stopped(this);
}

Service::~Service() {
  runtime_.on_stopped(nullptr);
  // The daemon stops, not its sandboxes: their contexts stay for the next one.
  std::lock_guard lock(mutex_);
  for (auto& [id, live] : live_) {
    std::lock_guard live_lock(live->mutex);
    if (live->interpreter) live->interpreter->leave_running();
  }
}

// The runtime calls from its own thread; the registry is changed on ours.
void Service::sandbox_stopped(const std::string& id, const std::string& reason) {
  net::post(ioc_, [this, id, reason] { on_sandbox_stopped(id, reason); });
}

namespace {
// Stopped sandboxes remembered for their "why"; older ones answer "not found".
constexpr size_t kMaxStopped = 1024;
}  // namespace

// The sandbox is dead: it leaves the registry at once (kill() destroys what
// is left of it: cgroups, state dir, row), and calls to it hear why.
void Service::on_sandbox_stopped(const std::string& id, const std::string& reason) {
  auto live = find(id);
  if (!live) return;  // being killed already, or one of the runtime's pool
  StoppedSandbox stopped{live->snapshot(), reason};
  spdlog::warn("{}", stopped.message());
  {
    std::lock_guard lock(mutex_);
    if (stopped_.insert_or_assign(id, std::move(stopped)).second) stopped_order_.push_back(id);
    while (stopped_order_.size() > kMaxStopped) {
      stopped_.erase(stopped_order_.front());
      stopped_order_.pop_front();
    }
  }
  net::co_spawn(ioc_, kill_stopped(id, "stopped: " + reason), net::detached);
}

// Owns the id: kill() takes it by reference, and runs after our caller returned.
http::Task<void> Service::kill_stopped(std::string id, std::string why) {
  co_await kill(id, std::move(why));
}

std::shared_ptr<const SandboxLog> Service::ended_log(const Caller& caller,
                                                     const std::string& id) const {
  return ended_logs_.find(id, caller.team, now_ms());
}

std::optional<StoppedSandbox> Service::stopped(const std::string& id) const {
  std::lock_guard lock(mutex_);
  const auto it = stopped_.find(id);
  if (it == stopped_.end()) return std::nullopt;
  return it->second;
}

std::shared_ptr<LiveSandbox> Service::make_live(SandboxRow row,
                                                std::unique_ptr<runtime::Sandbox> sb) {
  auto live = std::make_shared<LiveSandbox>();
  live->sandbox = std::shared_ptr<runtime::Sandbox>(std::move(sb));
  const size_t output_buffer = row.output_buffer_bytes ? row.output_buffer_bytes : output_buffer_;
  live->processes = std::make_shared<ProcessTable>(
      ioc_, pool_, live->sandbox, live->log, output_buffer, output_buffer_, in_band_commands_);
  live->in_band_contexts = in_band_commands_;
  live->log->set_journal(tenancy_.events->open(row.id, row.owner));
  live->row = std::move(row);
  live->accounted_ms = now_ms();
  live->metrics = std::make_shared<MetricsHistory>(live->row.started_at_ms);
  return live;
}

namespace {
// The `ended` event of a sandbox that ends at a daemon restart, never having
// been live in this daemon: its record (and the ended sandboxes' list) says why.
void record_end(const EventJournals& events, const SandboxRow& row, const std::string& why) {
  if (auto journal = events.open(row.id, row.owner)) {
    journal->record("lifecycle", "ended", {{"why", why}, {"key", ""}});
    journal->close();
  }
}
}  // namespace

void Service::restore() {
  auto rows = store_.load_all();
  if (!rows) {
    spdlog::error("state store: {}", rows.error().message());
    return;
  }
  std::vector<std::string> live_ids;
  for (SandboxRow& row : *rows) {
    if (row.fs_paused) {  // nothing runs: it waits for its cold boot
      std::lock_guard lock(mutex_);
      dormant_[row.id] = row;
      continue;
    }
    if (!row.paused && row.end_at_ms <= now_ms()) {
      spdlog::info("sandbox {}: expired while the daemon was down; destroying", row.id);
      record_end(*tenancy_.events, row, "timeout reached while the daemon was down: killed");
      destroy_now(row, nullptr);
      continue;
    }
    auto adopted = runtime_.adopt(row.record);
    if (!adopted) {
      spdlog::warn("sandbox {}: cannot adopt ({}); destroying", row.id, adopted.error().message());
      record_end(*tenancy_.events, row, "not adopted after a daemon restart: killed");
      destroy_now(row, nullptr);
      continue;
    }
    // Adopted thawed (see Runtime::adopt): its policy goes back in place with
    // the sandbox's help (its CA files), then a paused one is paused again.
    auto settings = parse_network(row.network, row.allow_internet_access);
    if (settings) {
      if (Status s = apply_network(**adopted, *settings, &row); !s)
        spdlog::warn("sandbox {}: network policy: {}", row.id, s.error().message());
    }
    if (row.paused) {
      if (Status s = (*adopted)->set_frozen(true); !s) {
        spdlog::warn("sandbox {}: cannot pause it again ({}); it runs", row.id,
                     s.error().message());
        row.paused = false;
        row.end_at_ms = now_ms() + int64_t{kDefaultTimeoutSec} * 1000;
      }
    }
    live_ids.push_back(row.id);
    const std::string id = row.id;
    auto live = make_live(std::move(row), std::move(adopted.value()));
    live->log->add("info",
                   "the daemon restarted and adopted the sandbox (earlier log lines "
                   "went with the old daemon)");
    live->log->event("lifecycle", "adopted", {{"paused", live->row.paused}});
    // A paused one's commands are found again when it resumes (sandbox_pause.cc).
    if (!live->row.paused) adopt_running_processes(*live);
    std::lock_guard lock(mutex_);
    live_[id] = std::move(live);
  }
  runtime_.sweep_orphans(live_ids);
  tenancy_.events->sweep(live_ids);  // flight records of sandboxes ended over a day ago
  // Sandboxes that ended while the daemon was down may have been the last
  // ones on a force-removed template.
  release_retired_templates();
  collect_snapshot_layers();
  spdlog::info("adopted {} live sandbox(es)", live_ids.size());
}

void Service::release_retired_templates() {
  std::set<std::string> templates_in_use;
  for (const SandboxRow& other : list()) templates_in_use.insert(other.template_id);
  for (const SandboxRow& other : dormant_rows()) templates_in_use.insert(other.template_id);
  for (const Snapshot& snapshot : snapshots().all())
    templates_in_use.insert(snapshot.root.template_id);
  templates_.release_retired(templates_in_use);
}

Status Service::apply_network(runtime::Sandbox& sandbox, const NetworkSettings& settings,
                              SandboxRow* row) {
  const egress::Policy policy = settings.effective();
  std::vector<std::string> trusted;
  if (!policy.rules.empty() && !egress_ca_.empty()) trusted.push_back(egress_ca_);
  if (!extra_ca_.empty()) trusted.push_back(extra_ca_);
  if (!trusted.empty() && sandbox.address() != 0) {
    // Without them the sandbox's TLS to those hosts fails, closed; the rest works.
    if (Status s = install_trusted_cas(sandbox, trusted); !s)
      spdlog::warn("sandbox {}: cannot add CAs to its trust store: {}", sandbox.record().id,
                   s.error().message());
    for (auto& [name, value] : egress_ca_env()) row->env_vars.emplace(name, value);
  }
  Status s = sandbox.set_egress(policy);
  if (!s && s.error().errnum == ENOSYS) return {};  // loopback only: nothing to open
  if (s && egress_changed_) egress_changed_(sandbox.address());
  return s;
}

void Service::destroy_now(const SandboxRow& row, const std::shared_ptr<LiveSandbox>& live) {
  if (live) {
    std::lock_guard lock(live->mutex);
    live->interpreter.reset();  // its contexts live in the sandbox: stop them first
  }
  if (Status s = runtime_.destroy(row.record); !s) {
    spdlog::warn("sandbox {}: destroy: {}", row.id, s.error().message());
  }
  if (row.record.net_address && egress_changed_) egress_changed_(row.record.net_address);
  if (Status s = store_.remove(row.id); !s) {
    spdlog::warn("sandbox {}: {}", row.id, s.error().message());
  }
}

namespace {

// A runtime step that failed is the daemon's problem (500), unless the disk is full or
// the runtime cannot do what was asked where it runs (EOPNOTSUPP: the caller can change it).
Error runtime_failure(const Error& error) {
  const bool kept = error.errnum == ENOSPC || error.errnum == EDQUOT || error.errnum == EOPNOTSUPP;
  return Error::with_message(error.message(), kept ? error.errnum : EIO);
}

// Hands a quota ticket back however create() ends.
struct QuotaTicket {
  Quotas& quotas;
  uint64_t ticket;
  ~QuotaTicket() { quotas.settle(ticket); }
};

Demand demand_of(const CreateSandboxRequest& request) {
  return Demand{request.memory_mb.value_or(0), request.disk_size_mb.value_or(0),
                request.timeout_sec};
}

}  // namespace

// The template's Env (under the request's), WorkingDir and User.
Status Service::apply_template_defaults(const runtime::Sandbox& sandbox,
                                        const templates::ProcessDefaults& defaults,
                                        SandboxRow& row) {
  for (const auto& [key, value] : defaults.env) row.env_vars.try_emplace(key, value);
  row.default_cwd = defaults.workdir;
  if (defaults.user.empty()) return {};
  auto user = runtime::lookup_user(sandbox, defaults.user);
  if (!user) {
    return Error::with_message("template " + row.template_id + ": " + user.error().message(),
                               kErrBadInput);
  }
  row.default_user = user->name;
  row.default_uid = user->uid;
  row.default_gid = user->gid;
  row.default_home = user->home;
  return {};
}

// The first line of a sandbox's log.
static std::string created_text(const SandboxRow& row, int timeout_sec) {
  const std::string asked = row.alias.empty() || row.alias == row.template_id
                                ? row.template_id
                                : row.alias + " (" + row.template_id + ")";
  return "sandbox created from template " + asked + "; timeout " + std::to_string(timeout_sec) +
         " s, " + std::to_string(row.cpu_count) + " CPU, " + std::to_string(row.memory_mb) +
         " MiB memory";
}

// "name:tag" (E2B's tags, e2b_tags.h): the template, when the tag names its
// build; a tag of a build a later one replaced names nothing to start.
static Result<std::string> tagged_template(const E2bTags& tags, const std::string& asked,
                                           const std::string& team) {
  auto target = E2bTags::split(asked);
  if (!target) return target.error();
  auto found = tags.find(team, *target);
  if (!found)
    return Error::with_message("template '" + target->name + "' has no tag '" + target->tag + "'",
                               kErrBadInput);
  if (!found->latest)
    return Error::with_message("tag '" + target->tag + "' of template '" + target->name +
                                   "' names build " + found->build_id +
                                   ", which a later build replaced (only a template's latest "
                                   "build is kept)",
                               kErrBadInput);
  return target->name;
}

http::Task<Result<SandboxRow>> Service::create(CreateSandboxRequest request, const Caller& caller) {
  std::optional<RootSource> source;
  if (SnapshotStore::is_snapshot_id(request.template_name)) {
    auto snapshot = snapshots().find_for(caller.team, request.template_name);
    if (!snapshot)
      co_return Error::with_message(
          "snapshot " + request.template_name + " not found: `abx snapshot list` shows your team's",
          ENOENT);
    source = std::move(snapshot->root);
  } else if (request.template_name.find(':') != std::string::npos) {
    auto name = tagged_template(e2b_builds().tags(), request.template_name, caller.team);
    if (!name) co_return name.error();
    request.template_name = *name;
  }
  co_return co_await create_on(std::move(request), caller, std::move(source));
}

namespace {

// The template's (or a snapshot's) answer to "which template is this".
Result<std::string> template_of(templates::TemplateStore& templates,
                                const CreateSandboxRequest& request, const Caller& caller) {
  // Another team's template creates like an unknown one, and the error names
  // no template the caller may not see.
  auto resolved = templates.resolve_for(caller.team, request.template_name);
  if (!resolved) return Error::with_message(resolved.error().message(), kErrBadInput);
  if (!request.wait_for_build && !templates.is_built(*resolved)) {
    return Error::with_message("template '" + *resolved + "' " + kNotBuiltYet +
                                   "; build it with `abx template build " + *resolved + "`",
                               EBUSY);
  }
  return resolved;
}

// A sandbox's network policy for its flight record: what was asked for,
// never a header value or proxy password (NetworkSettings::shown).
nlohmann::json shown_network(const SandboxRow& row) {
  auto settings = parse_network(row.network, row.allow_internet_access);
  return settings ? settings->shown() : nlohmann::json::object();
}

// What the row keeps of its root, so a snapshot of it needs no template.
void remember_root(SandboxRow& row, const runtime::RootfsSpec& rootfs,
                   const std::optional<RootSource>& source,
                   const templates::ProcessDefaults& defaults) {
  row.allow_setid = rootfs.allow_setid;
  row.template_env = defaults.env;
  row.template_binds.clear();
  for (const auto& bind : rootfs.read_only_binds)
    row.template_binds.emplace_back(bind.host_path.string(), bind.sandbox_path.string());
  if (source) {
    row.template_layers = source->template_layers;
    row.snapshot_layers = source->snapshot_layers;
    return;
  }
  row.template_layers.clear();
  for (const auto& layer : rootfs.lower_layers) row.template_layers.push_back(layer.string());
}

}  // namespace

http::Task<Result<SandboxRow>> Service::create_on(CreateSandboxRequest request,
                                                  const Caller& caller,
                                                  std::optional<RootSource> source) {
  auto resolved =
      source ? Result<std::string>(source->template_id) : template_of(templates_, request, caller);
  if (!resolved) co_return resolved.error();
  if (Status s = secrets().check_rules(caller.team, request.network.policy.rules); !s)
    co_return s.error();
  auto admitted = quotas().admit_create(caller.team, demand_of(request), [this] { return list(); });
  if (!admitted) co_return admitted.error();
  const QuotaTicket ticket{quotas(), *admitted};
  SandboxRow row;
  row.template_id = *resolved;
  row.alias = request.template_name;
  row.owner = caller.team;
  row.auto_pause = request.auto_pause;
  row.output_buffer_bytes = request.output_buffer_bytes.value_or(0);
  row.auto_pause_memory = request.auto_pause_memory;
  row.auto_resume = request.auto_resume;
  row.metadata = std::move(request.metadata);
  row.env_vars = std::move(request.env_vars);
  row.allow_internet_access = request.allow_internet_access;
  row.network = request.network.stored;
  if (request.secure) row.access_token = ids::random_hex(24);
  if (!request.allow_public_traffic) row.traffic_access_token = ids::random_hex(24);
  // Held until the row is stored (or the create failed): no delete between.
  VolumeHolds holds(volumes());

  runtime::SandboxSpec spec;  // no id: the runtime picks one, possibly from its warm pool
  // On a snapshot, an id of ours: a pooled sandbox would hold its layers for nobody.
  if (source) spec.id = ids::sandbox_id();
  if (request.cpu_count) spec.limits.cpu_millicores = *request.cpu_count * 1000;
  if (request.memory_mb) spec.limits.memory_bytes = uint64_t{*request.memory_mb} << 20;
  if (request.disk_size_mb) spec.limits.disk_bytes = uint64_t{*request.disk_size_mb} << 20;

  std::optional<Error> failure;
  std::unique_ptr<runtime::Sandbox> sandbox;
  std::shared_ptr<void> warm_up;
  templates::ProcessDefaults defaults;
  co_await pool_.run([&] {
    auto mounts = volumes().resolve(caller.team, request.volume_mounts,
                                    quotas().quota_for(caller.team).max_volume_mb << 20);
    if (!mounts) {
      failure = mounts.error();
      return;
    }
    for (const auto& mount : *mounts) holds.add(mount.id);
    auto binds = volumes().binds_of(*mounts);
    if (!binds) {
      failure = binds.error();
      return;
    }
    row.volume_mounts = std::move(*mounts);
    auto rootfs =
        source ? rootfs_of(*source, &defaults) : templates_.rootfs(row.template_id, &defaults);
    if (!rootfs) {
      failure = Error::with_message(rootfs.error().message(),
                                    source ? rootfs.error().errnum : kErrBadInput);
      return;
    }
    spec.rootfs = std::move(rootfs.value());
    remember_root(row, spec.rootfs, source, defaults);
    spec.rootfs.volumes = std::move(*binds);
    // Pooled sandboxes of such templates come with Python's context running.
    if (interp::worth_prestarting(spec.rootfs)) spec.warm_up = interp::kWarmUpPython;
    auto created = runtime_.create(spec);
    if (!created) {
      failure = runtime_failure(created.error());
      return;
    }
    Status s = apply_template_defaults(**created, defaults, row);
    if (s) s = apply_network(**created, request.network, &row);
    if (!s) {
      (void)runtime_.destroy((*created)->record());
      failure = s.error();
      return;
    }
    warm_up = (*created)->take_warm_up();
    sandbox = std::move(created.value());
  });
  if (failure) co_return *failure;

  const auto& limits = sandbox->record().limits;
  row.id = sandbox->record().id;
  row.record = sandbox->record();
  row.cpu_count = std::max(1u, limits.cpu_millicores / 1000);
  row.memory_mb = static_cast<uint32_t>(limits.memory_bytes >> 20);
  row.disk_size_mb = static_cast<uint32_t>(limits.disk_bytes >> 20);
  row.started_at_ms = now_ms();
  row.end_at_ms = row.started_at_ms + int64_t{request.timeout_sec} * 1000;
  if (Status s = store_.put(row); !s) {
    co_await pool_.run([&] { (void)runtime_.destroy(row.record); });
    co_return s.error();
  }
  auto live = make_live(row, std::move(sandbox));
  live->log->add("info", created_text(row, request.timeout_sec));
  live->log->event("lifecycle", "created",
                   {{"key", caller.key_id},
                    {"template", row.template_id},
                    {"asked", row.alias},
                    {"cpuCount", row.cpu_count},
                    {"memoryMB", row.memory_mb},
                    {"diskSizeMB", row.disk_size_mb},
                    {"timeoutS", request.timeout_sec},
                    {"allowInternetAccess", row.allow_internet_access},
                    {"network", shown_network(row)}});
  live->prestarted = std::static_pointer_cast<interp::Prestarted>(std::move(warm_up));
  usage().note_create(row.owner, row.started_at_ms);
  {
    std::lock_guard lock(mutex_);
    live_[row.id] = live;
  }
  spdlog::info("sandbox {} created from {} for team {} ({}s)", row.id, row.template_id, row.owner,
               request.timeout_sec);
  if (!defaults.start_cmd.empty()) {
    const StartCommand command{row.template_id, defaults.start_cmd, defaults.ready_cmd,
                               ready_timeout()};
    const Status started = co_await start_and_wait_ready(live, command, pool_);
    if (!started) {
      spdlog::info("sandbox {}: {}", row.id, started.error().message());
      co_await kill(row.id);  // nothing of it stays: processes, cgroup, row
      co_return started.error();
    }
  }
  co_return row;
}

void Service::start_long(std::function<void()> work) { pool_.post_long(std::move(work)); }

// Not a coroutine itself: it hands back the pool's task, so `work` has one owner.
http::Task<void> Service::run_long(std::function<void()> work) {
  return pool_.run_long(std::move(work));
}

namespace {
// The `ended` event's fields: why, and which key (id and name) ended it, if
// one did: the record tells who, even after the key is revoked.
nlohmann::json ended_fields(const std::string& why, const std::string& key_id,
                            const ApiKeys& keys) {
  nlohmann::json out = {{"why", why}, {"key", key_id}};
  if (key_id.empty()) return out;
  for (const ApiKeyRecord& key : keys.list())
    if (key.id == key_id) out["keyName"] = key.name;
  return out;
}
}  // namespace

http::Task<bool> Service::kill(const std::string& id, std::string why, std::string by_key) {
  std::shared_ptr<LiveSandbox> live;
  {
    std::lock_guard lock(mutex_);
    const auto it = live_.find(id);
    if (it != live_.end()) {
      live = it->second;
      live_.erase(it);
    }
  }
  if (!live) {
    bool killed = false;
    co_await pool_.run([&] { killed = kill_dormant(id); });
    co_return killed;
  }
  // No pause from here on; a paused one is thawed, so that stopping its
  // interpreter and its init is answered.
  co_await pool_.run([&] { mark_dying(*live); });
  const SandboxRow row = live->snapshot();
  live->log->add("info", why);
  live->log->event("lifecycle", "ended", ended_fields(why, by_key, keys()));
  live->log->close_journal();
  {
    std::lock_guard lock(live->mutex);
    const int64_t now = now_ms();
    usage().add_seconds(row.owner, static_cast<double>(now - live->accounted_ms) / 1000, now);
    live->accounted_ms = now;
  }
  co_await pool_.run([&] {
    destroy_now(row, live);
    release_retired_templates();
    collect_snapshot_layers();
  });
  ended_logs_.keep(id, row.owner, live->log, now_ms());
  spdlog::info("sandbox {} destroyed", id);
  co_return true;
}

http::Task<Result<SandboxRow>> Service::update_network(std::shared_ptr<LiveSandbox> live,
                                                       std::string body) {
  if (live->updating_network.exchange(true))
    co_return Error::with_message(
        "another network update of this sandbox is running: send the next when it has answered",
        EBUSY);
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag = false; }
  } done{live->updating_network};
  const SandboxRow before = live->snapshot();
  auto current = parse_network(before.network, before.allow_internet_access);
  if (!current) co_return current.error();
  auto updated = parse_network_update(body, *current);
  if (!updated) co_return updated.error();
  if (Status s = secrets().check_rules(before.owner, updated->policy.rules); !s)
    co_return s.error();
  Status applied;
  SandboxRow changed = before;
  co_await pool_.run([&] { applied = apply_network(*live->sandbox, *updated, &changed); });
  if (!applied) co_return runtime_failure(applied.error());
  SandboxRow row;
  {
    std::lock_guard lock(live->mutex);
    live->row.network = updated->stored;
    live->row.allow_internet_access = updated->allow_internet_access;
    live->row.env_vars = changed.env_vars;
    row = live->row;
  }
  if (Status s = store_.put(row); !s) spdlog::warn("sandbox {}: {}", row.id, s.error().message());
  spdlog::info("sandbox {}: network policy replaced", row.id);
  live->log->event("lifecycle", "network updated", {{"network", shown_network(row)}});
  co_return row;
}

Result<SandboxRow> Service::set_timeout(const std::string& id, int seconds, bool extend_only) {
  auto live = find(id);
  if (!live) return Error::with_message("sandbox " + id + " not found", ENOENT);
  if (Status s = quotas().check_timeout(live->snapshot().owner, seconds); !s) return s.error();
  SandboxRow row;
  int64_t before = 0;
  {
    std::lock_guard lock(live->mutex);
    before = live->row.end_at_ms;
    const int64_t end = now_ms() + int64_t{seconds} * 1000;
    if (!extend_only || end > live->row.end_at_ms) live->row.end_at_ms = end;
    row = live->row;
  }
  // Acknowledged means saved: a deadline only in memory would be lost on the
  // next restart (the sandbox would die at the old one).
  if (Status s = store_.put(row); !s) {
    spdlog::warn("sandbox {}: {}", id, s.error().message());
    std::lock_guard lock(live->mutex);
    if (live->row.end_at_ms == row.end_at_ms) live->row.end_at_ms = before;
    return s.error();
  }
  live->log->add("info", "timeout set: the sandbox ends " +
                             std::to_string((row.end_at_ms - now_ms() + 999) / 1000) +
                             " s from now");
  live->log->event("lifecycle", "timeout set", {{"endAt", row.end_at_ms}});
  return row;
}

std::string Service::owner_at(uint32_t address) const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, live] : live_)
    if (live->sandbox->address() == address) return live->snapshot().owner;
  return {};
}

std::shared_ptr<SandboxLog> Service::log_at(uint32_t address) const {
  std::lock_guard lock(mutex_);
  for (const auto& [id, live] : live_)
    if (live->sandbox->address() == address) return live->log;
  return nullptr;
}

std::vector<SandboxRow> Service::list() const {
  std::vector<std::shared_ptr<LiveSandbox>> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, live] : live_) all.push_back(live);
  }
  std::vector<SandboxRow> rows;
  for (const auto& live : all) rows.push_back(live->snapshot());
  return rows;
}

std::shared_ptr<LiveSandbox> Service::find(const std::string& id) const {
  std::lock_guard lock(mutex_);
  const auto it = live_.find(id);
  return it == live_.end() ? nullptr : it->second;
}

std::vector<SandboxRow> Service::list_for(const Caller& caller) const {
  std::vector<SandboxRow> rows = list();
  for (SandboxRow& row : dormant_rows()) rows.push_back(std::move(row));
  std::erase_if(rows, [&](const SandboxRow& row) { return row.owner != caller.team; });
  return rows;
}

std::shared_ptr<LiveSandbox> Service::find_for(const Caller& caller, const std::string& id) const {
  auto live = find(id);
  if (!live) return nullptr;
  std::lock_guard lock(live->mutex);
  return live->row.owner == caller.team ? live : nullptr;
}

// Adds each live sandbox's seconds since the last call to its team's usage;
// with `sample`, also reads its cgroups once for its memory peak and its
// metrics history. Only live sandboxes: a killed one is sampled no more.
void Service::account_usage(bool sample) {
  std::vector<std::shared_ptr<LiveSandbox>> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, live] : live_) all.push_back(live);
  }
  for (const auto& live : all) {
    std::optional<runtime::Sandbox::Usage> reading;
    if (sample) reading = live->sandbox->usage();
    const int64_t now = now_ms();
    std::lock_guard lock(live->mutex);
    if (!live->row.paused)  // paused time is not sandbox time
      usage().add_seconds(live->row.owner, static_cast<double>(now - live->accounted_ms) / 1000,
                          now);
    live->accounted_ms = now;
    if (!reading) continue;
    usage().note_memory(live->row.owner, reading->memory_bytes, now);
    live->metrics->record(now, *reading, live->row.cpu_count);
  }
}

// Kills it, or pauses it when created with autoPause (killed if that fails).
http::Task<void> Service::on_timeout(const SandboxRow& row) {
  if (row.auto_pause) {
    if (auto live = find(row.id)) {
      // if/else, not ?: g++ 12 runs both co_awaits of a conditional expression.
      Result<bool> paused = false;
      if (row.auto_pause_memory) paused = co_await pause(live);
      if (!row.auto_pause_memory) paused = co_await pause_fs_only(live);
      if (paused) {
        spdlog::info("sandbox {}: timeout reached; paused (autoPause)", row.id);
        co_return;
      }
      spdlog::warn("sandbox {}: timeout reached, cannot pause ({}); killing", row.id,
                   paused.error().message());
    }
  }
  spdlog::info("sandbox {}: timeout reached", row.id);
  co_await kill(row.id, "timeout reached: killed");
}

void Service::start_ttl() { net::co_spawn(ioc_, ttl_loop(), net::detached); }

// One sweep a second: simple, and no timer to move when a TTL changes.
// Usage is accounted, and the sandboxes sampled, every 5 sweeps; ended
// sandboxes' flight records past their retention are removed every hour.
http::Task<void> Service::ttl_loop() {
  constexpr auto kSweepsPerSample =
      static_cast<uint64_t>(MetricsHistory::kSampleInterval / std::chrono::seconds(1));
  constexpr uint64_t kSweepsPerRetention = 3600;  // flight records past retention: hourly
  net::steady_timer tick(ioc_);
  for (uint64_t sweep = 1;; ++sweep) {
    tick.expires_after(std::chrono::seconds(1));
    co_await tick.async_wait(net::use_awaitable);
    if (sweep % kSweepsPerRetention == 0) co_await pool_.run([this] { sweep_event_records(); });
    if (sweep % kSweepsPerSample == 0) {
      co_await pool_.run([this] {
        account_usage(true);
        if (Status s = usage().flush(); !s) spdlog::warn("usage: {}", s.error().message());
      });
    }
    for (const SandboxRow& row : dormant_rows()) {
      if (row.paused_at_ms + kMaxPausedMs > now_ms()) continue;
      spdlog::info("sandbox {}: paused for {} days; killing", row.id, kMaxPausedMs / 86400000);
      co_await kill(row.id);
    }
    for (const SandboxRow& row : list()) {
      if (row.paused && row.paused_at_ms + kMaxPausedMs <= now_ms()) {
        spdlog::info("sandbox {}: paused for {} days; killing", row.id, kMaxPausedMs / 86400000);
        co_await kill(row.id, "paused for 30 days: killed");
      }
      if (row.paused || row.end_at_ms > now_ms()) continue;
      co_await on_timeout(row);
    }
  }
}

}  // namespace abx::daemon
