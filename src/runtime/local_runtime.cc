// The Runtime: creates sandboxes (state dir, control socket, cgroups, clone
// of init), finds them again after a daemon restart, and tears them down.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "agent/protocol.h"
#include "common/fd_io.h"
#include "common/ids.h"
#include "runtime/cgroup.h"
#include "runtime/checkpoint.h"
#include "runtime/helper_spawn.h"
#include "runtime/id_ranges.h"
#include "runtime/local_sandbox.h"
#include "runtime/lxcfs.h"
#include "runtime/networks.h"
#include "runtime/reaper.h"
#include "runtime/restore.h"
#include "runtime/runtime.h"
#include "runtime/seccomp_policy.h"
#include "runtime/spawner.h"
#include "runtime/user.h"
#include "runtime/user_net.h"
#include "runtime/warm_pool.h"

namespace abx::runtime {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr Limits kBuiltinLimits{512 * kMiB, 256, 1000, 1024 * kMiB};
constexpr const char* kSocketName = kControlSocketName;
constexpr const char* kInitFile = "init";  // "<pid> <starttime>", for sweep_orphans
// The lower layers, one per line, topmost first, for a restore; or one line
// "unrestorable: <why>" for a sandbox a checkpoint could not bring back.
constexpr const char* kRootfsFile = "rootfs";
constexpr const char* kIdLockDir = "/run/abx/uids";  // one lock per region (id_ranges.h)
constexpr int kDeathTimeoutMs = 5000;
// Overlay takes the lower dirs as one mount option (a page at most) and
// init receives their fds in one message.
constexpr size_t kMaxLayers = 127;

Limits fill_defaults(Limits l, const Limits& d) {
  for (auto [field, fallback] :
       {std::pair{&l.memory_bytes, d.memory_bytes}, std::pair{&l.pids, d.pids},
        std::pair{&l.disk_bytes, d.disk_bytes}})
    if (*field == 0) *field = fallback;
  if (l.cpu_millicores == 0) l.cpu_millicores = d.cpu_millicores;
  return l;
}

// starttime (field 22 of /proc/<pid>/stat) guards against pid reuse; 0 if gone.
uint64_t process_start_time(pid_t pid) {
  auto text = read_file("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat = text ? std::move(*text) : std::string();
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

// sweep_orphans finds a sandbox's init through this file alone, so a create
// whose file did not land fails instead of leaving an init nobody can find.
Status write_init_file(const fs::path& path, pid_t pid, uint64_t start_time) {
  const std::string line = std::to_string(pid) + ' ' + std::to_string(start_time) + '\n';
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("create init pid file", path.string());
  return write_all(fd.get(), line, "write init pid file", path.string());
}

Status write_rootfs_file(const fs::path& path, const RootfsSpec& rootfs) {
  std::string text;
  if (!rootfs.writable_dir.empty())
    text = "unrestorable: its writable layer is a host dir (a template build)\n";
  else if (!rootfs.volumes.empty())
    text = "unrestorable: it mounts volumes\n";
  else
    for (const auto& layer : rootfs.lower_layers) text += layer.string() + "\n";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("create rootfs file", path.string());
  return write_all(fd.get(), text, "write rootfs file", path.string());
}

Result<UniqueFd> listen_control(const fs::path& path) {
  const std::string step = "bind sandbox control socket";
  auto sock = control_socket(path, step);
  if (!sock) return sock.error();
  const auto* addr = reinterpret_cast<const sockaddr*>(&sock->address);
  if (::bind(sock->fd.get(), addr, sizeof sock->address) != 0)
    return Error::from_errno(step, path.string());
  if (::listen(sock->fd.get(), 16) != 0) return Error::from_errno("listen", path.string());
  return std::move(sock->fd);
}

Result<UniqueFd> config_memfd(const proto::InitConfig& config) {
  UniqueFd fd(::memfd_create("abx-init-config", MFD_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("memfd_create config");
  const std::string bytes = proto::encode(config);
  if (::write(fd.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0)
    return Error::from_errno("write init config");
  return fd;
}

Status validate(const SandboxSpec& spec) {
  if (!ids::is_valid_sandbox_id(spec.id))
    return Error{"create sandbox", EINVAL, "id must be [a-z0-9]+: " + spec.id};
  if (spec.rootfs.lower_layers.empty())
    return Error{"create sandbox", EINVAL, "the rootfs has no layers: give a template"};
  if (spec.rootfs.lower_layers.size() > kMaxLayers)
    return Error{"create sandbox", E2BIG,
                 "more than " + std::to_string(kMaxLayers) + " layers; flatten the template"};
  for (const auto& layer : spec.rootfs.lower_layers)
    if (!layer.is_absolute() || layer.native().find_first_of(":,\\") != std::string::npos)
      return Error{"create sandbox", EINVAL,
                   "layer paths must be absolute, without ':' ',' '\\': " + layer.string()};
  const fs::path& writable = spec.rootfs.writable_dir;
  if (!writable.empty() &&
      (!writable.is_absolute() || writable.native().find_first_of(":,\\") != std::string::npos))
    return Error{"create sandbox", EINVAL,
                 "the writable dir must be absolute, without ':' ',' '\\': " + writable.string()};
  for (const auto& bind : spec.rootfs.read_only_binds)
    if (!bind.host_path.is_absolute() || !bind.sandbox_path.is_absolute())
      return Error{"create sandbox", EINVAL,
                   "bind paths must be absolute: " + bind.host_path.string() + " -> " +
                       bind.sandbox_path.string()};
  for (const auto& volume : spec.rootfs.volumes)
    if (!volume.host_path.is_absolute() || !volume.sandbox_path.is_absolute())
      return Error{"create sandbox", EINVAL,
                   "volume paths must be absolute: " + volume.host_path.string() + " -> " +
                       volume.sandbox_path.string()};
  return {};
}

proto::InitConfig init_config(const SandboxSpec& spec, const Limits& limits, bool full_id_map,
                              const std::string& seccomp_bpf, const Lxcfs* lxcfs,
                              bool workload_cgroup, const std::string& nameserver, bool raw_sockets,
                              bool idmapped_layers) {
  proto::InitConfig config;
  config.hostname = spec.hostname.empty() ? spec.id : spec.hostname;
  config.disk_bytes = limits.disk_bytes;
  for (const auto& layer : spec.rootfs.lower_layers) config.lower_layers.push_back(layer);
  for (const auto& bind : spec.rootfs.read_only_binds)
    config.binds.emplace_back(bind.host_path, bind.sandbox_path);
  config.full_id_map = full_id_map;
  config.seccomp_bpf = seccomp_bpf;
  config.host_writable_dir = !spec.rootfs.writable_dir.empty();
  if (lxcfs) config.proc_views = lxcfs->views();
  config.workload_cgroup = workload_cgroup;
  config.nameserver = nameserver;
  config.raw_sockets = raw_sockets;
  config.allow_setid = spec.rootfs.allow_setid;
  config.tcp_port = spec.agent_port;
  config.tcp_token = spec.agent_token;
  config.idmapped_layers = idmapped_layers;
  for (const auto& volume : spec.rootfs.volumes) config.volumes.push_back(volume.sandbox_path);
  return config;
}

// A build's writable layer becomes the template's: init leaves its
// /etc/resolv.conf alone, and the build's resolver (the gateway) is a file
// of the state dir bound over it instead, which the layer never sees.
Result<SandboxSpec> resolver_for_build(const SandboxSpec& spec, const fs::path& state,
                                       const std::string& nameserver) {
  SandboxSpec out = spec;
  if (nameserver.empty() || spec.rootfs.writable_dir.empty()) return out;
  const fs::path file = state / "resolv.conf";
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return Error::from_errno("create", file.string());
  if (auto s = write_all(fd.get(), "nameserver " + nameserver + "\n", "write", file.string()); !s)
    return s.error();
  out.rootfs.read_only_binds.push_back({file, "/etc/resolv.conf"});
  return out;
}

// Template layers and bind sources, opened by the daemon (which may search
// their ancestors, e.g. a data dir under /root) for init (which may not).
// Opened through the child's /proc/<pid>/root so that each fd's mount lies
// in the sandbox's mount namespace: overlay and bind mounts refuse sources
// from another namespace.
// With a `translation` namespace (>= 0), the layers and the writable dir
// are idmapped clones instead, which init attaches (see id_ranges.h).
Result<spawner::Handoff> open_rootfs_sources(pid_t pid, const RootfsSpec& rootfs,
                                             const Lxcfs* lxcfs, int translation) {
  const std::string root = "/proc/" + std::to_string(pid) + "/root";
  spawner::Handoff fds;
  auto open_source = [&](const fs::path& path, int flags) -> Status {
    UniqueFd fd(::open((root + path.native()).c_str(), O_PATH | O_CLOEXEC | flags));
    if (!fd.valid()) return Error::from_errno("open rootfs source", path.string());
    fds.push_back(std::move(fd));
    return {};
  };
  auto open_layer = [&](const fs::path& path, bool writable, uint64_t attrs = 0) -> Status {
    if (translation < 0) return open_source(path, O_DIRECTORY);
    // A clone is made of the daemon's own mount (its namespace's only), detached.
    auto tree = idmapped_tree(path.native(), translation, writable, attrs);
    if (!tree) return tree.error();
    fds.push_back(std::move(*tree));
    return {};
  };
  for (const auto& layer : rootfs.lower_layers)
    if (auto s = open_layer(layer, false); !s) return s.error();
  for (const auto& bind : rootfs.read_only_binds)
    if (auto s = open_source(bind.host_path, 0); !s) return s.error();
  if (!rootfs.writable_dir.empty())
    if (auto s = open_layer(rootfs.writable_dir, true); !s) return s.error();
  if (lxcfs && !lxcfs->views().empty())
    if (auto s = open_source(lxcfs->proc_dir(), O_DIRECTORY); !s) return s.error();
  for (const auto& volume : rootfs.volumes)
    if (auto s = open_layer(volume.host_path, true, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV); !s)
      return s.error();
  return fds;
}

// A memory hog must never take init (and with it the whole sandbox) down
// instead of itself; init resets the score for every process it starts.
// Only after init's exec: before it, init shares the daemon's mm, and the
// score is per mm. Lowering it needs CAP_SYS_RESOURCE.
// A privileged write to oom_score_adj also sets the floor
// (oom_score_adj_min) that init's children inherit and may go down to
// without privilege: were it -1000, every process of the sandbox could make
// itself immune to the OOM killer. So the floor is set to 0 (init inherited
// the daemon's, which a service manager may have lowered) and the score
// lowered through the legacy oom_adj file (-17 is -1000), which leaves the
// floor where it is.
Status protect_from_oom_killer(pid_t pid) {
  const auto write_proc = [pid](const char* file, std::string_view value) -> Status {
    const std::string path = "/proc/" + std::to_string(pid) + "/" + file;
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid() || ::write(fd.get(), value.data(), value.size()) != std::ssize(value))
      return Error::from_errno("write", path);
    return {};
  };
  if (auto s = write_proc("oom_score_adj", "0"); !s) return s;
  return write_proc("oom_adj", "-17");
}

// Score and floor back to 0 (a privileged write sets both).
Status unshield(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/oom_score_adj";
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid() || ::write(fd.get(), "0", 1) != 1) return Error::from_errno("write", path);
  return {};
}

bool has_capability(cap_value_t cap) {
  cap_t current = ::cap_get_proc();
  cap_flag_value_t value = CAP_CLEAR;
  if (current != nullptr) ::cap_get_flag(current, cap, CAP_EFFECTIVE, &value);
  ::cap_free(current);
  return value == CAP_SET;
}

// waitid's idtype for a pidfd (Linux 5.4); glibc's <sys/wait.h> does not name it.
constexpr auto kPidfdIdType = static_cast<idtype_t>(3);

Result<UniqueFd> open_pidfd(pid_t pid) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd.valid()) return Error::from_errno("pidfd_open init", std::to_string(pid));
  return pidfd;
}

// A pidfd for the process that held `pid` when it was recorded, or ESRCH.
// Opened before the start-time check: if the check passes, the pidfd names
// that process even if the number is reused a moment later.
Result<UniqueFd> open_recorded_pidfd(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return Error{"find sandbox init", ESRCH, "no pid recorded"};
  auto pidfd = open_pidfd(pid);
  if (!pidfd) return pidfd.error();
  if (process_start_time(pid) != start_time)
    return Error{"find sandbox init", ESRCH, "pid " + std::to_string(pid) + " was reused"};
  return pidfd;
}

// SIGKILL through the pidfd (a pid-namespace init ignores SIGTERM); the
// kernel then kills the whole namespace. `reap`: init is our child and
// nobody has reaped it yet.
Status kill_init(int pidfd, bool reap) {
  if (::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0) != 0 && errno != ESRCH)
    return Error::from_errno("kill sandbox init");
  if (reap) {
    siginfo_t info{};
    while (::waitid(kPidfdIdType, static_cast<id_t>(pidfd), &info, WEXITED) != 0)
      if (errno != EINTR) return Error::from_errno("reap sandbox init");
    return {};
  }
  pollfd p{pidfd, POLLIN, 0};  // not ours to reap: wait for it to exit
  if (::poll(&p, 1, kDeathTimeoutMs) != 1)
    return Error{"wait for sandbox init to die", ETIMEDOUT, {}};
  return {};
}

// What start() opened while init was our unreaped child (so its pid could
// not have been reused), or adopt() verified.
Result<LocalSandbox::Held> hold_init(const std::string& id, pid_t pid, uint64_t start_time,
                                     UniqueFd pidfd, bool child) {
  const std::string proc = "/proc/" + std::to_string(pid);
  LocalSandbox::Held held;
  held.root = UniqueFd(::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!held.root.valid()) return Error::from_errno("open sandbox root", proc + "/root");
  held.net_ns = UniqueFd(::open((proc + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
  if (!held.net_ns.valid()) return Error::from_errno("open sandbox network namespace", proc);
  // Still running after the opens: the number was still init's while we opened.
  if (pidfd_exited(pidfd.get()))
    return Error{"hold sandbox init", ESRCH, "init of " + id + " exited"};
  held.init = std::make_shared<InitHandle>(id, pid, start_time, std::move(pidfd), child);
  return held;
}

// Without root there is no veth nor nftables table: slirp4netns gives the
// internet, and the admin hears what that leaves unenforced. The sandboxes'
// resolver (empty: none), or nullopt when slirp4netns cannot serve.
std::optional<std::string> choose_user_net(std::vector<std::string>* warnings) {
  if (!UserNet::binary()) {
    warnings->push_back(
        "running without root and slirp4netns is not installed (apt-get install slirp4netns): "
        "every sandbox has loopback only and no internet");
    return std::nullopt;
  }
  if (::euidaccess("/dev/net/tun", R_OK | W_OK) != 0) {
    warnings->push_back(
        "running without root and /dev/net/tun is not open to this user (Debian makes it mode "
        "0666): every sandbox has loopback only and no internet");
    return std::nullopt;
  }
  warnings->push_back(
      "running without root: sandboxes reach the internet through slirp4netns with the host's "
      "loopback closed, but the host's other addresses, private ranges (RFC 1918, CGNAT), "
      "link-local and cloud metadata (169.254.0.0/16) stay reachable, and sandboxes asking for "
      "allowOut/denyOut lists, rules or an egressProxy are refused; run the daemon as root to "
      "enforce them");
  std::string nameserver = UserNet::host_nameserver();
  if (nameserver.empty())
    warnings->push_back(
        "running without root and /etc/resolv.conf names no resolver off loopback: sandboxes "
        "resolve no names (their way to the host's 127.x is closed); name one there");
  return nameserver;
}

class LocalRuntime final : public Runtime {
 public:
  LocalRuntime(RuntimeConfig config, UniqueFd image, std::string seccomp_bpf, user::IdMap ids,
               std::unique_ptr<IdRanges> ranges, cgroup::Layout cgroups, bool shield_init,
               std::unique_ptr<Lxcfs> lxcfs, std::shared_ptr<Networks> networks,
               std::optional<std::string> user_net_nameserver, std::vector<std::string> warnings,
               CheckpointSupport checkpoints)
      : config_(std::move(config)),
        image_(std::move(image)),
        seccomp_bpf_(std::move(seccomp_bpf)),
        ids_(ids),
        ranges_(std::move(ranges)),
        cgroups_(std::move(cgroups)),
        shield_init_(shield_init),
        lxcfs_(std::move(lxcfs)),
        networks_(std::move(networks)),
        user_net_(user_net_nameserver.has_value()),
        user_net_nameserver_(user_net_nameserver.value_or("")),
        warnings_(std::move(warnings)),
        checkpoints_(std::move(checkpoints)) {}
  ~LocalRuntime() override {
    pool_.drain();  // its sandboxes' cgroups must go before the instance's
    cgroup::release(cgroups_);
    // Sandboxes left for the next daemon to adopt keep reading it.
    if (lxcfs_ && !any_sandbox_left()) lxcfs_->stop();
  }

  Result<std::unique_ptr<Sandbox>> create(const SandboxSpec& spec) override;
  Result<std::unique_ptr<Sandbox>> adopt(const SandboxRecord& record) override;
  Status destroy(const SandboxRecord& record) override;
  void sweep_orphans(const std::vector<std::string>& live_ids) override;
  void drain_pool() override { pool_.clear(); }
  void on_stopped(StopListener* listener) override {
    std::lock_guard lock(stopped_mutex_);
    stopped_listener_ = listener;
  }
  uid_t host_uid(uint32_t id) const override { return ids_.host_uid(id); }
  gid_t host_gid(uint32_t id) const override { return ids_.host_gid(id); }
  std::vector<std::string> warnings() const override { return warnings_; }
  CheckpointSupport checkpoint_support() const override { return checkpoints_; }
  Status checkpoint(Sandbox& sandbox, const fs::path& images) override;
  Result<std::unique_ptr<Sandbox>> restore(const SandboxRecord& record,
                                           const fs::path& images) override;
  std::shared_ptr<const egress::Policy> egress_policy(uint32_t address) const override {
    return networks_ ? networks_->policy_at(address) : nullptr;
  }

 private:
  fs::path state_of(const std::string& id) const { return config_.state_dir / id; }
  // `background`: for the warm pool (see create_warm).
  Result<std::unique_ptr<Sandbox>> create_now(const SandboxSpec& spec, bool background = false);
  Result<std::unique_ptr<Sandbox>> create_warm(const SandboxSpec& spec);
  Result<LocalSandbox::Held> start(const SandboxSpec& spec, const Limits& limits, uint32_t net_slot,
                                   uint32_t id_slot, bool background);
  // The ids a sandbox maps to, by the first of its range (its record's).
  user::IdMap ids_of(uid_t uid_zero) const;
  uint32_t id_slot_of(const SandboxRecord& record) const {
    return ranges_ ? ranges_->slot_of(record.host_uid_base) : 0;
  }
  uint32_t slot_of(const SandboxRecord& record) const {
    return networks_ ? networks_->pool().slot_of_address(record.net_address) : 0;
  }
  Result<std::unique_ptr<Sandbox>> connect(const SandboxRecord& record, LocalSandbox::Held held);
  Status remove_leftovers(const std::string& id);
  bool any_sandbox_left() const;
  void track(const std::shared_ptr<InitHandle>& init);
  std::shared_ptr<InitHandle> untrack(const std::string& id);
  void on_init_exit(InitHandle& init, std::optional<int> wait_status);

  RuntimeConfig config_;
  UniqueFd image_;
  std::string seccomp_bpf_;
  user::IdMap ids_;                   // what layers are stored with; the sandboxes' if shared
  std::unique_ptr<IdRanges> ranges_;  // null: every sandbox maps to ids_
  cgroup::Layout cgroups_;
  bool shield_init_;
  std::unique_ptr<Lxcfs> lxcfs_;
  std::shared_ptr<Networks> networks_;     // null: sandboxes have loopback only
  const bool user_net_;                    // rootless: slirp4netns (runtime/user_net.h)
  const std::string user_net_nameserver_;  // empty: the sandboxes keep their resolv.conf
  std::vector<std::string> warnings_;
  const CheckpointSupport checkpoints_;
  std::mutex stopped_mutex_;  // held while the listener runs, so clearing it waits
  StopListener* stopped_listener_ = nullptr;
  std::mutex inits_mutex_;
  std::map<std::string, std::shared_ptr<InitHandle>> inits_;  // every live init, pooled too
  Reaper reaper_{
      [this](InitHandle& init, std::optional<int> status) { on_init_exit(init, status); }};
  // Last: its thread stops, and its sandboxes go, before anything it uses.
  WarmPool pool_{config_.warm_pool_size,
                 [this](const SandboxSpec& spec) { return create_warm(spec); },
                 [this](const SandboxRecord& record) { (void)destroy(record); }};
};

void LocalRuntime::track(const std::shared_ptr<InitHandle>& init) {
  {
    std::lock_guard lock(inits_mutex_);
    inits_[init->id()] = init;
  }
  reaper_.watch(init);
}

std::shared_ptr<InitHandle> LocalRuntime::untrack(const std::string& id) {
  std::lock_guard lock(inits_mutex_);
  auto node = inits_.extract(id);
  return node ? std::move(node.mapped()) : nullptr;
}

// On the reaper's thread. The whole sandbox died with its init; whoever
// listens destroys it.
void LocalRuntime::on_init_exit(InitHandle& init, std::optional<int> wait_status) {
  if (init.destroying()) return;
  const bool out_of_memory =
      cgroups_.version != cgroup::Version::kNone && cgroup::oom_kills(cgroups_, init.id()) > 0;
  init.set_stopped_reason(stop_reason(wait_status, out_of_memory));
  std::lock_guard lock(stopped_mutex_);
  if (stopped_listener_) stopped_listener_->sandbox_stopped(init.id(), init.stopped_reason());
}

Result<LocalSandbox::Held> LocalRuntime::start(const SandboxSpec& asked, const Limits& limits,
                                               uint32_t net_slot, uint32_t id_slot,
                                               bool background) {
  const fs::path state = state_of(asked.id);
  if (::mkdir(state.c_str(), 0700) != 0)
    return Error::from_errno("mkdir state dir", state.string());
  auto listen = listen_control(state / kSocketName);
  if (!listen) return listen.error();
  const std::string nameserver = net_slot ? ipv4_text(networks_->pool().gateway(net_slot))
                                 : user_net_ && asked.network ? user_net_nameserver_
                                                              : std::string();
  auto with_resolver = resolver_for_build(asked, state, nameserver);
  if (!with_resolver) return with_resolver.error();
  const SandboxSpec& spec = *with_resolver;
  // One answer for both uses: init expects the proc dir's fd iff it has views.
  const Lxcfs* views = lxcfs_ && lxcfs_->answering() ? lxcfs_.get() : nullptr;
  const fs::path workload_procs = cgroup::workload_procs(cgroups_, spec.id);
  const user::IdMap ids = id_slot ? ranges_->map_of(id_slot) : ids_;
  int translation = -1;
  if (id_slot) {
    auto ns = ranges_->translation(id_slot);
    if (!ns) return ns.error();
    translation = *ns;
  }
  auto config = config_memfd(init_config(spec, limits, ids.full(), seccomp_bpf_, views,
                                         !workload_procs.empty(), nameserver,
                                         !(user_net_ && asked.network), translation >= 0));
  if (!config) return config.error();
  if (cgroups_.version != cgroup::Version::kNone) {
    if (auto s = cgroup::create(cgroups_, spec.id, limits); !s) return s.error();
    if (background)
      if (auto s = cgroup::set_background(cgroups_, spec.id, true); !s) return s.error();
  }
  auto prepare = [&](pid_t pid) -> Result<spawner::Handoff> {
    if (auto s = user::write_maps(pid, ids); !s) return s.error();
    if (cgroups_.version != cgroup::Version::kNone)
      if (auto s = cgroup::attach(cgroups_, spec.id, pid); !s) return s.error();
    auto handoff = open_rootfs_sources(pid, spec.rootfs, views, translation);
    if (!handoff || workload_procs.empty()) return handoff;
    // Init may not open it (host root's file); its children write to it.
    UniqueFd procs(::open(workload_procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (!procs.valid()) return Error::from_errno("open workload cgroup", workload_procs.string());
    handoff->push_back(std::move(procs));
    return handoff;
  };
  // Owned by root where CRIU could not read its tasks' rlimits otherwise
  // (RuntimeConfig::checkpoints).
  const uid_t owner = config_.checkpoints && !shield_init_ ? 0 : ids.uid_zero;
  auto pid = spawner::start_init({image_.get(), config->get(), listen->get()}, owner, prepare);
  if (!pid) return pid.error();
  // Until track() hands it to the reaper, init is our unreaped child: its
  // number cannot be reused, so /proc/<pid> is init's.
  const uint64_t start_time = process_start_time(*pid);
  auto pidfd = open_pidfd(*pid);
  auto held = pidfd ? hold_init(spec.id, *pid, start_time, std::move(*pidfd), true)
                    : Result<LocalSandbox::Held>(pidfd.error());
  Status ready = held ? Status{} : Status{held.error()};
  if (ready && shield_init_) ready = protect_from_oom_killer(*pid);
  if (ready && net_slot) ready = networks_->attach(net_slot, held->net_ns.get());
  if (ready) ready = write_init_file(state / kInitFile, *pid, start_time);
  if (ready) ready = write_rootfs_file(state / kRootfsFile, spec.rootfs);
  if (!ready) {
    ::kill(*pid, SIGKILL);
    while (::waitpid(*pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return ready.error();
  }
  track(held->init);
  return held;
}

bool LocalRuntime::any_sandbox_left() const {
  std::error_code ec;  // a sandbox is a dir; files (the network pool's name) are not
  for (const auto& entry : fs::directory_iterator(config_.state_dir, ec))
    if (entry.is_directory(ec)) return true;
  return false;
}

Result<std::unique_ptr<Sandbox>> LocalRuntime::create(const SandboxSpec& spec) {
  if (!spec.id.empty()) return create_now(spec);
  SandboxSpec chosen = spec;
  // A build sandbox owns its writable dir, and one with volumes mounts a
  // team's data: never pooled, never shared.
  const bool poolable =
      spec.rootfs.writable_dir.empty() && spec.rootfs.volumes.empty() && spec.network;
  chosen.limits = fill_defaults(spec.limits, config_.default_limits);
  if (poolable) {
    if (auto pooled = pool_.take(chosen)) {
      if (pooled->stopped_reason().empty() &&
          cgroup::set_background(cgroups_, pooled->record().id, false))
        return pooled;
      (void)destroy(pooled->record());  // its init died while it waited in the pool, or its
                                        // CPU weight would not come back
    }
  }
  chosen.id = ids::sandbox_id();
  return create_now(chosen);
}

// For the pool: the sandbox, and what the warm-up its spec asks for made,
// at the lowest CPU weight, so that a refill (starting IPython takes most
// of a CPU second) never slows the sandboxes callers are using.
Result<std::unique_ptr<Sandbox>> LocalRuntime::create_warm(const SandboxSpec& spec) {
  auto sandbox = create_now(spec, true);
  if (sandbox && !spec.warm_up.empty() && config_.warm_up)
    (*sandbox)->set_warm_up(config_.warm_up(**sandbox, spec.warm_up));
  return sandbox;
}

Result<std::unique_ptr<Sandbox>> LocalRuntime::create_now(const SandboxSpec& spec,
                                                          bool background) {
  if (auto s = validate(spec); !s) return s.error();
  const Limits limits = fill_defaults(spec.limits, config_.default_limits);
  uint32_t slot = 0;
  if (networks_ && spec.network && (slot = networks_->reserve()) == 0)
    return Error{"create sandbox", ENOSPC,
                 "every address of the sandbox network pool is in use: kill sandboxes, or set a "
                 "larger network.pool"};
  uint32_t id_slot = 0;
  if (ranges_ && (id_slot = ranges_->take()) == 0) {
    if (slot) networks_->release(slot);
    return Error{"create sandbox", ENOSPC,
                 "every host uid range of this daemon is in use (" +
                     std::to_string(IdRanges::kSlots - 1) + " sandboxes): kill sandboxes"};
  }
  auto held = start(spec, limits, slot, id_slot, background);
  if (!held) {
    if (slot) networks_->release(slot);
    if (id_slot) ranges_->give_back(id_slot);
    (void)remove_leftovers(spec.id);
    return held.error();
  }
  SandboxRecord record{spec.id,
                       held->init->pid(),
                       held->init->start_time(),
                       state_of(spec.id),
                       id_slot ? ranges_->map_of(id_slot).uid_zero : ids_.uid_zero,
                       limits,
                       slot ? networks_->pool().address(slot) : 0};
  auto sandbox = connect(record, std::move(*held));
  if (!sandbox) (void)destroy(record);
  return sandbox;
}

Result<std::unique_ptr<Sandbox>> LocalRuntime::connect(const SandboxRecord& record,
                                                       LocalSandbox::Held held) {
  auto control = connect_control(state_of(record.id) / kSocketName);
  if (!control) return control.error();
  return std::unique_ptr<Sandbox>(std::make_unique<LocalSandbox>(
      record, std::move(*control), std::move(held), ids_of(record.host_uid_base), ids_, cgroups_,
      networks_, user_net_));
}

// A range of ours, or of the region this state dir held before (adopted
// after a restart that claimed another), or the shared one.
user::IdMap LocalRuntime::ids_of(uid_t uid_zero) const {
  if (uid_zero == ids_.uid_zero || !ids_.full()) return ids_;
  return user::IdMap{uid_zero, uid_zero + 1, uid_zero, uid_zero + 1, ids_.count, false};
}

// The pid in the record is trusted only through a pidfd whose process has
// the recorded start time; everything else is opened before that process
// could have exited, and then watched like a sandbox made here.
Result<std::unique_ptr<Sandbox>> LocalRuntime::adopt(const SandboxRecord& record) {
  if (!ids::is_valid_sandbox_id(record.id))
    return Error{"adopt sandbox", EINVAL, "bad id " + record.id};
  auto pidfd = open_recorded_pidfd(record.init_pid, record.init_start_time);
  if (!pidfd)
    return Error{"adopt sandbox", ESRCH, "init of " + record.id + " is gone (or its pid reused)"};
  auto held =
      hold_init(record.id, record.init_pid, record.init_start_time, std::move(*pidfd), false);
  if (!held) return held.error();
  auto init = held->init;
  if (const uint32_t slot = slot_of(record))
    if (auto s = networks_->adopt(slot); !s) return s.error();
  if (const uint32_t id_slot = id_slot_of(record)) (void)ranges_->hold(id_slot);
  // Adopted running: a paused sandbox's init accepts no connection (the
  // daemon pauses it again once it is in place).
  (void)cgroup::set_frozen(cgroups_, record.id, false);
  auto sandbox = connect(record, std::move(*held));
  if (sandbox) track(init);
  return sandbox;
}

Status LocalRuntime::remove_leftovers(const std::string& id) {
  Status result;
  if (cgroups_.version != cgroup::Version::kNone) result = cgroup::remove(cgroups_, id);
  std::error_code ec;
  fs::remove_all(state_of(id), ec);
  if (ec && result) result = Error{"remove state dir", ec.value(), state_of(id).string()};
  return result;
}

Status LocalRuntime::destroy(const SandboxRecord& record) {
  if (!ids::is_valid_sandbox_id(record.id))
    return Error{"destroy sandbox", EINVAL, "bad id " + record.id};
  // A paused sandbox's init takes the SIGKILL only once thawed.
  (void)cgroup::set_frozen(cgroups_, record.id, false);
  Status killed;
  if (auto init = untrack(record.id)) {
    init->set_destroying();
    const bool unreaped = reaper_.forget(record.id);
    killed = kill_init(init->pidfd(), init->child() && unreaped);
  } else if (auto pidfd = open_recorded_pidfd(record.init_pid, record.init_start_time)) {
    killed = kill_init(pidfd->get(), false);  // left by an earlier daemon: not our child
  }
  if (const uint32_t slot = slot_of(record)) networks_->release(slot);
  if (const uint32_t id_slot = id_slot_of(record)) ranges_->give_back(id_slot);
  Status cleaned = remove_leftovers(record.id);
  return killed ? cleaned : killed;
}

// The writable layer lives on the staging tmpfs, which dies with the
// processes and is not in CRIU's images: saved first, through init's fd.
Status save_writable_layer(pid_t init, const fs::path& images) {
  const std::string layer =
      "/proc/" + std::to_string(init) + "/fd/" + std::to_string(proto::kWritableLayerFd) + "/";
  struct stat st {};
  if (::stat(layer.c_str(), &st) != 0) return {};  // a build's layer is a host dir already
  auto pid = spawn_helper("/usr/bin/tar",
                          {"tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-C", layer,
                           "-cf", (images / "upper.tar").string(), "."},
                          images / "tar.out");
  if (!pid) return pid.error();
  int status = 0;
  while (::waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{"checkpoint: save the writable layer", EIO, (images / "tar.out").string()};
  return {};
}

Status LocalRuntime::checkpoint(Sandbox& sandbox, const fs::path& images) {
  if (!checkpoints_.available) return Error{"checkpoint", ENOTSUP, checkpoints_.reason};
  auto* local = dynamic_cast<LocalSandbox*>(&sandbox);
  if (local == nullptr) return Error{"checkpoint", EINVAL, "not a sandbox of this runtime"};
  if (slot_of(local->record()) != 0 || user_net_)
    return Error{"checkpoint", ENOTSUP,
                 "a sandbox with a network cannot be checkpointed yet (its network would not come "
                 "back on restore)"};
  auto rootfs = read_file(state_of(local->record().id) / kRootfsFile);
  if (!rootfs || rootfs->rfind("unrestorable: ", 0) == 0)
    return Error{
        "checkpoint", ENOTSUP,
        "this sandbox cannot be checkpointed: " +
            (rootfs ? rootfs->substr(14, rootfs->size() - 15) : "it predates checkpoints")};
  if (::mkdir(images.c_str(), 0700) != 0)
    return Error::from_errno("checkpoint: create the image dir", images.string());
  if (auto s = local->set_frozen(false); !s) return s;
  if (auto s = local->prepare_checkpoint(); !s) return s;
  const std::shared_ptr<InitHandle>& init = local->init();
  if (auto s = save_writable_layer(init->pid(), images); !s) return s;
  // Its exit is the dump's, nobody's news; and ours to reap: the reaper,
  // woken while CRIU still traces it, would find nothing to reap yet and
  // let it go, leaving a zombie.
  init->set_destroying();
  const bool watched = reaper_.forget(init->id());
  Status dumped = criu_dump(checkpoints_.criu, init->pid(), images);
  if (!dumped) {
    if (watched) reaper_.watch(init);  // CRIU let it run on: destroy() reaps it
    return dumped;
  }
  siginfo_t info{};
  if (init->child() && watched)
    while (::waitid(kPidfdIdType, static_cast<id_t>(init->pidfd()), &info, WEXITED) != 0 &&
           errno == EINTR) {
    }
  return {};
}

// The staging tmpfs and host sources go under a fresh dir of /run that
// sandbox root may traverse (CRIU opens mount sources as sandbox root); the
// restored mounts keep what they need, the dir goes when the restore ends.
Result<std::unique_ptr<Sandbox>> LocalRuntime::restore(const SandboxRecord& record,
                                                       const fs::path& images) {
  if (!checkpoints_.available) return Error{"restore", ENOTSUP, checkpoints_.reason};
  if (!ids::is_valid_sandbox_id(record.id)) return Error{"restore", EINVAL, "bad id " + record.id};
  {
    std::lock_guard lock(inits_mutex_);
    auto it = inits_.find(record.id);
    if (it != inits_.end() && !pidfd_exited(it->second->pidfd()))
      return Error{"restore", EBUSY, "sandbox " + record.id + " is running, not checkpointed"};
  }
  const fs::path state = state_of(record.id);
  auto rootfs = read_file(state / kRootfsFile);
  if (!rootfs || rootfs->empty() || rootfs->rfind("unrestorable: ", 0) == 0)
    return Error{"restore", ENOENT, "sandbox " + record.id + " has no restorable rootfs record"};
  RestoreSpec spec;
  spec.criu = checkpoints_.criu;
  spec.images = fs::absolute(images);
  // CRIU looks for some images as the restored tasks (sandbox root): a
  // missing one must be ENOENT, not EACCES. The files stay root's 0600.
  if (::chmod(spec.images.c_str(), 0711) != 0)
    return Error::from_errno("restore: the image dir", spec.images.string());
  spec.uid_zero = record.host_uid_base;
  spec.disk_bytes = record.limits.disk_bytes;
  std::istringstream layers(*rootfs);
  for (std::string layer; std::getline(layers, layer);)
    if (!layer.empty()) spec.layers.emplace_back(layer);
  if (const uint32_t id_slot = id_slot_of(record)) {
    auto ns = ranges_->translation(id_slot);
    if (!ns) return ns.error();
    spec.translation = *ns;
  }
  spec.join = [this, &record](pid_t pid) {
    return cgroups_.version == cgroup::Version::kNone ? Status{}
                                                      : cgroup::attach(cgroups_, record.id, pid);
  };
  char work[] = "/run/abx-restore-XXXXXX";
  if (::mkdtemp(work) == nullptr || ::chmod(work, 0711) != 0)
    return Error::from_errno("restore: make a staging dir", work);
  spec.work = work;
  auto pid = criu_restore(spec);
  tear_down_stage(spec.work);
  if (!pid) return pid.error();
  SandboxRecord restored = record;
  restored.init_pid = *pid;
  restored.init_start_time = process_start_time(*pid);
  auto pidfd = open_recorded_pidfd(*pid, restored.init_start_time);
  if (!pidfd) return pidfd.error();
  // A new listener where the daemon looks for init's, handed to init
  // through the pair it kept since the checkpoint. A restored tree nobody
  // can reach is killed (its pid namespace goes with init): the images stay.
  ::unlink((state / kSocketName).c_str());
  auto listen = listen_control(state / kSocketName);
  Status handed = listen ? hand_listener(pidfd->get(), listen->get()) : Status(listen.error());
  if (!handed) {
    (void)::syscall(SYS_pidfd_send_signal, pidfd->get(), SIGKILL, nullptr, 0);
    return handed.error();
  }
  listen->reset();
  auto held = hold_init(record.id, *pid, restored.init_start_time, std::move(*pidfd), false);
  if (!held) return held.error();
  // CRIU brought init's shield back (-1000), but its children could not reset
  // theirs (agent/launch.cc already_unshielded): a restored init goes unshielded.
  if (auto s = unshield(*pid); !s) return s.error();
  if (auto s = write_init_file(state / kInitFile, *pid, restored.init_start_time); !s)
    return s.error();
  auto init = held->init;
  track(init);
  return connect(restored, std::move(*held));
}

void LocalRuntime::sweep_orphans(const std::vector<std::string>& live_ids) {
  std::set<std::string> candidates;
  for (const auto& id : cgroup::list(cgroups_)) candidates.insert(id);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config_.state_dir, ec))
    if (entry.is_directory()) candidates.insert(entry.path().filename().string());
  // Asked after the listing: a pool sandbox whose making began in between
  // has a dir above and is among the pool's ids now (asked before, it was
  // swept while being made, and the pool stopped refilling).
  const std::vector<std::string> pooled = pool_.ids();
  for (const auto& id : candidates) {
    if (std::find(live_ids.begin(), live_ids.end(), id) != live_ids.end()) continue;
    if (std::find(pooled.begin(), pooled.end(), id) != pooled.end()) continue;
    SandboxRecord record;
    record.id = id;
    if (auto pid_file = read_file(state_of(id) / kInitFile))
      std::istringstream(*pid_file) >> record.init_pid >> record.init_start_time;
    (void)destroy(record);
  }
  // Daemons with another state dir that were killed left their instance's
  // cgroup dirs; those that hold no sandbox go (see the function for why
  // this is safe while such a daemon runs).
  (void)cgroup::remove_other_empty_instances(cgroups_);
  if (networks_) networks_->sweep();
}

// Root only, and where idmapped mounts work on the state dir's filesystem
// (where the layers are); else every sandbox maps to `ids`, with a warning.
std::unique_ptr<IdRanges> own_ranges(const user::IdMap& ids, const fs::path& state_dir,
                                     std::vector<std::string>* warnings) {
  if (::geteuid() != 0 || !ids.full()) return nullptr;
  const fs::path region_file = state_dir / "uid-region";
  auto previous = read_file(region_file);
  auto ranges = IdRanges::claim(ids, previous ? std::atoi(previous->c_str()) : -1, kIdLockDir);
  Status usable = ranges ? (*ranges)->probe(state_dir) : Status{ranges.error()};
  if (!usable) {
    warnings->push_back("every sandbox maps to the same host uid range (" +
                        usable.error().message() +
                        "): one sandbox's uid can reach on the host what another's can");
    return nullptr;
  }
  UniqueFd fd(::open(region_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (fd.valid())
    (void)write_all(fd.get(), std::to_string((*ranges)->region()) + "\n", "write", "uid region");
  return std::move(*ranges);
}

}  // namespace

Result<std::unique_ptr<Runtime>> open_runtime(const RuntimeConfig& config) {
  std::error_code ec;
  fs::create_directories(config.state_dir, ec);
  if (ec) return Error{"create state dir", ec.value(), config.state_dir.string()};
  if (::chmod(config.state_dir.c_str(), 0700) != 0)
    return Error::from_errno("chmod state dir", config.state_dir.string());
  auto image = spawner::load_init_image(config.init_binary, fs::absolute(config.state_dir));
  if (!image) return image.error();
  auto seccomp_bpf = seccomp_policy::compile();
  if (!seccomp_bpf) return seccomp_bpf.error();
  std::vector<std::string> warnings;
  const user::IdMap ids = user::choose(&warnings);
  const bool shield_init = has_capability(CAP_SYS_RESOURCE);
  if (!shield_init)
    warnings.push_back(
        "no CAP_SYS_RESOURCE: a sandbox's init is not shielded from the OOM killer, so a memory "
        "hog may take the whole sandbox down instead of only itself");
  cgroup::Layout cgroups =
      cgroup::detect(cgroup::instance_name(fs::absolute(config.state_dir)), &warnings);
  std::unique_ptr<Lxcfs> lxcfs =
      config.lxcfs_dir.empty() ? nullptr : Lxcfs::start(config.lxcfs_dir, &warnings);
  RuntimeConfig effective = config;
  effective.state_dir = fs::absolute(config.state_dir);
  effective.default_limits = fill_defaults(config.default_limits, kBuiltinLimits);
  std::shared_ptr<Networks> networks;
  std::optional<std::string> user_net;  // its nameserver, when slirp4netns serves
  if (config.network.enabled && ::geteuid() != 0) user_net = choose_user_net(&warnings);
  if (config.network.enabled && ::geteuid() == 0) {
    auto opened = Networks::open(config.network, effective.state_dir, &warnings);
    if (opened)
      networks = std::move(*opened);
    else
      warnings.push_back("sandbox networks unavailable (" + opened.error().message() +
                         "): every sandbox has loopback only and no internet");
  }
  std::unique_ptr<IdRanges> ranges = own_ranges(ids, effective.state_dir, &warnings);
  return std::unique_ptr<Runtime>(std::make_unique<LocalRuntime>(
      std::move(effective), std::move(*image), std::move(*seccomp_bpf), ids, std::move(ranges),
      std::move(cgroups), shield_init, std::move(lxcfs), std::move(networks), std::move(user_net),
      std::move(warnings),
      probe_checkpoint(effective.state_dir / "criu-check.log", config.checkpoints)));
}

}  // namespace abx::runtime
