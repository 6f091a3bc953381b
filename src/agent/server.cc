#include "agent/server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include "agent/file_worker.h"
#include "agent/launch.h"
#include "agent/open_file.h"
#include "agent/output_relay.h"
#include "agent/tcp_clients.h"

namespace abx::agent {
namespace {

using Clock = std::chrono::steady_clock;

class Server {
 public:
  Server(int listen_fd, int signal_fd, const proto::InitConfig& config, int tcp_listen_fd)
      : listen_fd_(listen_fd), signal_fd_(signal_fd), config_(config) {
    if (tcp_listen_fd >= 0) tcp_.emplace(tcp_listen_fd, config.tcp_token);
  }

  [[noreturn]] void run() {
    for (;;) {
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
      for (const auto& c : clients_)
        if (!busy(c.get())) fds.push_back({c.get(), POLLIN, 0});
      const size_t first_parked = fds.size();
      for (const auto& [client, parked] : parked_reads_)  // POLLRDHUP: the follower went away
        fds.push_back({client, POLLRDHUP, 0});
      const size_t first_worker = fds.size();
      for (const auto& [pid, w] : workers_)
        if (!w.hung_up) fds.push_back({w.session.get(), 0, 0});  // POLLHUP: the daemon hung up
      const size_t first_start = fds.size();
      for (const auto& [client, start] : starts_)
        fds.push_back({start.launched.report.get(), POLLIN, 0});
      const size_t first_tcp = fds.size();
      if (tcp_) tcp_->add_pollfds(&fds, [this](int fd) { return busy(fd); });
      const size_t first_input = fds.size();
      std::vector<pid_t> input_of;
      for (const auto& [pid, process] : supervised_)
        if (!process.pending_input.empty()) {
          fds.push_back({input_fd(process.kept), POLLOUT, 0});
          input_of.push_back(pid);
        }
      const size_t first_relay = fds.size();
      std::vector<OutputRelay*> relay_of;
      for (auto& [pid, relay] : relays_) {
        relay.add_pollfds(&fds);
        relay_of.resize(fds.size() - first_relay, &relay);
      }
      if (::poll(fds.data(), fds.size(), next_deadline_ms()) < 0) continue;  // EINTR
      for (size_t i = first_relay; i < fds.size(); ++i)
        if (fds[i].revents) relay_of[i - first_relay]->handle(fds[i]);
      for (size_t i = first_input; i < first_relay; ++i)
        if (fds[i].revents) write_input(input_of[i - first_input]);
      for (size_t i = first_tcp; i < first_input; ++i)
        if (fds[i].revents) serve_tcp(fds[i]);
      if (fds[1].revents) reap();
      if (fds[0].revents) accept_client();
      for (size_t i = 2; i < first_parked; ++i)
        if (fds[i].revents) serve_client(fds[i].fd);
      for (size_t i = first_parked; i < first_worker; ++i)
        if (fds[i].revents) drop(fds[i].fd);
      for (size_t i = first_worker; i < first_start; ++i)
        if (fds[i].revents) hung_up(fds[i].fd);
      settle_reported_starts();
      kill_late_workers();
      kill_late_orphans();
      fail_late_starts();
      if (tcp_)
        for (const int fd : tcp_->close_late(Clock::now())) drop(fd);
      answer_parked_reads();
      tidy_relays();
      std::erase_if(clients_, [](const UniqueFd& c) { return !c.valid(); });
    }
  }

 private:
  void accept_client() {
    if (checkpointed_) return take_listener();
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) clients_.emplace_back(fd);
  }

  // After a restore the daemon sends its new listener through the stand-in
  // pair (proto::kCheckpointHandFd): init serves it from now on, and is
  // undumpable again (prepare_checkpoint made it dumpable, and sandbox root,
  // same uid, could ptrace it).
  void take_listener() {
    std::string bytes;
    std::vector<UniqueFd> fds;
    auto got = proto::recv_message(listen_fd_, &bytes, &fds);
    int accepting = 0;
    socklen_t size = sizeof accepting;
    const bool listener =
        got && *got && fds.size() == 1 &&
        ::getsockopt(fds[0].get(), SOL_SOCKET, SO_ACCEPTCONN, &accepting, &size) == 0 &&
        accepting != 0;
    if (got && *got && !listener) return;  // not a listener: wait for one
    ::close(proto::kCheckpointHandFd);
    ::close(proto::kCheckpointListenFd);
    listen_fd_ = listener ? fds[0].release() : -1;  // poll ignores a negative fd
    checkpointed_ = false;
    if (listener) (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  }

  // A client that hangs up (the daemon restarting) is simply dropped.
  void serve_client(int fd) {
    std::string bytes;
    std::vector<UniqueFd> fds;
    auto got = proto::recv_message(fd, &bytes, &fds);
    if (!got || !*got) {
      drop(fd);
      return;
    }
    proto::Request request;
    proto::Reply reply;
    std::vector<int> reply_fds;
    UniqueFd opened;
    const bool decoded = proto::decode(bytes, &request);
    if (decoded) resolve_follow_on(&request);
    if (decoded && request.type == proto::RequestType::kFile) {
      start_worker(take(fd), request.file, std::move(fds));
      return;
    }
    if (decoded && request.type == proto::RequestType::kAdopt) {
      hand_over_orphans(fd);
      return;
    }
    if (decoded && park_read(fd, request)) return;
    if (decoded && request.type == proto::RequestType::kList) {
      list_supervised(fd);
      return;
    }
    if (decoded && request.type == proto::RequestType::kSpawn && request.in_band) {
      UniqueFd command_procs;
      if (request.command_group && !fds.empty()) command_procs = std::move(fds.back());
      if (auto started = spawn_in_band(fd, std::move(request), std::move(command_procs)); !started)
        if (!proto::send_message(fd, proto::encode(proto::reply_from(started.error())), {}))
          drop(fd);
      return;  // else answered once the child exec'd (settle_start)
    }
    if (decoded && request.type == proto::RequestType::kPrepareCheckpoint) {
      prepare_checkpoint(fd);
      return;
    }
    if (!decoded) {
      reply = proto::reply_from(Error{"decode request", EPROTO, {}});
    } else if (auto answered = serve_in_place(fd, request)) {
      if (!proto::send_message(fd, *answered, {})) drop(fd);
      return;
    } else if (request.type == proto::RequestType::kOpen) {
      reply = open_file(request.open, &opened);
      if (opened.valid()) reply_fds.push_back(opened.get());
    } else if (auto started = spawn(fd, request, std::move(fds)); !started) {
      reply = proto::reply_from(started.error());
    } else {
      return;  // answered once the child exec'd (settle_start)
    }
    if (!proto::send_message(fd, proto::encode(reply), reply_fds)) drop(fd);
  }

  // A seqpacket pair of init's own at proto::kCheckpointListenFd (polled)
  // and kCheckpointHandFd (for the daemon after a restore). CRIU dumps and
  // restores it as any pair; nothing in the sandbox can reach it.
  static Status place_stand_in() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
      return Error::from_errno("prepare for checkpoint: socketpair");
    UniqueFd polled(pair[0]), handed(pair[1]);
    if (::dup3(polled.get(), proto::kCheckpointListenFd, O_CLOEXEC) == proto::kCheckpointListenFd &&
        ::dup3(handed.get(), proto::kCheckpointHandFd, O_CLOEXEC) == proto::kCheckpointHandFd)
      return {};
    Error failed = Error::from_errno("prepare for checkpoint: place the stand-in");
    ::close(proto::kCheckpointListenFd);
    return failed;
  }

  // proto::RequestType::kPrepareCheckpoint. After it init serves nothing: it
  // reaps, relays and enforces timeouts until CRIU dumps it (and its
  // processes end), or the sandbox is destroyed.
  void prepare_checkpoint(int fd) {
    Status ready;
    if (!workers_.empty() || !starts_.empty())
      ready = Error{"prepare for checkpoint", EBUSY, "a file operation or a start is in flight"};
    else if (tcp_)
      ready = Error{"prepare for checkpoint", EOPNOTSUPP,
                    "the agent serves TCP (a daemon on another host)"};
    else if (::fcntl(proto::kCheckpointListenFd, F_GETFD) >= 0 ||
             ::fcntl(proto::kCheckpointHandFd, F_GETFD) >= 0)
      ready = Error{"prepare for checkpoint", EBUSY,
                    "init holds too many files (fd " + std::to_string(proto::kCheckpointHandFd) +
                        " or " + std::to_string(proto::kCheckpointListenFd) + " is taken)"};
    else if (auto placed = place_stand_in(); !placed)
      ready = placed;
    else if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) {
      ready = Error::from_errno("prepare for checkpoint: make init dumpable");
      ::close(proto::kCheckpointListenFd);
      ::close(proto::kCheckpointHandFd);
    }
    const proto::Reply reply = ready ? proto::Reply{} : proto::reply_from(ready.error());
    if (!proto::send_message(fd, proto::encode(reply), {})) drop(fd);
    if (!ready) return;
    // Nothing is accepted until a restore's daemon sends a listener through
    // the pair (take_listener); the quiet end never polls readable till then.
    ::close(listen_fd_);
    listen_fd_ = proto::kCheckpointListenFd;
    checkpointed_ = true;
    // Their followers and waiting reads go with them; erased at the end of this round.
    std::vector<int> open;
    for (const auto& c : clients_)
      if (c.valid()) open.push_back(c.get());
    for (const int c : open) drop(c);
  }

  // What init holds of a supervised process (proto::Request::supervised):
  // the read ends of its exit pipe and output pipes, or its pty master, so
  // it never meets a closed pipe (or a hung-up terminal) while no daemon runs.
  struct Kept {
    std::vector<UniqueFd> fds;  // as proto::Supervised orders them
    std::string label;
    bool pty = false;
    uint32_t timeout_ms = 0;
    bool has_stdin = false;  // the last fd is stdin's write end
  };
  // Where kInput's bytes go: the pty master or the kept stdin (each the last
  // kept fd), or -1 when there is neither.
  static int input_fd(const Kept& kept) {
    return (kept.pty || kept.has_stdin) && !kept.fds.empty() ? kept.fds.back().get() : -1;
  }
  struct Supervised {
    Kept kept;
    int owner = -1;  // the control connection of the daemon holding it; -1: none
    bool ended = false;
    uint64_t made = 0;  // order of spawning, to drop the oldest ended first
    // Its timeout's end: init kills it then unless a daemon holds it (that
    // daemon kills it itself and tells its clients why).
    std::optional<Clock::time_point> deadline;
    bool killed = false;
    // Spawned over TCP: the agent made its pipes, no daemon adopts it.
    bool in_band = false;
    std::string pending_input;       // kInput's bytes the command has not read yet
    bool close_after_input = false;  // kCloseStdin came while input waited
  };
  static constexpr size_t kMaxEndedOrphans = 64;

  // A spawn the client waits for: its connection is not read meanwhile (one
  // request at a time on a connection), everything else is served.
  struct Start {
    Launched launched;
    UniqueFd exit_pipe;
    Clock::time_point deadline;
    std::optional<Kept> kept;          // a supervised spawn's
    std::optional<OutputRelay> relay;  // one with ring_bytes
    bool in_band = false;              // spawned over TCP (spawn_in_band)
    uint32_t terminal_ring = 0;        // in band with a pty: its relay's ring
  };

  // fds: the exit pipe, the stdio ends, the kept read ends (supervised), then
  // the command group's procs file.
  Status spawn(int client, const proto::Request& request, std::vector<UniqueFd> fds) {
    const size_t kept_count = request.supervised ? proto::kept_fds(request) : 0;
    if (fds.size() < 1 + kept_count + (request.command_group ? 1 : 0))
      return Error{"spawn", EINVAL, "malformed spawn request"};
    UniqueFd exit_pipe = std::move(fds.front());
    fds.erase(fds.begin());
    UniqueFd command_procs;
    if (request.command_group) {
      command_procs = std::move(fds.back());
      fds.pop_back();
    }
    std::optional<Kept> kept;
    if (request.supervised) {
      kept = Kept{{}, request.label, request.spec.pty, request.timeout_ms, request.keep_stdin};
      const auto first_kept = fds.end() - static_cast<std::ptrdiff_t>(kept_count);
      std::move(first_kept, fds.end(), std::back_inserter(kept->fds));
      fds.erase(first_kept, fds.end());
    }
    std::optional<OutputRelay> relay;
    if (request.ring_bytes > 0) {
      auto interposed = interpose_relay(request.ring_bytes, &fds);
      if (!interposed) return interposed.error();
      relay.emplace(std::move(*interposed));
    }
    return start(client, request.spec, std::move(exit_pipe), fds, command_procs.get(),
                 std::move(kept), std::move(relay));
  }

  // Forks the command; settle_start answers `client` once it exec'd.
  Status start(int client, const ProcessSpec& spec, UniqueFd exit_pipe,
               const std::vector<UniqueFd>& stdio, int command_procs, std::optional<Kept> kept,
               std::optional<OutputRelay> relay, bool in_band = false) {
    auto launched =
        launch(spec, config_.full_id_map, config_.workload_procs_fd, command_procs, stdio);
    if (!launched) return launched.error();
    starts_[client] = Start{std::move(*launched),
                            std::move(exit_pipe),
                            Clock::now() + std::chrono::milliseconds(proto::kStartBoundMs),
                            std::move(kept),
                            std::move(relay),
                            in_band};
    return {};
  }

  static constexpr uint32_t kSourcePipeBytes = 1024 * 1024;
  // The command writes to pipes of the agent's; the daemon's write ends
  // (the last two of `stdio`) become the relay's sinks.
  static Result<OutputRelay> interpose_relay(uint32_t ring_bytes, std::vector<UniqueFd>* stdio) {
    if (stdio->size() < 2) return Error{"spawn", EINVAL, "a relayed command needs output pipes"};
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return Error::from_errno("pipe");
    UniqueFd out_read(out[0]), out_write(out[1]);
    if (::pipe2(err, O_CLOEXEC) != 0) return Error::from_errno("pipe");
    UniqueFd err_read(err[0]), err_write(err[1]);
    // Room for a burst of output between the agent's reads (a fast writer
    // wakes it less often), within what the ring keeps.
    const int room = static_cast<int>(std::min<uint32_t>(ring_bytes, kSourcePipeBytes));
    (void)::fcntl(out[1], F_SETPIPE_SZ, room);
    (void)::fcntl(err[1], F_SETPIPE_SZ, room);
    UniqueFd out_sink = std::move((*stdio)[stdio->size() - 2]);
    UniqueFd err_sink = std::move(stdio->back());
    (*stdio)[stdio->size() - 2] = std::move(out_write);
    stdio->back() = std::move(err_write);
    return OutputRelay(ring_bytes, std::move(out_read), std::move(out_sink), std::move(err_read),
                       std::move(err_sink));
  }

  // Answers the client; a child that exec'd is a process init now reports
  // the exit of (at once, with `exit_status`, if it was reaped already).
  void settle_start(int client, const Status& outcome, std::optional<int> exit_status = {}) {
    auto node = starts_.extract(client);
    Start& start = node.mapped();
    proto::Reply reply;
    std::vector<int> reply_fds;
    if (!outcome) {
      reply = proto::reply_from(outcome.error());
    } else {
      reply.pid = start.launched.pid;
      if (start.launched.pty_master.valid() && !start.in_band)
        reply_fds.push_back(start.launched.pty_master.get());
    }
    const bool sent = answer(client, proto::encode(reply), reply_fds);
    if (!sent) drop(client);
    if (!outcome) return;
    const pid_t pid = start.launched.pid;
    exit_pipes_[pid] = std::move(start.exit_pipe);
    // A command spawned over TCP is nobody's to hold: the agent keeps its
    // output for kRead and enforces its timeout, whoever is connected.
    const bool held = sent && !start.in_band;
    if (start.in_band && start.launched.pty_master.valid()) {
      auto terminal = terminal_relay(start.launched.pty_master.get(), start.terminal_ring);
      if (terminal) start.relay.emplace(std::move(*terminal));
    }
    if (start.relay) {
      start.relay->set_held(held);
      std::erase(ended_relays_, pid);  // an ended command's pid, used again
      relays_.insert_or_assign(pid, std::move(*start.relay));
    }
    if (start.kept) {
      if (start.launched.pty_master.valid())
        start.kept->fds.push_back(std::move(start.launched.pty_master));
      const uint32_t timeout_ms = start.kept->timeout_ms;
      if (auto old = supervised_.find(pid); old != supervised_.end())  // an ended one's pid again
        forget_input(old->second);
      Supervised& process = supervised_[pid] =
          Supervised{std::move(*start.kept), held ? client : -1, false, ++supervised_made_};
      process.in_band = start.in_band;
      if (timeout_ms > 0) process.deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
      if (const int input = input_fd(process.kept); start.in_band && input >= 0)
        (void)::fcntl(input, F_SETFL, ::fcntl(input, F_GETFL) | O_NONBLOCK);
    }
    if (exit_status) report_exit(pid, *exit_status);
  }

  void settle_reported_starts() {
    std::vector<int> reported;
    for (const auto& [client, start] : starts_)
      if (start_reported(start.launched.report.get())) reported.push_back(client);
    for (const int client : reported) {
      const Start& start = starts_.at(client);
      settle_start(client, start_outcome(start.launched.report.get(), start.launched.pid, false));
    }
  }

  // Sandbox root can stop a child (it holds CAP_KILL) before its exec: that
  // spawn fails at once, and the child is killed rather than left stopped.
  void fail_stopped_starts() {
    std::vector<int> stopped;
    for (const auto& [client, start] : starts_) {
      siginfo_t info{};
      if (::waitid(P_PID, static_cast<id_t>(start.launched.pid), &info, WSTOPPED | WNOHANG) == 0 &&
          info.si_pid == start.launched.pid && !start_reported(start.launched.report.get()))
        stopped.push_back(client);
    }
    for (const int client : stopped) {
      abandon_start(starts_.at(client).launched.pid);
      settle_start(client, Error{"spawn", EBUSY,
                                 "the process was stopped before it could start (something in "
                                 "the sandbox sent it SIGSTOP); run it again"});
    }
  }

  void fail_late_starts() {
    const auto now = Clock::now();
    std::vector<int> late;
    for (const auto& [client, start] : starts_)
      if (start.deadline <= now && !start_reported(start.launched.report.get()))
        late.push_back(client);
    for (const int client : late) {
      abandon_start(starts_.at(client).launched.pid);
      settle_start(client, Error{"spawn", ETIMEDOUT,
                                 "the process did not start within " +
                                     std::to_string(proto::kStartBoundMs / 1000) +
                                     " s (something in the sandbox held it); run it again"});
    }
  }

  // A child reaped before its spawn was settled: what it reported decides.
  bool settle_reaped_start(pid_t pid, int status) {
    for (auto& [client, start] : starts_) {
      if (start.launched.pid != pid) continue;
      settle_start(client, start_outcome(start.launched.report.get(), pid, true), status);
      return true;
    }
    return false;
  }

  proto::Reply open_file(const proto::OpenRequest& request, UniqueFd* opened) {
    auto fd = open_for_reading(request, config_.full_id_map);
    if (!fd) return proto::reply_from(fd.error());
    *opened = std::move(*fd);
    return {};
  }

  // A file worker (file_worker.h), watched through a copy of its session: a
  // worker is killed, even a stopped one, once the daemon hangs up or its
  // deadline passes, so nothing in the sandbox can keep one (and the daemon
  // thread waiting on it) for longer.
  struct Worker {
    UniqueFd session;
    std::optional<Clock::time_point> deadline;
    bool hung_up = false;  // the daemon closed the session
    bool killed = false;
  };
  // A writer whose daemon hung up removes its partial file, then exits.
  static constexpr auto kCleanupGrace = std::chrono::seconds(10);

  void start_worker(UniqueFd session, const FileRequest& request, std::vector<UniqueFd> fds,
                    bool tcp = false) {
    UniqueFd watch(::fcntl(session.get(), F_DUPFD_CLOEXEC, 0));
    const pid_t pid = start_file_worker(std::move(session), request, std::move(fds), config_, tcp);
    if (pid <= 0 || !watch.valid()) return;
    Worker& worker = workers_[pid];
    worker.session = std::move(watch);
    if (const uint32_t seconds = operation_deadline_seconds(request))
      worker.deadline = Clock::now() + std::chrono::seconds(seconds);
  }

  void hung_up(int session) {
    const auto grace_end = Clock::now() + kCleanupGrace;
    for (auto& [pid, worker] : workers_) {
      if (worker.session.get() != session) continue;
      worker.hung_up = true;
      if (!worker.deadline || *worker.deadline > grace_end) worker.deadline = grace_end;
    }
  }

  // The pid is still ours: a worker leaves workers_ only when reaped.
  void kill_late_workers() {
    const auto now = Clock::now();
    for (auto& [pid, worker] : workers_) {
      if (worker.killed || !worker.deadline || *worker.deadline > now) continue;
      ::kill(pid, SIGKILL);
      worker.killed = true;
    }
  }

  // Supervised processes past their timeout while no daemon holds them: the
  // whole process group goes, as the daemon's kill does (the next daemon then
  // ends whatever of its command group is left).
  void kill_late_orphans() {
    const auto now = Clock::now();
    for (auto& [pid, process] : supervised_) {
      if (!orphan_awaits_deadline(process) || *process.deadline > now) continue;
      (void)signal(pid, SIGKILL);
      process.killed = true;
    }
  }

  static bool orphan_awaits_deadline(const Supervised& process) {
    return process.owner < 0 && !process.ended && !process.killed && process.deadline;
  }

  int next_deadline_ms() const {
    std::optional<Clock::time_point> next;
    for (const auto& [pid, process] : supervised_)
      if (orphan_awaits_deadline(process) && (!next || *process.deadline < *next))
        next = process.deadline;
    for (const auto& [pid, worker] : workers_)
      if (!worker.killed && worker.deadline && (!next || *worker.deadline < *next))
        next = worker.deadline;
    for (const auto& [client, start] : starts_)
      if (!next || start.deadline < *next) next = start.deadline;
    for (const auto& [client, parked] : parked_reads_)
      if (!next || parked.deadline < *next) next = parked.deadline;
    if (auto hello = tcp_ ? tcp_->next_deadline() : std::nullopt;
        hello && (!next || *hello < *next))
      next = hello;
    if (!next) return -1;
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now());
    return static_cast<int>(std::max<int64_t>(0, wait.count()));
  }

  // Every spawned process leads its own session and process group: signal
  // the whole group, so `bash -c 'sleep 100'` dies with its sleep and SIGINT
  // reaches a shell's foreground child. A pid that leads no group (one the
  // user started some other way) gets the signal alone.
  static proto::Reply signal(int pid, int signo) {
    if (pid <= 1) return proto::reply_from(Error{"signal", EPERM, "pid " + std::to_string(pid)});
    if (::kill(-pid, signo) == 0 || (errno == ESRCH && ::kill(pid, signo) == 0)) return {};
    return proto::reply_from(Error::from_errno("signal", "pid " + std::to_string(pid)));
  }

  // As PID 1 we inherit every orphan: reap them all, report the ones we spawned.
  void reap() {
    signalfd_siginfo info;
    while (::read(signal_fd_, &info, sizeof info) == sizeof info) {
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      workers_.erase(pid);
      if (!settle_reaped_start(pid, status)) report_exit(pid, status);
    }
    fail_stopped_starts();
  }

  void report_exit(pid_t pid, int status) {
    auto it = exit_pipes_.find(pid);
    if (it == exit_pipes_.end()) return;
    if (auto relay = relays_.find(pid); relay != relays_.end()) {
      relay->second.drain();  // its output reaches the daemon before its end
      relay->second.ended(status);
    }
    const int32_t value = status;
    (void)::write(it->second.get(), &value, sizeof value);
    exit_pipes_.erase(it);
    keep_ended(pid);
  }

  // A supervised process that ended: its daemon, if there is one, reads the
  // rest itself. Without one, init keeps what it wrote for the next daemon,
  // for the last kMaxEndedOrphans such processes.
  void keep_ended(pid_t pid) {
    auto it = supervised_.find(pid);
    if (it == supervised_.end()) return;
    if (it->second.owner >= 0) {
      forget_supervised(it);
      return;
    }
    it->second.ended = true;
    std::vector<std::pair<uint64_t, pid_t>> ended;
    for (const auto& [other, process] : supervised_)
      if (process.ended) ended.emplace_back(process.made, other);
    if (ended.size() <= kMaxEndedOrphans) return;
    std::sort(ended.begin(), ended.end());
    for (size_t i = 0; i + kMaxEndedOrphans < ended.size(); ++i)
      forget_supervised(supervised_.find(ended[i].second));
  }

  // kAdopt: the processes no daemon holds now go to `client`, each with the
  // fds init kept; an ended one leaves init with it.
  void hand_over_orphans(int client) {
    std::vector<pid_t> orphans;
    for (const auto& [pid, process] : supervised_)
      if (process.owner < 0 && !process.in_band) orphans.push_back(pid);
    if (orphans.empty() && !proto::send_message(client, proto::encode(proto::Supervised{}), {}))
      drop(client);
    for (size_t i = 0; i < orphans.size(); ++i) {
      Supervised& process = supervised_.at(orphans[i]);
      const proto::Supervised message{
          orphans[i],         process.ended,           process.kept.pty,
          process.kept.label, i + 1 == orphans.size(), process.kept.has_stdin};
      std::vector<int> fds;
      for (const auto& fd : process.kept.fds) fds.push_back(fd.get());
      if (!proto::send_message(client, proto::encode(message), fds)) {
        drop(client);
        return;
      }
      if (process.ended) {
        forget_supervised(supervised_.find(orphans[i]));
      } else {
        process.owner = client;
        if (auto relay = relays_.find(orphans[i]); relay != relays_.end())
          relay->second.set_held(true);
      }
    }
  }

  // kList over TCP: every supervised command, as kAdopt names them, no fds.
  void list_supervised(int client) {
    size_t left = supervised_.size();
    if (left == 0 && !answer(client, proto::encode(proto::Supervised{}), {})) drop(client);
    for (const auto& [pid, process] : supervised_) {
      // Its stdin, closed on request once its input is read, is closed
      // for whoever adopts it.
      proto::Supervised message{pid,
                                process.ended,
                                process.kept.pty,
                                process.kept.label,
                                --left == 0,
                                process.kept.has_stdin && !process.close_after_input};
      message.in_band = process.in_band;
      if (auto relay = relays_.find(pid); relay != relays_.end())
        message.delivered = relay->second.delivered();
      if (!answer(client, proto::encode(message), {})) {
        drop(client);
        return;
      }
    }
  }

  // Idempotent: a process that ended, or whose stdin init does not keep,
  // has nothing to close here.
  void close_kept_stdin(pid_t pid) {
    auto it = supervised_.find(pid);
    if (it == supervised_.end() || !it->second.kept.has_stdin) return;
    if (!it->second.pending_input.empty()) {  // closed once the command has read it
      it->second.close_after_input = true;
      return;
    }
    it->second.kept.fds.pop_back();  // stdin's write end is the last kept
    it->second.kept.has_stdin = false;
  }

  // kInput: queued for the command, written as it reads.
  proto::Reply queue_input(pid_t pid, const std::string& bytes) {
    const std::string who = "pid " + std::to_string(pid);
    auto it = supervised_.find(pid);
    if (it == supervised_.end() || it->second.ended)
      return proto::reply_from(Error{"input", ESRCH, "no running command with " + who});
    Supervised& process = it->second;
    // A daemon on the host writes its commands' stdin itself, blocking on
    // its own fds; init writes only to the non-blocking ones it made.
    if (!process.in_band)
      return proto::reply_from(Error{"input", EPERM, who + " was not spawned over TCP"});
    if (input_fd(process.kept) < 0 || process.close_after_input)
      return proto::reply_from(Error{"input", EPIPE, "the stdin of " + who + " is closed"});
    if (process.pending_input.size() + bytes.size() > proto::kMaxPendingInput)
      return proto::reply_from(Error{"input", EAGAIN,
                                     who + " has not read its input yet (" +
                                         std::to_string(process.pending_input.size()) +
                                         " bytes wait); send it again"});
    if (pending_input_ + bytes.size() > proto::kMaxPendingInputTotal)
      return proto::reply_from(Error{"input", EAGAIN,
                                     "the sandbox's commands have not read their input yet (" +
                                         std::to_string(pending_input_) +
                                         " bytes wait); send it again"});
    process.pending_input += bytes;
    pending_input_ += bytes.size();
    write_input(pid);
    return {};
  }

  // Writes what the command's stdin or terminal takes now, without waiting.
  void write_input(pid_t pid) {
    auto it = supervised_.find(pid);
    if (it == supervised_.end()) return;
    Supervised& process = it->second;
    std::string& pending = process.pending_input;
    while (!pending.empty()) {
      const ssize_t n = ::write(input_fd(process.kept), pending.data(), pending.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n < 0) {  // nobody will read it (EPIPE; EIO: the terminal hung up)
        forget_input(process);
        break;
      }
      pending_input_ -= static_cast<size_t>(n);
      pending.erase(0, static_cast<size_t>(n));
    }
    if (process.close_after_input) {
      process.close_after_input = false;
      close_kept_stdin(pid);
    }
  }

  // What waited for a command that will not read it (or is gone) leaves
  // the agent's budget with it.
  void forget_input(Supervised& process) {
    pending_input_ -= process.pending_input.size();
    process.pending_input.clear();
  }

  // Every supervised entry leaves through here, so its pending input
  // leaves the budget with it.
  void forget_supervised(std::map<pid_t, Supervised>::iterator it) {
    forget_input(it->second);
    supervised_.erase(it);
  }

  proto::Reply resize(pid_t pid, uint16_t cols, uint16_t rows) {
    auto it = supervised_.find(pid);
    if (it == supervised_.end() || !it->second.kept.pty || it->second.kept.fds.empty())
      return proto::reply_from(
          Error{"resize", ENOTTY, "no command with a terminal has pid " + std::to_string(pid)});
    winsize size{};
    size.ws_col = cols;
    size.ws_row = rows;
    if (::ioctl(it->second.kept.fds.back().get(), TIOCSWINSZ, &size) != 0)
      return proto::reply_from(Error::from_errno("resize", "pid " + std::to_string(pid)));
    return {};
  }

  // The requests both transports answer at once, with one message; nullopt
  // for the others.
  std::optional<std::string> serve_in_place(int client, const proto::Request& request) {
    switch (request.type) {
      case proto::RequestType::kSignal:
        return proto::encode(signal(request.pid, request.signo));
      case proto::RequestType::kCloseStdin:
        close_kept_stdin(request.pid);
        return proto::encode(proto::Reply{});
      case proto::RequestType::kRead:
        return proto::encode(request.wait_ms > 0 ? follow_output(client, request)
                                                 : read_output(request));
      case proto::RequestType::kInput:
        return proto::encode(queue_input(request.pid, request.input));
      case proto::RequestType::kResize:
        return proto::encode(resize(request.pid, request.cols, request.rows));
      default:
        return std::nullopt;
    }
  }

  // Views into the command's ring: encode it before the ring changes.
  proto::ReadReplyView read_output(const proto::Request& request) {
    auto it = relays_.find(request.pid);
    if (it == relays_.end()) {
      proto::ReadReplyView reply;
      reply.errnum = ENOENT;
      reply.step = "no output kept for pid " + std::to_string(request.pid);
      return reply;
    }
    return it->second.slice_views(request.offset,
                                  std::min(request.max_bytes, proto::kMaxReadBytes));
  }

  // A kRead at kFollowOn goes on from where its follower was last answered
  // up to: read only after that answer went out (busy), so it continues it.
  void resolve_follow_on(proto::Request* request) const {
    if (request->type != proto::RequestType::kRead || request->offset != proto::kFollowOn) return;
    const auto it = relays_.find(request->pid);
    request->offset = it == relays_.end() ? 0 : it->second.delivered();
  }

  // A connection waiting for its spawn or its read is not read meanwhile.
  bool busy(int client) const { return starts_.contains(client) || parked_reads_.contains(client); }

  // A kRead with nothing past its offset yet: something to answer at once
  // (the command ended, or no output of it is kept) or not.
  bool read_ready(const proto::Request& request) const {
    auto it = relays_.find(request.pid);
    return it == relays_.end() || it->second.end_known() || it->second.end() > request.offset;
  }

  // A kRead that may wait (Request::wait_ms) and has nothing to read yet is
  // answered later, by answer_parked_reads. True when parked.
  bool park_read(int client, const proto::Request& request) {
    if (request.type != proto::RequestType::kRead || request.wait_ms == 0 || read_ready(request))
      return false;
    parked_reads_[client] =
        ParkedRead{request, Clock::now() + std::chrono::milliseconds(request.wait_ms)};
    follow(client, relays_.at(request.pid));
    return true;
  }

  // A connection follows one command at a time: the one it asked last.
  void follow(int client, OutputRelay& followed) {
    for (auto& [pid, relay] : relays_)
      if (relay.follower() == client) relay.set_follower(-1);
    followed.set_follower(client);
  }

  void answer_parked_reads() {
    const auto now = Clock::now();
    std::vector<int> ready;
    for (const auto& [client, parked] : parked_reads_)
      if (parked.deadline <= now || read_ready(parked.request)) ready.push_back(client);
    for (const int client : ready) {
      const proto::Request request = parked_reads_.extract(client).mapped().request;
      if (!answer(client, proto::encode(follow_output(client, request)), {})) drop(client);
    }
  }

  // A waiting kRead is a follower's: what it is answered with is what that
  // follower got (Supervised::delivered, for the next one after a restart).
  proto::ReadReplyView follow_output(int client, const proto::Request& request) {
    proto::ReadReplyView reply = read_output(request);
    auto relay = relays_.find(request.pid);
    if (relay == relays_.end()) return reply;
    follow(client, relay->second);
    if (!reply.chunks.empty()) {
      const auto& last = reply.chunks.back();
      relay->second.set_delivered(last.offset + last.bytes.size());
    }
    if (reply.ended && relay->second.delivered() >= reply.end) ended_followed(request.pid);
    return reply;
  }

  // A follower had an in-band command's end: the daemon that follows it
  // knows it ended, so the next one has nothing to adopt (it is no longer
  // listed); one that ended unseen stays listed for the next daemon.
  void ended_followed(pid_t pid) {
    auto it = supervised_.find(pid);
    if (it != supervised_.end() && it->second.ended && it->second.in_band) forget_supervised(it);
  }

  // A command that ended and whose output all went out keeps only its
  // tail, and only the newest kMaxEndedRelays such commands keep that.
  static constexpr size_t kEndedTail = 64 * 1024;
  static constexpr size_t kMaxEndedRelays = 64;
  static constexpr size_t kKeptBudget = 64 * 1024 * 1024;
  void tidy_relays() {
    keep_within(relays_, kKeptBudget);
    for (auto& [pid, relay] : relays_) {
      if (relay.tail_only() || !relay.has_ended() || !relay.finished()) continue;
      // Its follower has yet to have the end: kept whole until it has.
      if (relay.follower() >= 0 && relay.delivered() < relay.end()) continue;
      relay.keep_tail(kEndedTail);
      ended_relays_.push_back(pid);
    }
    while (ended_relays_.size() > kMaxEndedRelays) {
      relays_.erase(ended_relays_.front());
      ended_relays_.pop_front();
    }
  }

  // A file request's connection is the worker's alone: init lets go of it.
  UniqueFd take(int fd) {
    for (auto& c : clients_)
      if (c.get() == fd) return UniqueFd(c.release());
    return UniqueFd();
  }

  void drop(int fd) {
    parked_reads_.erase(fd);
    for (auto& [pid, relay] : relays_)
      if (relay.follower() == fd) relay.set_follower(-1);  // no daemon waits for its output now
    for (auto& [pid, process] : supervised_) {
      if (process.owner != fd) continue;
      process.owner = -1;  // the daemon went away
      if (auto relay = relays_.find(pid); relay != relays_.end()) relay->second.set_held(false);
    }
    if (starts_.contains(fd)) return;  // settle_start answers it (or drops it)
    if (tcp_ && tcp_->owns(fd)) tcp_->close(fd);
    for (auto& c : clients_)
      if (c.get() == fd) c.reset();
  }

  // A reply on the control socket (with fds) or, to a TCP client, a frame.
  bool answer(int client, const std::string& bytes, const std::vector<int>& fds) {
    if (tcp_ && tcp_->owns(client)) return fds.empty() && tcp_->reply(client, bytes);
    return static_cast<bool>(proto::send_message(client, bytes, fds));
  }

  void serve_tcp(const pollfd& ready) {
    const auto closed = tcp_->handle(
        ready, [this](int fd, const std::string& bytes) { serve_tcp_request(fd, bytes); },
        [this](int fd) { return busy(fd); });
    for (const int fd : closed) drop(fd);
  }

  // What TCP serves (see proto.h): spawn, read and signal, no fds.
  void serve_tcp_request(int fd, const std::string& bytes) {
    proto::Request request;
    std::string reply;
    if (!proto::decode(bytes, &request)) {
      reply = proto::encode(proto::reply_from(Error{"decode request", EPROTO, {}}));
    } else if (resolve_follow_on(&request); park_read(fd, request)) {
      return;  // answered once output comes (answer_parked_reads)
    } else if (auto answered = serve_in_place(fd, request)) {
      reply = std::move(*answered);
    } else if (request.type == proto::RequestType::kFile) {
      start_worker(tcp_->release(fd), request.file, {}, true);
      return;
    } else if (request.type == proto::RequestType::kList) {
      list_supervised(fd);
      return;
    } else if (request.type == proto::RequestType::kSpawn) {
      auto started = spawn_in_band(fd, std::move(request));
      if (started) return;  // answered once the child exec'd (settle_start)
      reply = proto::encode(proto::reply_from(started.error()));
    } else {
      reply = proto::encode(proto::reply_from(Error{
          "request", EPROTONOSUPPORT,
          "over TCP the agent serves spawn, read, signal, input, close-stdin, resize and files"}));
    }
    if (!answer(fd, reply, {})) drop(fd);
  }

  // A spawn whose pipes (or pty) the agent makes itself: a supervised
  // command with an output ring, its stdin (a pipe or the terminal) written
  // through kInput, no daemon's fds anywhere.
  // `command_procs`: the cgroup.procs of the command's own group, which only
  // the control socket can pass (Request::command_group).
  Status spawn_in_band(int client, proto::Request request, UniqueFd command_procs = {}) {
    if (request.command_group && !command_procs.valid())
      return Error{"spawn", EPROTONOSUPPORT, "over TCP a command has no cgroup of its own"};
    if (starts_.contains(client)) return Error{"spawn", EBUSY, "one spawn at a time"};
    const uint32_t ring_bytes = request.ring_bytes == 0
                                    ? proto::kDefaultTcpRingBytes
                                    : std::min(request.ring_bytes, proto::kMaxRingBytes);
    const bool keep_stdin = !request.spec.pty && request.spec.stdin_pipe;
    Kept kept{{}, request.label, request.spec.pty, request.timeout_ms, keep_stdin};
    auto exit = make_pipe();
    if (!exit) return exit.error();
    kept.fds.push_back(std::move(exit->first));
    std::vector<UniqueFd> stdio;
    std::optional<OutputRelay> relay;  // with a pty: made in settle_start from its master
    if (!request.spec.pty) {
      auto in = make_pipe(), out = make_pipe(), err = make_pipe();
      if (!in || !out || !err) return Error::from_errno("pipe");
      if (keep_stdin) stdio.push_back(std::move(in->first));
      stdio.push_back(std::move(out->second));
      stdio.push_back(std::move(err->second));
      relay.emplace(ring_bytes, std::move(out->first), UniqueFd(), std::move(err->first),
                    UniqueFd());
      if (keep_stdin) kept.fds.push_back(std::move(in->second));
    }
    auto started = start(client, request.spec, std::move(exit->second), stdio, command_procs.get(),
                         std::move(kept), std::move(relay), true);
    if (started) starts_.at(client).terminal_ring = ring_bytes;
    return started;
  }

  // The read end first, then the write end.
  static Result<std::pair<UniqueFd, UniqueFd>> make_pipe() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return Error::from_errno("pipe");
    return std::pair{UniqueFd(p[0]), UniqueFd(p[1])};
  }

  // What an in-band command's terminal shows, kept as its stdout.
  static Result<OutputRelay> terminal_relay(int master, uint32_t ring_bytes) {
    UniqueFd source(::fcntl(master, F_DUPFD_CLOEXEC, 0));
    if (!source.valid()) return Error::from_errno("dup pty master");
    return OutputRelay(ring_bytes, std::move(source), UniqueFd(), UniqueFd(), UniqueFd());
  }

  int listen_fd_;
  bool checkpointed_ = false;  // listen_fd_ is the stand-in pair's polled end
  int signal_fd_;
  const proto::InitConfig& config_;
  std::vector<UniqueFd> clients_;
  std::map<pid_t, UniqueFd> exit_pipes_;
  std::map<pid_t, Worker> workers_;
  std::map<int, Start> starts_;  // by the client connection that waits
  // A kRead waiting for output (Request::wait_ms), by its connection.
  struct ParkedRead {
    proto::Request request;
    Clock::time_point deadline;
  };
  std::map<int, ParkedRead> parked_reads_;
  std::map<pid_t, Supervised> supervised_;
  uint64_t supervised_made_ = 0;
  // kInput's bytes waiting in all commands' Supervised::pending_input: at
  // most proto::kMaxPendingInputTotal (the agent's memory is outside the
  // sandbox's limit).
  size_t pending_input_ = 0;
  std::map<pid_t, OutputRelay> relays_;  // by pid, also a while after the command ended
  std::deque<pid_t> ended_relays_;       // the ended ones, oldest first
  std::optional<TcpClients> tcp_;        // when InitConfig::tcp_port is set
};

}  // namespace

void serve(int listen_fd, int signal_fd, const proto::InitConfig& config, int tcp_listen_fd) {
  Server(listen_fd, signal_fd, config, tcp_listen_fd).run();
}

}  // namespace abx::agent
