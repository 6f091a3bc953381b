#include "runtime/init/file_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/fs_ops.h"
#include "runtime/init/launch.h"

namespace abx::runtime::init {
namespace {

// A worker with no progress for this long is ended by SIGALRM: no file in a
// sandbox can keep one alive, or hold the daemon waiting on it, for longer.
constexpr unsigned kIdleSeconds = 60;
// kList's entries go in messages of about this size (kMaxMessage bounds them).
constexpr size_t kBatchBytes = 64 * 1024;
// The worker's two fds, moved here before everything else is closed.
constexpr int kSessionFd = 3;
constexpr int kDataFd = 4;

// What a worker that ran out of time says, encoded beforehand: the SIGALRM
// handler may only call async-signal-safe functions.
std::string timed_out_reply;

void on_alarm(int) {
  (void)::send(kSessionFd, timed_out_reply.data(), timed_out_reply.size(), MSG_NOSIGNAL);
  ::_exit(1);
}

void send(const proto::FileReply& reply, const std::vector<int>& fds = {}) {
  (void)proto::send_message(kSessionFd, proto::encode(reply), fds);
}

proto::FileReply failure(const Error& error) {
  proto::FileReply reply;
  reply.errnum = error.errnum;
  reply.step = error.step.empty() ? "file operation" : error.step;
  reply.detail = error.detail;
  return reply;
}

void answer(const Status& status) { send(status ? proto::FileReply{} : failure(status.error())); }

size_t encoded_size(const EntryInfo& e) {
  size_t size = 64 + e.name.size() + e.path.size() + e.owner.size() + e.group.size() +
                e.symlink_target.size();
  for (const auto& [key, value] : e.metadata) size += 8 + key.size() + value.size();
  return size;
}

void answer_entries(Result<std::vector<EntryInfo>> entries) {
  if (!entries) return send(failure(entries.error()));
  proto::FileReply batch;
  size_t bytes = 0;
  for (auto& entry : *entries) {
    bytes += encoded_size(entry);
    batch.entries.push_back(std::move(entry));
    if (bytes < kBatchBytes) continue;
    batch.done = false;
    send(batch);
    batch.entries.clear();
    bytes = 0;
  }
  batch.done = true;
  send(batch);
}

// Moves data from the pipe into the file: splice where the filesystem takes
// it, else read and write.
Result<uint64_t> copy_in(int file) {
  uint64_t written = 0;
  bool use_splice = true;
  std::vector<char> buffer;
  for (;;) {
    ::alarm(kIdleSeconds);
    ssize_t n = -1;
    if (use_splice) {
      n = ::splice(kDataFd, nullptr, file, nullptr, 1 << 20, SPLICE_F_MOVE);
      if (n < 0 && errno == EINVAL) {
        use_splice = false;
        continue;
      }
    } else {
      buffer.resize(256 * 1024);
      n = ::read(kDataFd, buffer.data(), buffer.size());
      for (ssize_t done = 0; n > 0 && done < n;) {
        const ssize_t w = ::write(file, buffer.data() + done, static_cast<size_t>(n - done));
        if (w < 0 && errno != EINTR) return Error::from_errno("write");
        if (w > 0) done += w;
      }
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::from_errno("write");
    if (n == 0) return written;
    written += static_cast<uint64_t>(n);
  }
}

// Answers once the file is open (so the daemon hears of a refusal before it
// sends the body), and again when the pipe ends: the bytes written, the
// mode set, synced.
void write_file(int root, const FileRequest& request) {
  auto file = fs_ops::create_file(root, request.path);
  if (!file) return send(failure(file.error()));
  proto::FileReply opened;
  opened.done = false;
  send(opened);
  auto written = copy_in(file->get());
  if (!written)
    return send(failure(Error{written.error().step, written.error().errnum, request.path}));
  // Always, so an overwrite clears metadata a former upload left (as envd).
  if (auto s = fs_ops::write_metadata(file->get(), request.metadata, request.path); !s)
    return send(failure(s.error()));
  // After the data: a write by anyone but root clears set-id bits.
  if (request.mode != 0 && ::fchmod(file->get(), request.mode & 07777) != 0)
    return send(failure(Error::from_errno("chmod", request.path)));
  if (::fsync(file->get()) != 0 && errno != EINVAL)
    return send(failure(Error::from_errno("sync", request.path)));
  proto::FileReply done;
  done.written = *written;
  send(done);
}

void run(const FileRequest& request) {
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return send(failure(Error::from_errno("open /")));
  const fs_ops::Owners owners;  // inside, root is 0 and `user` 1000
  const int r = root.get();
  switch (request.op) {
    case FileOp::kStat: {
      auto entry = fs_ops::stat(r, request.path, owners);
      if (!entry) return send(failure(entry.error()));
      return answer_entries(std::vector<EntryInfo>{std::move(*entry)});
    }
    case FileOp::kList:
      return answer_entries(fs_ops::list(r, request.path, static_cast<int>(request.depth), owners));
    case FileOp::kMakeDir:
      return answer(fs_ops::make_dir(r, request.path));
    case FileOp::kSymlink:
      return answer(fs_ops::make_symlink(r, request.path, request.other));
    case FileOp::kMove:
      return answer(fs_ops::move(r, request.path, request.other));
    case FileOp::kRemove:
      return answer(fs_ops::remove(r, request.path));
    case FileOp::kWrite:
      return write_file(r, request);
    case FileOp::kOpenDir: {
      auto dir = fs_ops::open_dir(r, request.path);
      if (!dir) return send(failure(dir.error()));
      return send(proto::FileReply{}, {dir->get()});
    }
  }
  send(failure(Error{"file operation", EINVAL, "unknown operation"}));
}

// Keeps only the session and data fds, as 3 and 4: nothing init holds (the
// daemon's control connection, exit pipes) stays within reach of a worker
// that acts as a sandbox user.
Status isolate(int session, int data) {
  const int high_session = ::fcntl(session, F_DUPFD_CLOEXEC, 100);
  const int high_data = data >= 0 ? ::fcntl(data, F_DUPFD_CLOEXEC, 100) : -1;
  if (high_session < 0 || (data >= 0 && high_data < 0)) return Error::from_errno("dup");
  if (::dup2(high_session, kSessionFd) < 0) return Error::from_errno("dup2");
  if (high_data >= 0 && ::dup2(high_data, kDataFd) < 0) return Error::from_errno("dup2");
  if (high_data < 0) ::close(kDataFd);
  ::close_range(kDataFd + 1, ~0U, 0);
  return {};
}

[[noreturn]] void worker(int session, int data, const FileRequest& request,
                         const proto::InitConfig& config) {
  int reply_fd = session;
  // Writes are charged to the sandbox's workload group, like the files its
  // own processes write. The rest use next to nothing and stay in init's
  // group, the sandbox's too but with headroom: a sandbox whose disk (RAM)
  // filled its memory can still have files removed to free it.
  const bool writes = request.op == FileOp::kWrite;
  Status ready = become_workload(writes ? config.workload_procs_fd : -1);
  if (ready) ready = isolate(session, data);
  if (ready) reply_fd = kSessionFd;
  const bool full = config.full_id_map;
  if (ready) ready = become_user(full ? request.uid : 0, full ? request.gid : 0, full);
  // Not dumpable (set after the id change, which resets it): the user's own
  // processes can neither ptrace the worker nor open its fds through /proc.
  if (ready && ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) ready = Error::from_errno("prctl");
  if (!ready) {
    (void)proto::send_message(reply_fd, proto::encode(failure(ready.error())), {});
    ::_exit(1);
  }
  // An answer even then, so that ending without one means killed (by the
  // OOM killer, most likely).
  timed_out_reply = proto::encode(
      failure(Error{"file operation", ETIMEDOUT, request.path + ": no progress for 60 s"}));
  ::signal(SIGALRM, on_alarm);
  ::alarm(kIdleSeconds);
  run(request);
  ::_exit(0);
}

}  // namespace

void start_file_worker(UniqueFd session, const FileRequest& request, std::vector<UniqueFd> fds,
                       const proto::InitConfig& config) {
  const bool writes = request.op == FileOp::kWrite;
  if (writes != (fds.size() == 1)) {
    (void)proto::send_message(
        session.get(), proto::encode(failure(Error{"file operation", EINVAL, "malformed request"})),
        {});
    return;
  }
  const int data = writes ? fds.front().get() : -1;
  const pid_t pid = ::fork();
  if (pid == 0) worker(session.get(), data, request, config);
  if (pid < 0)
    (void)proto::send_message(session.get(), proto::encode(failure(Error::from_errno("fork"))), {});
}

}  // namespace abx::runtime::init
