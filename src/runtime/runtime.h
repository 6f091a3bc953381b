// The local runtime's interface: everything the daemon may know about how a
// sandbox is made. Nothing here knows HTTP; nothing outside src/runtime knows
// namespaces, mounts, cgroups or seccomp.
//
// Model: a sandbox is one PID-1 process (abx-init) inside fresh user, pid,
// mount, ipc, uts, cgroup and net namespaces, rooted in an overlayfs. The
// daemon talks to it over a unix socket whose path lives in the sandbox's
// state directory on the host, so a restarted daemon can reconnect
// (`Runtime::adopt`). Starting a command is one request to init; init forks,
// execs and hands the pipes (or the PTY master) back by fd passing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/unique_fd.h"
#include "egress/policy.h"
#include "runtime/checkpoint.h"
#include "runtime/file_request.h"
#include "runtime/layer_copy.h"
#include "runtime/layer_diff.h"

namespace abx::runtime {

namespace fs = std::filesystem;

// Resource limits; zero means "runtime default". Users may override at create.
struct Limits {
  uint64_t memory_bytes = 0;    // default 512 MiB (memory.limit + memsw on v1, memory.max on v2)
  uint64_t pids = 0;            // default 256
  uint32_t cpu_millicores = 0;  // default 1000 (one CPU)
  uint64_t disk_bytes = 0;      // size of the tmpfs holding the writable layer; default 1 GiB
};

// A read-only bind of a host path into the sandbox (used by the `host` template).
struct BindMount {
  fs::path host_path;
  fs::path sandbox_path;  // absolute, inside the sandbox
};

// What the root filesystem is made of. Produced by src/templates.
struct RootfsSpec {
  std::vector<fs::path> lower_layers;      // overlay lowerdirs, topmost first, read-only
  std::vector<BindMount> read_only_binds;  // mounted after the overlay, before pivot_root
  // Empty: the writable layer is a tmpfs that dies with the sandbox. Else a
  // host dir holding empty `upper/` and `work/` dirs (one filesystem, owned
  // by the host uid of sandbox root): the writable layer lives there and
  // outlives the sandbox, so a template build can keep it as a layer.
  fs::path writable_dir;
  // Volumes: host dirs (owned by the shared range, as layers are) bound
  // read-write, idmapped like the layers, so every sandbox that mounts one
  // sees the same owners. Mounted after the read-only binds; the sandbox
  // path is resolved inside the root (a template's link there stays inside).
  std::vector<BindMount> volumes;
  // false (every template but those whose spec.toml says allow_setid, and
  // those built FROM them): every process has no_new_privs, so set-id bits
  // and file capabilities give nothing. true: they work (sudo), up to sandbox
  // root in its user namespace under the same seccomp filter.
  bool allow_setid = false;
};

struct SandboxSpec {
  // [a-z0-9]+, unique. Empty: the runtime chooses the id, possibly handing
  // out a sandbox from its warm pool; read it from record().id.
  std::string id;
  RootfsSpec rootfs;
  Limits limits;
  std::string hostname;  // default: id
  // false: loopback only. Else a network of its own (runtime/networks.h)
  // that reaches nothing until Sandbox::set_egress; a sandbox with a
  // writable dir (a build) gets the gateway as resolver by a bind over
  // /etc/resolv.conf, which stays out of the layer.
  bool network = true;
  // Opaque to the runtime; empty: none. A pooled sandbox made from this spec
  // is handed, once made, to RuntimeConfig::warm_up with it, off the request
  // path (the daemon starts interpreters there); part of the pool key.
  std::string warm_up;
  // Non-zero: the sandbox's agent also serves its protocol on this TCP port
  // of the sandbox's network, to clients that show `agent_token` (the
  // transport for a daemon on another host: agent/protocol.h, AgentTcpClient).
  uint16_t agent_port = 0;
  std::string agent_token;
};

// Everything needed to find a live sandbox again after the daemon restarts.
// The daemon persists it verbatim.
struct SandboxRecord {
  std::string id;
  pid_t init_pid = 0;            // host pid of the sandbox's PID 1
  uint64_t init_start_time = 0;  // /proc/<pid>/stat starttime: guards against pid reuse
  fs::path state_dir;            // host dir holding the control socket
  uid_t host_uid_base = 0;       // sandbox uid 0 maps to this host uid
  Limits limits;                 // effective limits (defaults filled in)
  uint32_t net_address = 0;      // its IPv4 address (host order); 0: loopback only
};

struct ProcessSpec {
  std::vector<std::string> argv;           // argv[0] is resolved inside the sandbox, e.g. /bin/bash
  std::map<std::string, std::string> env;  // the complete environment
  std::string cwd = "/home/user";
  uint32_t uid = 1000;  // sandbox uid (1000 = `user`, 0 = `root`)
  uint32_t gid = 1000;
  bool pty = false;
  uint16_t pty_cols = 80, pty_rows = 24;
  bool stdin_pipe = true;  // false: stdin is /dev/null
  // Non-empty: the sandbox supervises the process, so it outlives the
  // daemon: its init keeps the output pipes (or the pty) open while no daemon
  // reads them, and hands the process, with this label, to the next daemon
  // (Sandbox::adopt_processes). At most kMaxProcessLabel bytes.
  std::string supervise_label;
  // With supervise_label: the command's timeout (0: none), which init enforces
  // itself while no daemon holds the process (a daemon that does enforces it).
  uint32_t supervise_timeout_ms = 0;
  // With supervise_label and a stdin pipe: init keeps its write end too, so
  // the process never reads EOF when a daemon goes (an interpreter context's
  // driver, which reads its requests there); the next daemon gets it back.
  bool supervise_stdin = false;
  // Non-zero: the size of each output pipe (F_SETPIPE_SZ), which is what a
  // supervised process may write while no daemon reads before it waits.
  size_t output_buffer_bytes = 0;
  // Non-zero, with supervise_label and pipes (not a pty): the sandbox's agent
  // relays the output and keeps its newest this many bytes, so any client
  // can read it again from an offset (Sandbox::read_output), also after the
  // daemon restarted or the command ended, and the command never waits on a
  // full pipe while no daemon reads (what it writes past this is dropped).
  size_t output_ring_bytes = 0;
};
inline constexpr size_t kMaxProcessLabel = 32 * 1024;

// Output a supervised command wrote, as its agent keeps it: offsets count
// every byte the command wrote to stdout and stderr, from its first.
enum class OutputStream : uint8_t { kStdout = 1, kStderr = 2 };
struct OutputChunk {
  OutputStream stream = OutputStream::kStdout;
  uint64_t offset = 0;
  std::string bytes;
};
struct OutputSlice {
  uint64_t start = 0;               // the oldest byte still kept
  uint64_t end = 0;                 // one past the newest byte written so far
  std::vector<OutputChunk> chunks;  // from the asked offset (or `start`), in order
  bool ended = false;               // the command was reaped
  int32_t wait_status = 0;          // as from waitpid, when `ended`
};

struct Process {
  int pid = 0;         // pid inside the sandbox (what E2B calls the pid)
  UniqueFd stdin_fd;   // write end, or invalid (no stdin pipe / pty)
  UniqueFd stdout_fd;  // read end (invalid with a pty)
  UniqueFd stderr_fd;  // read end (invalid with a pty)
  UniqueFd pty_fd;     // pty master, read+write (only with pty)
  // Becomes readable when the process has been reaped: it then yields one
  // int32 wait status (as from waitpid) and EOF. EOF without a status means
  // the sandbox died.
  UniqueFd exit_fd;
};

// Decode a wait status into E2B's terms.
struct ExitInfo {
  int exit_code = 0;    // exit status, or 128+signal, or -1 if unknown
  bool exited = false;  // true if the process exited normally
  std::string status;   // "exit status 0" / "signal: killed" (Go's os.ProcessState wording)
};
ExitInfo decode_wait_status(int status);

// A supervised process found running (or ended, its status waiting in
// exit_fd) by a daemon that adopted its sandbox.
struct AdoptedProcess {
  Process process;  // stdin only if init kept it (ProcessSpec::supervise_stdin)
  std::string label;
  bool ended = false;
};

// A process of a sandbox, as its pid namespace numbers it (ppid 0: its
// parent is outside the sandbox, or gone).
struct ProcessEntry {
  int pid = 0;
  int ppid = 0;
  std::string command;  // its command line, arguments joined by spaces
};

inline constexpr size_t kMaxInputPiece = 64 * 1024;

// Why a sandbox refuses in-band commands: its agent predates them, or the
// runtime has none.
inline constexpr const char* kNoInBand =
    "this sandbox's agent runs no in-band commands (it predates them): recreate the sandbox";

// Follows one in-band command's output (Sandbox::follow_output) without
// holding a thread: ask() sends a read that waits up to `wait_ms` for output
// past `offset`; fd() becomes readable when its answer has come; answer()
// takes it without blocking (nullopt while it has not come). ask_next()
// asks for what follows the answer to the read before it, so a second read
// may be on its way before the first is answered (the agent answers them in
// order, one after the other, and never waits for the daemon to wake up);
// answers come in the order asked. A slice with `ended` and nothing past
// the offset is the last.
class OutputFollower {
 public:
  virtual ~OutputFollower() = default;
  virtual int fd() const = 0;
  virtual Status ask(uint64_t offset, uint32_t wait_ms) = 0;
  virtual Status ask_next(uint32_t wait_ms) = 0;
  virtual Result<std::optional<OutputSlice>> answer() = 0;
};

// A command the sandbox's agent supervises, as it lists them (the label is
// ProcessSpec::supervise_label).
struct ListedProcess {
  int pid = 0;
  bool ended = false;
  bool pty = false;
  std::string label;
  bool in_band = false;    // Sandbox::spawn_in_band's (else its fds went to a daemon)
  uint64_t delivered = 0;  // the output offset its last follower got to
  bool has_stdin = false;  // its stdin is open (a pipe the agent writes kInput to)
};

class Sandbox {
 public:
  virtual ~Sandbox() = default;
  virtual const SandboxRecord& record() const = 0;

  // Start a process inside the sandbox. Thread-safe.
  virtual Result<Process> spawn(const ProcessSpec& spec) = 0;

  // Send a signal to a process (pid inside the sandbox). Thread-safe.
  virtual Status signal(int pid, int signo) = 0;
  // The sandbox lets go of its copy of a supervised process's stdin
  // (ProcessSpec::supervise_stdin), so closing the caller's gives it EOF.
  virtual Status close_stdin(int /*pid*/) { return {}; }

  // A regular file opened for reading by the sandbox's init as sandbox
  // uid/gid, so that user's permissions apply (see runtime/sandbox_fs.h).
  // Thread-safe. ENOSYS: this sandbox cannot (its init predates the request).
  virtual Result<UniqueFd> open_as(const std::string& /*path*/, uint32_t /*uid*/,
                                   uint32_t /*gid*/) const {
    return Error{"open as a sandbox user", ENOSYS, {}};
  }

  // Runs one file operation inside the sandbox (runtime/file_request.h): a
  // worker forked by its init, in its namespaces and memory cgroup, as
  // request.uid/gid. kWrite returns once the file is open (see
  // sandbox_fs::FileWriter). Thread-safe. ENOSYS: this sandbox cannot (its
  // init predates file workers).
  virtual Result<FileResult> file_op(const FileRequest& /*request*/) const {
    return Error{"file operation in the sandbox", ENOSYS, kNoFileWorkers};
  }

  // An O_PATH directory fd of the sandbox's root as the host sees it; use it
  // only with openat2(RESOLVE_IN_ROOT) (see runtime/sandbox_fs.h).
  virtual int root_fd() const = 0;

  // Host uid/gid for a sandbox uid/gid (for chown of files the daemon writes).
  virtual uid_t host_uid(uint32_t sandbox_uid) const = 0;
  virtual gid_t host_gid(uint32_t sandbox_gid) const = 0;

  // Why the sandbox stopped on its own, e.g. "its init was killed (out of
  // memory)"; empty while it runs. See Runtime::on_stopped.
  virtual std::string stopped_reason() const { return {}; }

  // The sandbox's network namespace, held open for its whole life (never
  // reached through a pid number); -1 if it has none. For runtime/sandbox_net.
  virtual int net_ns_fd() const { return -1; }

  // The sandbox's IPv4 address on its network (host byte order), by which
  // the daemon's DNS forwarder and egress proxy know it; 0: loopback only.
  virtual uint32_t address() const { return 0; }

  // Replaces what the sandbox may reach (the always-denied set stays
  // closed), atomically; packets of open connections the new policy forbids
  // meet a reset. A new sandbox reaches nothing until this is called.
  // ENOSYS: the sandbox has no network.
  virtual Status set_egress(const egress::Policy& /*policy*/) {
    return Error{"set egress policy", ENOSYS, "the sandbox has no network"};
  }

  // Asks init to get ready for CRIU (proto::RequestType::kPrepareCheckpoint):
  // it stops serving and drops the daemon's connections, so nothing may be
  // asked of the sandbox after this but Runtime::checkpoint or destroy.
  virtual Status prepare_checkpoint() {
    return Error{"checkpoint", ENOTSUP, "this runtime cannot checkpoint sandboxes"};
  }

  // Pause: every process of the sandbox stops where it stands (init too, so
  // nothing may be asked of the sandbox until it is thawed); resume goes on.
  virtual Status set_frozen(bool /*frozen*/) {
    return Error{"pause", ENOTSUP, "this runtime cannot pause sandboxes"};
  }

  // Copies the sandbox's writable layer (what it changed on top of its
  // template) into `into`, an empty directory fd of the caller's, as
  // runtime/layer_copy.h says. Freeze the sandbox first for a consistent
  // copy. ENOTSUP: this sandbox has no such layer (a build's, or an init
  // from before snapshots).
  virtual Result<layer_copy::Copied> copy_writable_layer(
      int /*into*/, const layer_copy::Limits& /*limits*/) const {
    return Error{"snapshot the sandbox", ENOTSUP, "this sandbox's writable layer cannot be copied"};
  }

  // What the sandbox changed on top of `lowers` (the layers under its
  // writable layer, topmost first), like `docker diff` (runtime/layer_diff.h).
  virtual Result<layer_diff::Diff> diff_writable_layer(
      const std::vector<fs::path>& /*lowers*/) const {
    return Error{"diff the sandbox", ENOTSUP, "this sandbox's writable layer cannot be read"};
  }

  // Current memory/cpu use from the sandbox's cgroups, and the bytes its
  // writable layer holds.
  struct Usage {
    uint64_t memory_bytes = 0;
    uint64_t cpu_usage_ns = 0;  // since the sandbox started
    uint64_t disk_used_bytes = 0;
    // Bytes the sandbox received and sent on its network since it started
    // (its veth's counters, so traffic through the egress proxy too); 0
    // without a network.
    uint64_t net_rx_bytes = 0;
    uint64_t net_tx_bytes = 0;
  };
  virtual Usage usage() const = 0;
  // How many processes the kernel's OOM killer has killed in the sandbox
  // (its memory limit reached) since it started; 0 where nothing counts them.
  virtual uint64_t oom_kills() const { return 0; }

  // A supervised command's output from `offset` on, at most `max` bytes
  // (runtime::ProcessSpec::output_ring_bytes), kept by the sandbox's agent.
  virtual Result<OutputSlice> read_output(int /*pid*/, uint64_t /*offset*/, size_t /*max*/) {
    return Error{"read output", ENOTSUP, "this runtime keeps no command output"};
  }
  // The supervised processes (ProcessSpec::supervise_label) whose daemon
  // went away: from now on this daemon holds their output and exit. Empty
  // for a sandbox whose init predates supervision. Thread-safe.
  virtual Result<std::vector<AdoptedProcess>> adopt_processes() {
    return std::vector<AdoptedProcess>{};
  }

  // In-band commands: the agent runs them with pipes or a terminal of its
  // own and keeps their output (ProcessSpec::output_ring_bytes, a default
  // when 0), so no fd of them leaves the sandbox and any client, on this
  // host or another, any number over time, follows them by pid. The spec's
  // supervise_label and supervise_timeout_ms travel with it; the agent
  // enforces the timeout. Returns the pid. Thread-safe.
  virtual Result<int> spawn_in_band(const ProcessSpec& /*spec*/) {
    return Error{"spawn in band", ENOTSUP, kNoInBand};
  }
  // Bytes for an in-band command's stdin or terminal (at most
  // kMaxInputPiece), queued by the agent (EAGAIN while its queue is full:
  // send them again once it read).
  virtual Status send_input(int /*pid*/, const std::string& /*bytes*/) {
    return Error{"send input", ENOTSUP, kNoInBand};
  }
  virtual Status resize_terminal(int /*pid*/, uint16_t /*cols*/, uint16_t /*rows*/) {
    return Error{"resize terminal", ENOTSUP, kNoInBand};
  }
  virtual Result<std::unique_ptr<OutputFollower>> follow_output(int /*pid*/) {
    return Error{"follow output", ENOTSUP, kNoInBand};
  }
  // Every command the agent supervises: running, or ended and kept a while.
  virtual Result<std::vector<ListedProcess>> list_processes() {
    return Error{"list processes", ENOTSUP, kNoInBand};
  }

  // Every process of each command started through spawn() (the command and
  // what it started, by command pid), where the runtime keeps them apart.
  virtual std::map<int, std::vector<ProcessEntry>> command_processes() const { return {}; }

  // What RuntimeConfig::warm_up made for this sandbox while it waited in the
  // warm pool (null otherwise), handed over once. It must not refer to the
  // sandbox: it may outlive it, or die with it.
  std::shared_ptr<void> take_warm_up() { return std::move(warm_up_); }
  void set_warm_up(std::shared_ptr<void> state) { warm_up_ = std::move(state); }

 private:
  std::shared_ptr<void> warm_up_;
};

// How many flows of one kind a sandbox may have in the host's connection
// tracking table at once, and how many new ones per second (in bursts of).
struct FlowBound {
  uint32_t at_once, per_second, burst;
};

// Sandbox networks: a veth per sandbox, NAT out, nftables for the policy.
struct NetworkConfig {
  bool enabled = true;  // false: every sandbox has loopback only
  std::string pool;     // a /16 for sandbox addresses; empty: a free one of 10.200-10.254
  std::vector<std::string> open_private;  // private CIDRs an admin opens (a corporate proxy)
  uint16_t dns_port = 0;                  // the daemon's DNS forwarder (host namespace)
  uint16_t proxy_port = 0;                // the daemon's egress proxy (host namespace)
  // Flows a sandbox may have at once in the host's connection tracking table
  // (shared by everyone): its connections out and its flows to the DNS
  // forwarder and the egress proxy alike.
  uint32_t max_connections = 4096;
  // A sandbox's flows to the DNS forwarder (UDP and TCP; a resolver opens one
  // per lookup) and its connections redirected to the egress proxy (which
  // serves 128 per sandbox).
  FlowBound dns_flows{256, 20, 100};
  FlowBound proxy_flows{256, 50, 200};
  // Flows of all this daemon's sandboxes together (one count shared by all),
  // so many sandboxes cannot fill the table either; 0: half the host's
  // nf_conntrack_max as read at start (none where it cannot be read).
  uint32_t max_connections_all = 0;
  // For the daemon's egress proxy (the runtime ignores them): its table of
  // connections for all sandboxes (0: its default, 1024) and how long one may
  // move no byte before it is closed.
  uint32_t proxy_max_connections = 0;
  uint32_t proxy_idle_timeout_s = 60;
};

struct RuntimeConfig {
  fs::path state_dir;     // per-sandbox state dirs go under here (mode 0700)
  fs::path init_binary;   // the abx-init executable (loaded once into a sealed memfd)
  Limits default_limits;  // applied where a SandboxSpec leaves a limit at 0
  // Ready sandboxes kept per distinct (rootfs, limits, hostname) for creates
  // with an empty id; 0 disables the pool.
  size_t warm_pool_size = 2;
  // Run on the pool's thread for each pooled sandbox made from a spec with a
  // non-empty SandboxSpec::warm_up, before the sandbox is ready to take; what
  // it returns travels with the sandbox (Sandbox::take_warm_up).
  std::shared_ptr<void> (*warm_up)(Sandbox& sandbox, const std::string& warm_up) = nullptr;
  // Where to mount lxcfs for sandboxes' /proc views of their own limits;
  // empty: no lxcfs (sandboxes see the host's meminfo, uptime, ...).
  fs::path lxcfs_dir;
  NetworkConfig network;
  // Sandboxes may be checkpointed (Runtime::checkpoint). Where host root
  // lacks CAP_SYS_RESOURCE, CRIU may read the rlimits of a sandbox's tasks
  // only if root owns its user namespace, so then root owns them all, and
  // the kernel's per-user counts of what sandboxes make inside (inotify
  // instances, user namespaces, message queues) are charged to root rather
  // than to each sandbox's uid, as they are after any restore.
  bool checkpoints = false;
};

// Told, from a runtime thread, once for each sandbox whose init exited
// without destroy() being asked for (killed from the host, out of memory,
// crashed), with the reason in words ("its init was killed (out of
// memory)"). The sandbox is dead: the listener should destroy() it soon to
// reclaim its cgroups and state. It must not block.
class StopListener {
 public:
  virtual ~StopListener() = default;
  virtual void sandbox_stopped(const std::string& id, const std::string& reason) = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // Create and start a sandbox; returns once its init is ready for spawn().
  // With an empty spec.id the runtime picks the id, possibly from a warm pool
  // of sandboxes made earlier from an equal spec; read record().id.
  virtual Result<std::unique_ptr<Sandbox>> create(const SandboxSpec& spec) = 0;

  // Reconnect to a sandbox created by an earlier daemon. Fails (and the
  // caller should destroy()) if the init is gone or the pid was reused.
  virtual Result<std::unique_ptr<Sandbox>> adopt(const SandboxRecord& record) = 0;

  // Kill everything in the sandbox and remove its cgroups and state dir.
  // Idempotent: destroying a dead or half-made sandbox cleans what is left.
  virtual Status destroy(const SandboxRecord& record) = 0;

  // Remove cgroups and state dirs of sandboxes not in `live_ids` (left by a
  // daemon that was killed mid-create, or pooled by one that was killed).
  // This runtime's own pooled sandboxes are never swept.
  virtual void sweep_orphans(const std::vector<std::string>& live_ids) = 0;

  // Discards every ready sandbox of the warm pool (the pool refills on the
  // next creates): a template whose layers changed must not be served from
  // sandboxes made before the change.
  virtual void drain_pool() {}

  // Host uid/gid that a sandbox uid/gid maps to (the same for every sandbox
  // of this runtime). Template files that sandbox root or `user` must own are
  // chowned to these.
  virtual uid_t host_uid(uint32_t sandbox_uid) const = 0;
  virtual gid_t host_gid(uint32_t sandbox_gid) const = 0;

  // The egress policy of the sandbox at `address` (Sandbox::address), or
  // null when no sandbox of this runtime has it: the DNS forwarder and the
  // egress proxy ask this of every query and connection.
  virtual std::shared_ptr<const egress::Policy> egress_policy(uint32_t /*address*/) const {
    return nullptr;
  }

  // `listener` hears of each sandbox whose init exits without destroy()
  // being asked for; nullptr (set before the listener goes away) waits for
  // a call in progress.
  virtual void on_stopped(StopListener* /*listener*/) {}

  // Human-readable notes about degraded features (e.g. "cgroup limits
  // unavailable: not delegated"), logged once at daemon start.
  virtual std::vector<std::string> warnings() const = 0;

  // Whether sandboxes' processes can be checkpointed to disk (CRIU), and if
  // not, why in one line; probed once when the runtime opens.
  virtual CheckpointSupport checkpoint_support() const {
    return {false, "this runtime cannot checkpoint sandboxes", {}};
  }

  // Checkpoints `sandbox` into `images` (made here, must not exist): init
  // stops serving (Sandbox::prepare_checkpoint), the writable layer is
  // saved as images/upper.tar, and CRIU dumps every process, which then
  // ends, so the sandbox's memory is freed. Its uid range and network slot
  // stay held: afterwards restore() or destroy() is all that may be asked
  // (the Sandbox object is dead). Paused sandboxes are thawed first. A
  // sandbox with a network, volumes or a host writable dir is refused (they
  // would not come back yet: docs/design/criu-checkpoint.md).
  virtual Status checkpoint(Sandbox& /*sandbox*/, const fs::path& /*images*/) {
    return Error{"checkpoint", ENOTSUP, "this runtime cannot checkpoint sandboxes"};
  }

  // Brings the sandbox `record` checkpointed into `images` back under the
  // same id, uid range and cgroups: its processes go on where they stood,
  // with their memory and its writable layer. Returns its new handle (a new
  // init pid in record()); the images may be removed afterwards. Fails
  // (and the sandbox stays checkpointed) with CRIU's reason.
  virtual Result<std::unique_ptr<Sandbox>> restore(const SandboxRecord& /*record*/,
                                                   const fs::path& /*images*/) {
    return Error{"restore", ENOTSUP, "this runtime cannot checkpoint sandboxes"};
  }
};

Result<std::unique_ptr<Runtime>> open_runtime(const RuntimeConfig& config);

}  // namespace abx::runtime
