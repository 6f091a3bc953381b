#include "runtime/local_sandbox.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <optional>
#include <tuple>

#include "common/fd_io.h"
#include "runtime/agent_follower.h"
#include "runtime/file_client.h"
#include "runtime/process_tree.h"

namespace abx::runtime {
namespace {

// An init from before command groups (a sandbox adopted across an upgrade)
// cannot decode a spawn that carries one: it is asked again without.
bool is_older_init(const proto::Reply& reply) {
  return reply.errnum == EPROTO && reply.step == "decode request";
}

// Init is inside the sandbox, so what it hands over is checked before the
// daemon reads or writes it: output and exit ends are pipes, and a terminal
// is a pty master (the ptmx device, 5:2), never some other file of init's.
bool is_pipe(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

bool is_pty_master(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 &&
         minor(st.st_rdev) == 2;
}

// How long an adopting daemon waits for the whole list init hands over: a
// restart adopts every sandbox in turn, and one whose init drips its list
// must not hold the others (and the daemon's start) for long.
constexpr auto kAdoptWait = std::chrono::seconds(5);

}  // namespace

LocalSandbox::LocalSandbox(SandboxRecord record, UniqueFd control, Held held, user::IdMap ids,
                           user::IdMap stored_ids, cgroup::Layout cgroups,
                           std::shared_ptr<Networks> networks, bool user_net)
    : record_(std::move(record)),
      control_(std::move(control)),
      held_(std::move(held)),
      ids_(ids),
      stored_ids_(stored_ids),
      cgroups_(std::move(cgroups)),
      networks_(record_.net_address ? std::move(networks) : nullptr),
      user_net_(user_net) {}

Status LocalSandbox::set_egress(const egress::Policy& policy) {
  if (user_net_) return set_user_net(policy);
  if (!networks_) return Sandbox::set_egress(policy);
  return networks_->set_policy(networks_->pool().slot_of_address(record_.net_address), policy);
}

// All or nothing: slirp4netns runs while the policy opens the internet, and
// ending it cuts every connection when the policy closes it.
Status LocalSandbox::set_user_net(const egress::Policy& policy) {
  auto wanted = UserNet::wants_network(policy);
  if (!wanted) return wanted.error();
  std::lock_guard lock(user_net_mutex_);
  if (!*wanted) {
    slirp_.reset();
    return {};
  }
  if (slirp_ && slirp_->running()) return {};
  slirp_.reset();  // died (killed from outside?): a new one
  // slirp4netns finds the namespaces by pid: alive before and after, the
  // pid was init's the whole time (a live process's pid is never reused).
  const Error gone{"start slirp4netns", ESRCH, "the sandbox's init exited"};
  if (held_.init->exited()) return gone;
  auto attached = UserNet::attach(held_.init->pid(), record_.state_dir / "slirp4netns.log");
  if (!attached) return attached.error();
  if (held_.init->exited()) return gone;  // `attached` ends slirp4netns
  slirp_ = std::move(*attached);
  return {};
}

// Init answers a request in a millisecond or two, so a wait for the control
// connection means an init held up (sandbox root can starve a new process of
// CPU until init's exec wait runs out): its callers must not hold the
// daemon's shared threads for that long. They wait a moment, then are told
// to retry.
class LocalSandbox::Turn {
 public:
  // Waits for the turn, at most `wait` when given; had() says whether it came.
  Turn(const LocalSandbox& sandbox, std::optional<std::chrono::milliseconds> wait)
      : sandbox_(sandbox) {
    std::unique_lock lock(sandbox_.turn_mutex_);
    auto free = [&] { return !sandbox_.turn_taken_; };
    if (wait) {
      had_ = sandbox_.turn_free_.wait_for(lock, *wait, free);
    } else {
      sandbox_.turn_free_.wait(lock, free);
      had_ = true;
    }
    if (had_) sandbox_.turn_taken_ = true;
  }
  ~Turn() {
    if (!had_) return;
    {
      std::lock_guard lock(sandbox_.turn_mutex_);
      sandbox_.turn_taken_ = false;
    }
    sandbox_.turn_free_.notify_one();
  }
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  bool had() const { return had_; }

 private:
  const LocalSandbox& sandbox_;
  bool had_ = false;
};

Result<std::string> LocalSandbox::exchange(const proto::Request& request,
                                           const std::vector<int>& fds,
                                           std::vector<UniqueFd>* received) const {
  constexpr auto kTurnWait = std::chrono::seconds(2);
  const Turn turn(*this, kTurnWait);
  if (!turn.had()) {
    Error busy = Error::with_message(
        "sandbox " + record_.id + " is busy starting other processes: retry in a moment",
        kErrQuota);
    busy.retry_after_s = 1;
    return busy;
  }
  if (frozen_) return paused_error();
  if (auto s = proto::send_message(control_.get(), proto::encode(request), fds); !s)
    return s.error();
  std::string bytes;
  auto got = proto::recv_message(control_.get(), &bytes, received);
  if (!got) return got.error();
  if (!*got) return Error{"sandbox init", ECONNRESET, "control connection closed"};
  return bytes;
}

Result<proto::Reply> LocalSandbox::call(const proto::Request& request, const std::vector<int>& fds,
                                        std::vector<UniqueFd>* received) const {
  auto bytes = exchange(request, fds, received);
  if (!bytes) return bytes.error();
  proto::Reply reply;
  if (!proto::decode(*bytes, &reply)) return Error{"sandbox init", EPROTO, "malformed reply"};
  return reply;
}

// An older agent keeps no command's stdin (see spawn): nothing to close.
Status LocalSandbox::close_stdin(int pid) {
  proto::Request request{proto::RequestType::kCloseStdin, {}, pid, 0};
  std::vector<UniqueFd> received;
  auto reply = call(request, {}, &received);
  if (!reply) return reply.error();
  if (!reply->ok() && !is_older_init(*reply)) return proto::error_from(*reply);
  return {};
}

Status LocalSandbox::prepare_checkpoint() {
  if (frozen_) return paused_error();
  proto::Request request{proto::RequestType::kPrepareCheckpoint, {}, 0, 0};
  std::vector<UniqueFd> received;
  auto reply = call(request, {}, &received);
  if (!reply) return reply.error();
  if (is_older_init(*reply))
    return Error{"checkpoint", ENOTSUP, "its init predates checkpoints: recreate the sandbox"};
  if (!reply->ok()) return proto::error_from(*reply);
  return {};
}

// An older agent answers a kRead it cannot decode with a plain Reply.
Result<OutputSlice> LocalSandbox::read_output(int pid, uint64_t offset, size_t max) {
  proto::Request request{proto::RequestType::kRead, {}, pid, 0};
  request.offset = offset;
  request.max_bytes = static_cast<uint32_t>(std::min<size_t>(max, proto::kMaxReadBytes));
  std::vector<UniqueFd> received;
  auto bytes = exchange(request, {}, &received);
  if (!bytes) return bytes.error();
  proto::ReadReply reply;
  if (proto::decode(*bytes, &reply)) {
    if (reply.errnum != 0) return Error::with_message(reply.step, reply.errnum);
    return std::move(reply.slice);
  }
  proto::Reply older;
  if (proto::decode(*bytes, &older) && is_older_init(older))
    return Error{"read output", ENOTSUP,
                 "this sandbox's agent is older and keeps no output: recreate the sandbox"};
  return Error{"sandbox init", EPROTO, "malformed reply"};
}

Status LocalSandbox::in_band_call(const proto::Request& request, const char* what) const {
  std::vector<UniqueFd> received;
  auto reply = call(request, {}, &received);
  if (!reply) return reply.error();
  if (is_older_init(*reply)) return Error{what, ENOTSUP, kNoInBand};
  if (!reply->ok()) return proto::error_from(*reply);
  return {};
}

// The command's own cgroup travels with it, as with spawn().
Result<int> LocalSandbox::spawn_in_band(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty())
    return Error{"spawn", EINVAL, "argv is empty: give the program to run"};
  const uint64_t unique = groups_made_.fetch_add(1);
  auto group = cgroup::open_command_group(cgroups_, record_.id, record_.limits, unique);
  if (!group) return group.error();
  cgroup::remove_ended_command_groups(cgroups_, record_.id);
  proto::Request request{proto::RequestType::kSpawn, spec, 0, 0};
  request.in_band = true;
  request.supervised = true;
  request.label = spec.supervise_label;
  request.timeout_ms = spec.supervise_timeout_ms;
  request.ring_bytes =
      static_cast<uint32_t>(std::min<size_t>(spec.output_ring_bytes, proto::kMaxRingBytes));
  request.command_group = group->procs.valid();
  std::vector<int> fds;
  if (request.command_group) fds.push_back(group->procs.get());
  std::vector<UniqueFd> received;
  auto reply = call(request, fds, &received);
  if (!reply) return reply.error();
  if (is_older_init(*reply)) return Error{"spawn in band", ENOTSUP, kNoInBand};
  if (!reply->ok()) return proto::error_from(*reply);
  if (request.command_group) (void)cgroup::name_command_group(*group, reply->pid, unique);
  return reply->pid;
}

static_assert(kMaxInputPiece == proto::kMaxInputBytes);

Status LocalSandbox::send_input(int pid, const std::string& bytes) {
  proto::Request request{proto::RequestType::kInput, {}, pid, 0};
  request.input = bytes;
  return in_band_call(request, "send input");
}

Status LocalSandbox::resize_terminal(int pid, uint16_t cols, uint16_t rows) {
  proto::Request request{proto::RequestType::kResize, {}, pid, 0};
  request.cols = cols;
  request.rows = rows;
  return in_band_call(request, "resize terminal");
}

// A paused agent's kernel still takes the connection and the read: its
// answer comes once the sandbox resumes, and nothing waits meanwhile.
Result<std::unique_ptr<OutputFollower>> LocalSandbox::follow_output(int pid) {
  auto connection = connect_control(record_.state_dir / kControlSocketName, /*wait=*/false);
  if (!connection) return connection.error();
  return make_control_follower(std::move(*connection), pid);
}

// kList: the agent's whole list, no fds.
Result<std::vector<ListedProcess>> LocalSandbox::list_processes() {
  std::vector<ListedProcess> out;
  Status listed = supervised_messages(
      proto::RequestType::kList, [&](const proto::Supervised& message, std::vector<UniqueFd>) {
        if (message.pid <= 1)
          return;  // not a command's (init is 1): the agent's list is not trusted
        out.push_back({message.pid, message.ended, message.pty, message.label, message.in_band,
                       message.delivered, message.has_stdin});
      });
  if (!listed) return listed.error();
  return out;
}

// Freezing waits for the request in flight on the control connection (and,
// a moment, for file operations) and refuses new ones first, so no daemon
// thread is left waiting on a frozen init.
Status LocalSandbox::set_frozen(bool frozen) {
  constexpr auto kFileOpsWait = std::chrono::seconds(2);
  if (!frozen) {
    Status thawed = cgroup::set_frozen(cgroups_, record_.id, false);
    if (thawed) frozen_ = false;
    return thawed;
  }
  const Turn turn(*this, std::nullopt);
  frozen_ = true;
  {
    std::unique_lock ops(file_ops_mutex_);
    (void)file_op_ended_.wait_for(ops, kFileOpsWait, [&] { return file_ops_ == 0; });
  }
  Status made = cgroup::set_frozen(cgroups_, record_.id, true);
  if (!made) frozen_ = false;
  return made;
}

// Init holds the layer at a known fd (proto::kWritableLayerFd); reopened
// through its /proc entry, and trusted only once the pidfd says the pid is
// still that init's. Whatever the fd names, it is something inside the
// sandbox, and layer_copy treats it as hostile.
Result<UniqueFd> LocalSandbox::writable_layer(const std::string& what) const {
  const std::string path = "/proc/" + std::to_string(held_.init->pid()) + "/fd/" +
                           std::to_string(proto::kWritableLayerFd);
  UniqueFd layer(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!layer.valid())
    return Error{what, ENOTSUP,
                 "its init keeps no writable layer (a build sandbox, or one started by an older "
                 "abx): recreate it"};
  if (held_.init->exited()) return Error{what, ESRCH, "its init exited"};
  struct statfs fs {};
  if (::fstatfs(layer.get(), &fs) != 0 || fs.f_type != TMPFS_MAGIC)
    return Error{what, ENOTSUP, "its writable layer is not a tmpfs"};
  return layer;
}

Result<layer_copy::Copied> LocalSandbox::copy_writable_layer(
    int into, const layer_copy::Limits& limits) const {
  auto layer = writable_layer("snapshot the sandbox");
  if (!layer) return layer.error();
  layer_copy::Limits stored = limits;
  if (ids_.uid_zero != stored_ids_.uid_zero) stored.owners = {ids_, stored_ids_};
  return layer_copy::copy(layer->get(), into, stored);
}

// The lowers are the daemon's template and snapshot layers (trusted); the
// layer is the sandbox's, which layer_diff treats as hostile.
Result<layer_diff::Diff> LocalSandbox::diff_writable_layer(
    const std::vector<fs::path>& lowers) const {
  auto layer = writable_layer("diff the sandbox");
  if (!layer) return layer.error();
  std::vector<UniqueFd> opened;
  std::vector<int> fds;
  for (const fs::path& lower : lowers) {
    UniqueFd fd(::open(lower.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    fds.push_back(fd.get());  // -1 when gone: that layer has nothing
    opened.push_back(std::move(fd));
  }
  return layer_diff::diff(layer->get(), fds);  // the fd is the overlay's upper dir
}

Error LocalSandbox::paused_error() const {
  return Error{"sandbox init", EBUSY, "sandbox " + record_.id + " is paused"};
}

// The overlay's statfs is its upper layer's: the size-limited tmpfs (or a
// build's writable dir) that holds what the sandbox wrote.

Sandbox::Usage LocalSandbox::usage() const {
  Usage u = cgroup::usage(cgroups_, record_.id);
  struct statfs st {};
  if (::fstatfs(held_.root.get(), &st) == 0)
    u.disk_used_bytes =
        static_cast<uint64_t>(st.f_blocks - st.f_bfree) * static_cast<uint64_t>(st.f_bsize);
  if (networks_)
    std::tie(u.net_rx_bytes, u.net_tx_bytes) = networks_->counters(record_.net_address);
  return u;
}

Result<Process> LocalSandbox::spawn(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv[0].empty())
    return Error{"spawn", EINVAL, "argv is empty: give the program to run"};
  Process process;
  std::vector<UniqueFd> child_ends;  // ours are closed once init holds its copies
  auto add_pipe = [&](UniqueFd* ours, bool we_read) -> Status {
    auto p = make_pipe();
    if (!p) return p.error();
    *ours = std::move(we_read ? p->read : p->write);
    child_ends.push_back(std::move(we_read ? p->write : p->read));
    return {};
  };
  Status piped = add_pipe(&process.exit_fd, true);
  if (piped && !spec.pty) {
    if (spec.stdin_pipe) piped = add_pipe(&process.stdin_fd, false);
    if (piped) piped = add_pipe(&process.stdout_fd, true);
    if (piped) piped = add_pipe(&process.stderr_fd, true);
  }
  if (!piped) return piped.error();
  if (spec.output_buffer_bytes > 0) {
    // Best effort: a pipe keeps the kernel's default size where it refuses.
    for (const UniqueFd* out : {&process.stdout_fd, &process.stderr_fd})
      if (out->valid())
        (void)::fcntl(out->get(), F_SETPIPE_SZ, static_cast<int>(spec.output_buffer_bytes));
  }

  const uint64_t unique = groups_made_.fetch_add(1);
  auto group = cgroup::open_command_group(cgroups_, record_.id, record_.limits, unique);
  if (!group) return group.error();
  cgroup::remove_ended_command_groups(cgroups_, record_.id);
  proto::Request request{proto::RequestType::kSpawn, spec, 0, 0};
  request.command_group = group->procs.valid();
  request.supervised = !spec.supervise_label.empty();
  request.label = spec.supervise_label;
  request.timeout_ms = spec.supervise_timeout_ms;
  request.keep_stdin =
      request.supervised && spec.supervise_stdin && !spec.pty && process.stdin_fd.valid();
  if (request.supervised && !spec.pty)
    request.ring_bytes =
        static_cast<uint32_t>(std::min<size_t>(spec.output_ring_bytes, proto::kMaxRingBytes));
  // The fds init needs, in proto::Request's order, for the request as it is.
  auto fds_for = [&] {
    std::vector<int> fds;
    for (const auto& fd : child_ends) fds.push_back(fd.get());
    if (request.supervised) {
      fds.push_back(process.exit_fd.get());
      if (!spec.pty) {
        fds.push_back(process.stdout_fd.get());
        fds.push_back(process.stderr_fd.get());
      }
      if (request.keep_stdin) fds.push_back(process.stdin_fd.get());
    }
    if (request.command_group) fds.push_back(group->procs.get());
    return fds;
  };
  std::vector<UniqueFd> received;
  auto reply = call(request, fds_for(), &received);
  // An older init knows no output ring, or no supervision (nor, older
  // still, command groups): it is asked again with less.
  if (reply && request.ring_bytes > 0 && is_older_init(*reply)) {
    request.ring_bytes = 0;
    // Nor can it close a kept stdin on request (kCloseStdin came with the
    // ring): a command's stdin (they ask for rings) is not kept there.
    if (spec.output_ring_bytes > 0) request.keep_stdin = false;
    reply = call(request, fds_for(), &received);
  }
  if (reply && request.supervised && is_older_init(*reply)) {
    request.supervised = false;
    request.keep_stdin = false;
    request.label.clear();
    reply = call(request, fds_for(), &received);
  }
  if (reply && request.command_group && is_older_init(*reply)) {
    request.command_group = false;
    reply = call(request, fds_for(), &received);
  }
  child_ends.clear();
  if (!reply || !reply->ok() || !request.command_group) cgroup::discard_command_group(*group);
  if (!reply) return reply.error();
  if (!reply->ok()) return proto::error_from(*reply);
  // Unnamed (cannot fail but for a vanished sandbox), the group still
  // bounds the command's processes; only a kill would not find it.
  if (request.command_group) (void)cgroup::name_command_group(*group, reply->pid, unique);
  if (spec.pty) {
    if (received.size() != 1 || !is_pty_master(received.front().get()))
      return Error{"spawn", EPROTO, "init sent no pty master"};
    process.pty_fd = std::move(received.front());
  }
  process.pid = reply->pid;
  return process;
}

// A SIGKILL ends the command and everything it started: its process group
// through init, then whatever left the group (setsid, double forks) through
// its cgroup.
Status LocalSandbox::signal(int pid, int signo) {
  proto::Request request{proto::RequestType::kSignal, {}, pid, signo};
  std::vector<UniqueFd> received;
  auto reply = call(request, {}, &received);
  Status group_killed;
  if (signo == SIGKILL && !frozen_)
    group_killed = cgroup::kill_command_group(cgroups_, record_.id, pid);
  if (!reply) return reply.error();
  if (!reply->ok()) return proto::error_from(*reply);
  return group_killed;
}

Result<std::vector<AdoptedProcess>> LocalSandbox::adopt_processes() {
  std::vector<AdoptedProcess> out;
  Status adopted = supervised_messages(
      proto::RequestType::kAdopt, [&](const proto::Supervised& message, std::vector<UniqueFd> fds) {
        if (auto process = adopted_process(message, std::move(fds)))
          out.push_back(std::move(*process));
      });
  if (!adopted && adopted.error().step == kNoInBand) return out;  // an older init: nothing kept
  if (!adopted) return adopted.error();
  return out;
}

// kAdopt and kList are answered with one Supervised message per process
// (the last `done`; pid 0 alone when there is none), each taken by `each`.
// An agent that cannot decode the request gives kNoInBand.
Status LocalSandbox::supervised_messages(
    proto::RequestType type,
    const std::function<void(const proto::Supervised&, std::vector<UniqueFd>)>& each) {
  const Turn turn(*this, std::nullopt);
  if (frozen_) return paused_error();
  const proto::Request request{type, {}, 0, 0};
  if (auto s = proto::send_message(control_.get(), proto::encode(request), {}); !s)
    return s.error();
  // A supervised process is a live one of the sandbox's, or one of the
  // last ended ones init keeps: more is not a process list.
  const size_t most = record_.limits.pids + 64;
  const auto deadline = std::chrono::steady_clock::now() + kAdoptWait;
  for (size_t messages = 0; messages <= most; ++messages) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd readable{control_.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&readable, 1, static_cast<int>(left.count())) != 1)
      return Error{"sandbox init", ETIMEDOUT, "no whole list of supervised processes"};
    std::string bytes;
    std::vector<UniqueFd> fds;
    auto got = proto::recv_message(control_.get(), &bytes, &fds);
    if (!got) return got.error();
    if (!*got) return Error{"sandbox init", ECONNRESET, "control connection closed"};
    proto::Supervised message;
    if (!proto::decode(bytes, &message)) {
      proto::Reply reply;
      if (messages == 0 && proto::decode(bytes, &reply) && is_older_init(reply))
        return Error{kNoInBand, ENOTSUP, {}};
      return Error{"sandbox init", EPROTO, "malformed list of supervised processes"};
    }
    if (message.pid == 0 && message.done) return {};
    each(message, std::move(fds));
    if (message.done) return {};
  }
  return Error{"sandbox init", EPROTO, "a list of supervised processes without an end"};
}

// What init sent for one process, checked: a pid of the sandbox's, and the
// fds a supervised process has (anything else is dropped, not trusted).
std::optional<AdoptedProcess> LocalSandbox::adopted_process(const proto::Supervised& message,
                                                            std::vector<UniqueFd> fds) {
  if (message.has_stdin && message.pty) return std::nullopt;
  const size_t expected = (message.pty ? 2u : 3u) + (message.has_stdin ? 1u : 0u);
  if (message.pid <= 1 || fds.size() != expected) return std::nullopt;
  for (size_t i = 0; i < fds.size(); ++i) {
    const bool master = message.pty && i == 1;
    if (master ? !is_pty_master(fds[i].get()) : !is_pipe(fds[i].get())) return std::nullopt;
  }
  AdoptedProcess adopted;
  adopted.label = message.label;
  adopted.ended = message.ended;
  adopted.process.pid = message.pid;
  adopted.process.exit_fd = std::move(fds[0]);
  if (message.pty) {
    adopted.process.pty_fd = std::move(fds[1]);
  } else {
    adopted.process.stdout_fd = std::move(fds[1]);
    adopted.process.stderr_fd = std::move(fds[2]);
    if (message.has_stdin) adopted.process.stdin_fd = std::move(fds[3]);
  }
  return adopted;
}

std::map<int, std::vector<ProcessEntry>> LocalSandbox::command_processes() const {
  static const size_t level = process_tree::own_pid_namespace_level();
  std::map<int, std::vector<ProcessEntry>> out;
  for (const auto& [command, host_pids] : cgroup::command_members(cgroups_, record_.id)) {
    auto& entries = out[command];
    for (const pid_t host_pid : host_pids)
      if (auto entry = process_tree::describe(host_pid, level)) entries.push_back(*entry);
  }
  return out;
}

Result<UniqueFd> LocalSandbox::open_as(const std::string& path, uint32_t uid, uint32_t gid) const {
  proto::Request request{proto::RequestType::kOpen, {}, 0, 0, {path, uid, gid}};
  std::vector<UniqueFd> received;
  auto reply = call(request, {}, &received);
  if (!reply) return reply.error();
  // An init started by an older daemon (adopted) does not know kOpen.
  if (reply->errnum == EPROTO && reply->step == "decode request")
    return Error{"open as a sandbox user", ENOSYS, "init too old"};
  if (!reply->ok()) return Error{reply->step, reply->errnum, {}};
  if (received.size() != 1) return Error{"open", EPROTO, "init sent no file"};
  return std::move(received.front());
}

// A connection of its own: a file operation may take a while, and never
// holds up spawns and signals on the shared one. At most a few at once per
// sandbox: each holds a daemon thread until it answers, and sandbox code can
// make that take up to the worker's deadline. A burst waits a moment for a
// turn (operations normally take a millisecond or two), then is refused.
Result<FileResult> LocalSandbox::file_op(const FileRequest& request) const {
  constexpr int kMaxFileOps = 4;
  constexpr auto kTurnWait = std::chrono::seconds(2);
  {
    std::unique_lock lock(file_ops_mutex_);
    if (frozen_) return paused_error();
    if (!file_op_ended_.wait_for(lock, kTurnWait, [&] { return file_ops_ < kMaxFileOps; })) {
      Error busy =
          Error::with_message("sandbox " + record_.id + " has " + std::to_string(kMaxFileOps) +
                                  " file operations in progress: retry when one has finished",
                              kErrQuota);
      busy.retry_after_s = 1;
      return busy;
    }
    ++file_ops_;
  }
  auto result = file_client::run(record_.state_dir / kControlSocketName, request);
  {
    std::lock_guard lock(file_ops_mutex_);
    --file_ops_;
  }
  file_op_ended_.notify_one();
  return result;
}

Result<ControlSocket> control_socket(const fs::path& path, const std::string& step) {
  ControlSocket out{UniqueFd(), sockaddr_un{}};
  out.address.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof out.address.sun_path)
    return Error{step, ENAMETOOLONG, path.string() + ": use a shorter state dir"};
  std::strcpy(out.address.sun_path, path.c_str());
  out.fd = UniqueFd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!out.fd.valid()) return Error::from_errno("socket");
  return out;
}

Result<UniqueFd> connect_control(const fs::path& socket_path, bool wait) {
  const std::string step = "connect sandbox control socket";
  auto sock = control_socket(socket_path, step);
  if (!sock) return sock.error();
  const int fd = sock->fd.get();
  if (!wait && ::fcntl(fd, F_SETFL, O_NONBLOCK) != 0) return Error::from_errno(step);
  const auto* addr = reinterpret_cast<const sockaddr*>(&sock->address);
  if (::connect(fd, addr, sizeof sock->address) != 0)
    return Error::from_errno(step, socket_path.string());
  if (!wait && ::fcntl(fd, F_SETFL, 0) != 0) return Error::from_errno(step);
  return std::move(sock->fd);
}

}  // namespace abx::runtime
