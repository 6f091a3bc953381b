// The core the routes hand typed requests to: live sandboxes (registry),
// their TTLs, the state store, and the runtime behind them.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "daemon/api_keys.h"
#include "daemon/blocking_pool.h"
#include "daemon/caller.h"
#include "daemon/control_requests.h"
#include "daemon/dashboard_sessions.h"
#include "daemon/dir_watch.h"
#include "daemon/e2b_builds.h"
#include "daemon/ended_logs.h"
#include "daemon/metrics_history.h"
#include "daemon/process_table.h"
#include "daemon/quotas.h"
#include "daemon/sandbox_log.h"
#include "daemon/sandbox_row.h"
#include "daemon/secret_store.h"
#include "daemon/snapshots.h"
#include "daemon/store.h"
#include "daemon/usage.h"
#include "daemon/volumes.h"
#include "runtime/runtime.h"
#include "templates/templates.h"

namespace abx::interp {
class Interpreter;
struct Prestarted;
}  // namespace abx::interp

namespace abx::daemon {

inline constexpr const char* kEnvdVersion = "0.6.4";
inline constexpr const char* kClientId = "6532622b";  // infra's constant; SDKs require the field

struct LiveSandbox {
  std::shared_ptr<runtime::Sandbox> sandbox;
  std::shared_ptr<ProcessTable> processes;
  std::shared_ptr<WatcherTable> watchers = std::make_shared<WatcherTable>();
  std::shared_ptr<MetricsHistory> metrics;
  std::shared_ptr<SandboxLog> log = std::make_shared<SandboxLog>();

  SandboxRow snapshot() const;

  std::mutex mutex;  // guards row.end_at_ms, interpreter, prestarted and accounted_ms
  SandboxRow row;
  int64_t accounted_ms = 0;                          // sandbox-seconds are in the usage up to here
  std::shared_ptr<interp::Interpreter> interpreter;  // created on first use
  bool in_band_contexts = false;  // its contexts' drivers start in band (--in-band-commands)
  // Python's default context, started in the warm pool; the interpreter
  // takes it on first use if the env vars are still those it started with.
  std::shared_ptr<interp::Prestarted> prestarted;
  // A network update runs (apply, then store): the next waits its turn or is
  // refused, so the policy enforced is always the one stored.
  std::atomic<bool> updating_network{false};
  // Pause and resume freeze or thaw (up to 2 s, on a pool thread): one at a
  // time. `dying` (set under it by kill) refuses any more.
  std::mutex pausing;
  bool dying = false;
};

// A sandbox whose init died on its own (killed from the host, out of
// memory): gone from the registry, remembered for a while so that calls to
// it hear why ("sandbox X stopped: its init was killed (out of memory)").
struct StoppedSandbox {
  SandboxRow row;  // as it was: owner and tokens decide who may hear why
  std::string reason;
  std::string message() const { return "sandbox " + row.id + " stopped: " + reason; }
};

// What a create with waitForBuild=false answers (409) for a template that
// would have to be built first.
inline constexpr const char* kNotBuiltYet = "is not built yet";

// Where the daemon's HTTP server listens, as a client would reach it.
struct ListenAddress {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
};

// Who may do what, and how much: keys, quotas, usage (one of each per daemon).
struct Tenancy {
  std::shared_ptr<ApiKeys> keys;
  std::shared_ptr<Quotas> quotas;
  std::shared_ptr<Usage> usage;
  std::shared_ptr<SecretStore> secrets;
  std::shared_ptr<SnapshotStore> snapshots;
  std::shared_ptr<EventJournals> events;  // each sandbox's flight record
  std::shared_ptr<Volumes> volumes;
  std::shared_ptr<E2bBuilds> e2b_builds;  // E2B's template builds and their uploads
};

class Service : private runtime::StopListener {
 public:
  Service(boost::asio::io_context& ioc, BlockingPool& pool, runtime::Runtime& runtime,
          templates::TemplateStore& templates, Store& store, Tenancy tenancy);
  ~Service() override;

  // Adopts every sandbox in the store (destroying expired or dead ones), then
  // sweeps the runtime's orphans. Call once before serving.
  void restore();
  // Starts the TTL sweep on the io_context.
  void start_ttl();
  // GET /abx/v1/info: whether pause can checkpoint to disk, and why not.
  runtime::CheckpointSupport checkpoint_support() const { return runtime_.checkpoint_support(); }

  // The new sandbox belongs to the caller's team, if its quotas and the
  // host's caps admit it. Errors carry the errno (or kErr* kind) error_map
  // turns into a status.
  // A template name that is one of the caller's snapshot ids creates on that
  // snapshot (sandbox_snapshot.cc).
  http::Task<Result<SandboxRow>> create(CreateSandboxRequest request, const Caller& caller);
  // `why` goes into the sandbox's log, which is kept a while after (ended_log);
  // `by_key`, the API key id asking, into its flight record.
  http::Task<bool> kill(const std::string& id, std::string why = "killed",
                        std::string by_key = "");  // false: unknown id
  // PUT /sandboxes/{id}/network: replaces the egress rules (E2B's
  // SandboxNetworkUpdateConfig); connections they forbid now are cut.
  http::Task<Result<SandboxRow>> update_network(std::shared_ptr<LiveSandbox> live,
                                                std::string body);
  // E2B's pause: the sandbox is frozen and keeps no deadline (sandbox_pause.cc).
  // False when it was paused already.
  http::Task<Result<bool>> pause(std::shared_ptr<LiveSandbox> live);
  // Thaws a paused sandbox, which then ends `seconds` from now; false when it
  // was running.
  http::Task<Result<bool>> resume(std::shared_ptr<LiveSandbox> live, int seconds);
  // Snapshots, fork and filesystem-only pause (sandbox_snapshot.cc).
  // A snapshot of the sandbox's filesystem, owned by its team; the sandbox
  // is frozen for the copy and goes on as it was.
  http::Task<Result<Snapshot>> create_snapshot(std::shared_ptr<LiveSandbox> live, std::string name);
  Result<bool> delete_snapshot(const Caller& caller, const std::string& id);
  // What TemplateStore::from_snapshot needs to make template `name` of the
  // caller's snapshot `id` (ENOENT: the team has no such snapshot).
  Result<templates::SnapshotTemplateRequest> snapshot_template(const Caller& caller,
                                                               const std::string& id,
                                                               const std::string& name) const;
  // `count` new sandboxes with the filesystem of `live`, which goes on
  // running; one result per sandbox asked for.
  http::Task<Result<std::vector<Result<SandboxRow>>>> fork(std::shared_ptr<LiveSandbox> live,
                                                           int count, int timeout_sec,
                                                           const Caller& caller);
  // Filesystem-only pause: its processes end, its writable layer is saved,
  // and it is kept (paused, same id and tokens) without a runtime sandbox.
  // False when it was paused already.
  http::Task<Result<bool>> pause_fs_only(std::shared_ptr<LiveSandbox> live);
  // Starts a filesystem-paused sandbox again on its saved layers (a cold
  // boot: a new init, no process of before), for `seconds`.
  http::Task<Result<SandboxRow>> cold_boot(const std::string& id, int seconds);
  // A filesystem-paused sandbox of the caller's team.
  std::optional<SandboxRow> dormant_for(const Caller& caller, const std::string& id) const;
  std::optional<SandboxRow> dormant(const std::string& id) const;
  SnapshotStore& snapshots() { return *tenancy_.snapshots; }
  const EventJournals& events() const { return *tenancy_.events; }

  // A paused sandbox is killed after this long (E2B keeps them 30 days).
  static constexpr int64_t kMaxPausedMs = int64_t{30} * 24 * 3600 * 1000;
  // end = now + seconds; with `extend_only` the end time never moves earlier.
  // A timeout longer than the owner's quota allows is refused (kErrQuota).
  Result<SandboxRow> set_timeout(const std::string& id, int seconds, bool extend_only);
  // Live sandboxes (what quotas count); list_for adds filesystem-paused ones.
  std::vector<SandboxRow> list() const;
  std::shared_ptr<LiveSandbox> find(const std::string& id) const;
  // The same, limited to what `caller` may reach: its team's sandboxes. A
  // foreign sandbox is not found, so its existence is not revealed.
  std::vector<SandboxRow> list_for(const Caller& caller) const;
  std::shared_ptr<LiveSandbox> find_for(const Caller& caller, const std::string& id) const;
  // A sandbox that stopped on its own lately, if `id` names one.
  std::optional<StoppedSandbox> stopped(const std::string& id) const;
  // The log of a sandbox of `caller`'s team that ended lately, or null.
  std::shared_ptr<const SandboxLog> ended_log(const Caller& caller, const std::string& id) const;

  // Told of the address of each sandbox whose egress policy was replaced or
  // that went away (the egress proxy cuts what is forbidden now). Set before serving.
  void on_egress_change(std::function<void(uint32_t address)> listener) {
    egress_changed_ = std::move(listener);
  }
  // The CA of the egress proxy, which sandboxes with header rules trust. Set before serving.
  void set_egress_ca(std::string pem) { egress_ca_ = std::move(pem); }
  // An admin's extra CA bundle (PEM), which every sandbox with a network trusts. Set before
  // serving.
  void set_extra_ca(std::string pem) { extra_ca_ = std::move(pem); }
  // What each command's stdout and stderr hold while no daemon reads them
  // (ProcessTable); set before restore().
  void set_output_buffer(size_t bytes) { output_buffer_ = bytes; }
  // Commands and interpreter contexts run in band (ProcessTable's `in_band`,
  // Interpreter::create's); set before restore().
  void set_in_band_commands(bool in_band) { in_band_commands_ = in_band; }

  ApiKeys& keys() { return *tenancy_.keys; }
  Quotas& quotas() { return *tenancy_.quotas; }
  Usage& usage() { return *tenancy_.usage; }
  SecretStore& secrets() { return *tenancy_.secrets; }
  Volumes& volumes() { return *tenancy_.volumes; }
  E2bBuilds& e2b_builds() { return *tenancy_.e2b_builds; }
  DashboardSessions& dashboard_sessions() { return dashboard_sessions_; }
  // The team whose live sandbox has `address` on its network; empty: none.
  std::string owner_at(uint32_t address) const;
  // The log of the live sandbox at `address` (its flight record); null: none.
  std::shared_ptr<SandboxLog> log_at(uint32_t address) const;

  // Runs work whose length its caller controls (builds, MCP sessions that
  // end their sandboxes) where it cannot hold up creates and kills.
  void start_long(std::function<void()> work);
  http::Task<void> run_long(std::function<void()> work);

  // Set once the server is bound; /mcp sessions call the daemon here.
  void set_listen_address(ListenAddress address) { listen_address_ = std::move(address); }
  const ListenAddress& listen_address() const { return listen_address_; }

  uint32_t host_cores() const { return host_cores_; }
  BlockingPool& pool() { return pool_; }
  templates::TemplateStore& templates() { return templates_; }
  boost::asio::io_context& io_context() { return ioc_; }

 private:
  Status apply_template_defaults(const runtime::Sandbox& sandbox,
                                 const templates::ProcessDefaults& defaults, SandboxRow& row);
  http::Task<void> ttl_loop();
  http::Task<void> on_timeout(const SandboxRow& row);
  static void mark_dying(LiveSandbox& live);
  http::Task<Result<SandboxRow>> create_on(CreateSandboxRequest request, const Caller& caller,
                                           std::optional<RootSource> source);
  // Copies the writable layer of `live` into a committed snapshot layer
  // (settle it once named); the sandbox is frozen meanwhile. `then_dying`:
  // it is marked dying under the same turn (a filesystem-only pause).
  struct CopiedLayer {
    std::string id;
    uint64_t bytes = 0;
  };
  Result<CopiedLayer> copy_layer(LiveSandbox& live, bool then_dying);
  // Removes the snapshot layers no snapshot and no sandbox names. Blocks.
  void collect_snapshot_layers();
  // The root of a sandbox on `source`: its snapshot layers over its
  // template's; `defaults` get the template's process defaults.
  Result<runtime::RootfsSpec> rootfs_of(const RootSource& source,
                                        templates::ProcessDefaults* defaults) const;
  RootSource root_source_of(const SandboxRow& row) const;
  bool kill_dormant(const std::string& id);
  std::vector<SandboxRow> dormant_rows() const;
  void account_usage(bool sample);
  // Removes the flight records kept past their retention (event_retention.cc). Blocks.
  void sweep_event_records() const;
  void destroy_now(const SandboxRow& row, const std::shared_ptr<LiveSandbox>& live);
  // A template force-removed while in use keeps its layers until its last
  // sandbox ends: frees those no live sandbox runs on any more. Blocks.
  void release_retired_templates();
  void sandbox_stopped(const std::string& id, const std::string& reason) override;
  void on_sandbox_stopped(const std::string& id, const std::string& reason);
  http::Task<void> kill_stopped(std::string id, std::string why);
  std::shared_ptr<LiveSandbox> make_live(SandboxRow row, std::unique_ptr<runtime::Sandbox> sb);
  // Sets the sandbox's egress policy; with header rules, the sandbox trusts
  // the proxy's CA (and `row` gets the variables naming it).
  Status apply_network(runtime::Sandbox& sandbox, const NetworkSettings& settings, SandboxRow* row);

  boost::asio::io_context& ioc_;
  BlockingPool& pool_;
  runtime::Runtime& runtime_;
  templates::TemplateStore& templates_;
  Store& store_;
  Tenancy tenancy_;
  DashboardSessions dashboard_sessions_;  // in memory: a restart logs browsers out
  uint32_t host_cores_;
  ListenAddress listen_address_;
  std::function<void(uint32_t)> egress_changed_;
  std::string egress_ca_;
  std::string extra_ca_;
  size_t output_buffer_ = kDefaultOutputBuffer;
  bool in_band_commands_ = false;

  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<LiveSandbox>> live_;
  std::map<std::string, SandboxRow> dormant_;      // filesystem-paused, under mutex_
  std::set<std::string> booting_;                  // being cold-booted, under mutex_
  std::map<std::string, StoppedSandbox> stopped_;  // the latest kMaxStopped, under mutex_
  std::deque<std::string> stopped_order_;          // oldest first
  EndedLogs ended_logs_;
};

int64_t now_ms();

}  // namespace abx::daemon
