#include "runtime/spawner.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "agent/protocol.h"
#include "common/fd_io.h"
#include "common/sha256.h"
#include "runtime/raw_clone.h"

namespace abx::runtime::spawner {
namespace {

constexpr int kCloneFlags = CLONE_VM | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC |
                            CLONE_NEWUTS | CLONE_NEWNET | SIGCHLD;
constexpr size_t kStackSize = 256 * 1024;
constexpr int kReadyTimeoutMs = 30000;
constexpr unsigned kSeals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

// The steps the child can fail at, each with its report prepared by the parent.
enum ChildStep { kSetresgid, kSetresuid, kExec, kChildSteps };

// Everything the child touches, prepared by the parent: the child shares the
// parent's memory and must not allocate (another thread may hold malloc's lock).
struct ChildArgs {
  int sync_read = -1;
  int sync_write = -1;  // the parent's end: the child closes its copy
  int status_write = -1;
  int image = -1;
  int inherit[4] = {-1, -1, -1, -1};  // config, status, listen, handoff: kept across exec
  int keep[8] = {};                   // every fd the child needs, ascending
  int keep_count = 0;
  char fd_text[4][16] = {};
  char* argv[6] = {};
  char* envp[1] = {};
  proto::StatusReport failures[kChildSteps];
};

// The child runs as raw_clone.h says: raw syscalls only (no read, write,
// fcntl, _exit, memset... from libc), on memory the parent filled in.

ABX_CHILD_CODE [[noreturn]] void fail(ChildArgs* a, ChildStep step, int exit_code) {
  a->failures[step].errnum = errno;
  ::syscall(SYS_write, a->status_write, &a->failures[step], sizeof a->failures[step]);
  ::syscall(SYS_exit_group, exit_code);
  __builtin_unreachable();
}

// Without CLONE_FILES the child holds a copy of every daemon fd: the store's,
// the listening socket, and the parent's ends of the sync sockets of other
// sandboxes being started at once. Kept, those made a burst of children wait
// on each other's sync sockets forever once the daemon died, holding the
// data dir's store. Closed at once, every child's read of its go byte sees EOF
// when the daemon dies (its own parent's end, sync_write, is not kept).
ABX_CHILD_CODE void close_all_but_kept(ChildArgs* a) {
  unsigned first = 0;
  for (int i = 0; i < a->keep_count; ++i) {
    const auto fd = static_cast<unsigned>(a->keep[i]);
    if (fd > first) ::syscall(SYS_close_range, first, fd - 1, 0);
    first = fd + 1;
  }
  ::syscall(SYS_close_range, first, ~0U, 0);
}

// Raw syscalls only: glibc's setresuid would try to signal the parent's
// threads (its setxid broadcast), since this child shares their memory.
ABX_CHILD_CODE int child_main(void* p) {
  auto* a = static_cast<ChildArgs*>(p);
  // Until it execs abx-init the child is the daemon's: it dies with the
  // thread that cloned it (the daemon SIGKILLed mid-create).
  ::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  close_all_but_kept(a);
  char go = 0;
  if (::syscall(SYS_read, a->sync_read, &go, 1) != 1)  // the parent gave up or died
    ::syscall(SYS_exit_group, 1);
  if (::syscall(SYS_setresgid, 0, 0, 0) != 0) fail(a, kSetresgid, 1);
  if (::syscall(SYS_setresuid, 0, 0, 0) != 0) fail(a, kSetresuid, 1);
  for (int fd : a->inherit) ::syscall(SYS_fcntl, fd, F_SETFD, 0);
  // abx-init outlives the daemon: the death signal is the pre-exec child's.
  ::syscall(SYS_prctl, PR_SET_PDEATHSIG, 0, 0, 0, 0);
  ::syscall(SYS_execveat, a->image, "", a->argv, a->envp, AT_EMPTY_PATH);
  fail(a, kExec, 127);
}

void prepare_failure_reports(ChildArgs& args) {
  const char* steps[kChildSteps] = {"setresgid 0 in the new user namespace",
                                    "setresuid 0 in the new user namespace", "exec abx-init"};
  for (int i = 0; i < kChildSteps; ++i)
    std::strncpy(args.failures[i].step, steps[i], sizeof args.failures[i].step - 1);
}

struct StackDeleter {
  void operator()(void* stack) const { ::munmap(stack, kStackSize); }
};

Status wait_ready(int status_read, pid_t pid) {
  pollfd p{status_read, POLLIN, 0};
  int ready;
  do ready = ::poll(&p, 1, kReadyTimeoutMs);
  while (ready < 0 && errno == EINTR);
  if (ready == 0) return Error{"start sandbox init", ETIMEDOUT, "no status report"};
  proto::StatusReport r;
  const ssize_t n = ::read(status_read, &r, sizeof r);
  if (n == static_cast<ssize_t>(sizeof r)) {
    r.step[sizeof r.step - 1] = '\0';
    if (r.errnum == 0 && std::strcmp(r.step, proto::kReady) == 0) return {};
    return Error{std::string("sandbox init: ") + r.step, r.errnum, {}};
  }
  return Error{"start sandbox init", ECHILD,
               "init (pid " + std::to_string(pid) + ") exited without a status report"};
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Blocks every signal while cloning so that no daemon handler runs on the
// child's stack before exec; the child execs with them blocked and abx-init
// sets its own mask. A user namespace is owned by its creator's euid: for
// the clone alone this thread takes `owner` as its euid (the raw syscall
// changes this thread only, not the daemon's others) and then returns to root,
// which gives back its capabilities.
pid_t clone_blocked(ChildArgs* args, void* stack, uid_t owner) {
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const bool switch_euid = owner != 0 && ::geteuid() == 0;
  pid_t pid = -1;
  if (!switch_euid || ::syscall(SYS_setresuid, -1, owner, -1) == 0) {
    pid = libc_clone()(child_main, static_cast<char*>(stack) + kStackSize, kCloneFlags, args);
  }
  const int saved = errno;
  if (switch_euid && ::syscall(SYS_setresuid, -1, 0, -1) != 0) std::abort();  // never root-less
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = saved;
  return pid;
}

// F_SEAL_WRITE fails with EBUSY while a page of the file still has a
// reference the kernel has not dropped yet (a per-CPU LRU batch of another
// CPU, just after the copy): it goes soon, so try again a few times.
Status seal(int mem) {
  constexpr int kAttempts = 20;  // 10 ms apart
  for (int attempt = 1;; ++attempt) {
    if (::fcntl(mem, F_ADD_SEALS, kSeals) == 0) return {};
    if (errno != EBUSY || attempt == kAttempts) return Error::from_errno("seal abx-init memfd");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

namespace {

// A sealed, read-only memfd: where the state dir's filesystem is noexec.
Result<UniqueFd> sealed_image(const std::string& bytes) {
  UniqueFd mem(::memfd_create("abx-init", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!mem.valid()) return Error::from_errno("memfd_create abx-init");
  if (auto s = write_all(mem.get(), bytes, "copy abx-init into memfd", ""); !s) return s.error();
  if (::fchmod(mem.get(), 0555) != 0) return Error::from_errno("chmod abx-init memfd");
  if (auto s = seal(mem.get()); !s) return s.error();
  // exec refuses a file that is open for writing (ETXTBSY): keep a read-only
  // descriptor and drop the writable one.
  const std::string self = "/proc/self/fd/" + std::to_string(mem.get());
  UniqueFd read_only(::open(self.c_str(), O_RDONLY | O_CLOEXEC));
  if (!read_only.valid()) return Error::from_errno("reopen abx-init memfd");
  return read_only;
}

// The copy at `path`, if it is ours (owned by us, written by no one else)
// and holds exactly `bytes`.
std::optional<UniqueFd> same_copy(const fs::path& path, const std::string& bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != ::geteuid() || (st.st_mode & 07222) != 0 ||
      static_cast<size_t>(st.st_size) != bytes.size())
    return std::nullopt;
  std::string held(bytes.size(), '\0');
  if (::pread(fd.get(), held.data(), held.size(), 0) != static_cast<ssize_t>(held.size()) ||
      held != bytes)
    return std::nullopt;
  return fd;
}

Result<UniqueFd> file_image(const fs::path& dir, const std::string& bytes) {
  const fs::path path = dir / ("abx-init-" + Sha256().update(bytes).hex().substr(0, 16));
  if (auto fd = same_copy(path, bytes)) return std::move(*fd);
  const fs::path temp = path.string() + ".tmp-" + std::to_string(::getpid());
  (void)::unlink(temp.c_str());
  UniqueFd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500));
  if (!out.valid()) return Error::from_errno("create", temp.string());
  Status written = write_all(out.get(), bytes, "write", temp.string());
  if (written && (::fchmod(out.get(), 0555) != 0 || ::fsync(out.get()) != 0))
    written = Error::from_errno("sync", temp.string());
  out.reset();  // exec refuses a file open for writing (ETXTBSY)
  if (written && ::rename(temp.c_str(), path.c_str()) != 0)
    written = Error::from_errno("rename", path.string());
  if (!written) {
    (void)::unlink(temp.c_str());
    return written.error();
  }
  if (auto fd = same_copy(path, bytes)) return std::move(*fd);
  return Error{"copy abx-init", EIO, path.string() + " changed under us"};
}

}  // namespace

Result<UniqueFd> load_init_image(const fs::path& binary, const fs::path& dir) {
  auto bytes = read_file(binary);
  if (!bytes) return Error{"read abx-init", bytes.error().errnum, binary.string()};
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0 && (fs.f_flag & ST_NOEXEC) != 0) return sealed_image(*bytes);
  return file_image(dir, *bytes);
}

// The parent's go byte and then the handoff fds, as two messages: the child
// reads the first before exec, init receives the second.
Status release(int sync, const Handoff& handoff) {
  const char go = 1;
  if (::write(sync, &go, 1) != 1) return Error::from_errno("release sandbox init");
  std::vector<int> fds;
  for (const auto& fd : handoff) fds.push_back(fd.get());
  return proto::send_message(sync, "fds", fds);
}

Result<pid_t> start_init(const InitFds& fds, uid_t owner,
                         const std::function<Result<Handoff>(pid_t)>& prepare) {
  int sync[2], status[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) != 0)
    return Error::from_errno("socketpair");
  UniqueFd sync_read(sync[0]), sync_write(sync[1]);
  if (::pipe2(status, O_CLOEXEC) != 0) return Error::from_errno("pipe");
  UniqueFd status_read(status[0]), status_write(status[1]);

  auto args = std::make_unique<ChildArgs>();
  args->sync_read = sync_read.get();
  args->sync_write = sync_write.get();
  args->status_write = status_write.get();
  args->image = fds.image;
  const int inherit[4] = {fds.config, status_write.get(), fds.listen, sync_read.get()};
  for (int i = 0; i < 4; ++i) {
    args->inherit[i] = inherit[i];
    std::snprintf(args->fd_text[i], sizeof args->fd_text[i], "%d", inherit[i]);
    args->argv[i + 1] = args->fd_text[i];
  }
  args->argv[0] = const_cast<char*>("abx-init");
  // The daemon's stdin, stdout and stderr too, which init starts with.
  const int keep[8] = {STDIN_FILENO, STDOUT_FILENO,      STDERR_FILENO, sync_read.get(),
                       fds.image,    status_write.get(), fds.config,    fds.listen};
  for (const int fd : keep)
    if (fd >= 0) args->keep[args->keep_count++] = fd;
  std::sort(args->keep, args->keep + args->keep_count);
  prepare_failure_reports(*args);

  void* mapped = ::mmap(nullptr, kStackSize, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (mapped == MAP_FAILED) return Error::from_errno("mmap init stack");
  std::unique_ptr<void, StackDeleter> stack(mapped);

  const pid_t pid = clone_blocked(args.get(), stack.get(), owner);
  if (pid < 0) return Error::from_errno("clone sandbox namespaces");
  sync_read.reset();
  status_write.reset();  // so a dead child reads as EOF

  auto handoff = prepare(pid);
  Status ready = handoff ? release(sync_write.get(), *handoff) : Status{handoff.error()};
  if (ready) ready = wait_ready(status_read.get(), pid);
  if (!ready) {
    kill_and_reap(pid);  // before the stack goes away
    // A child that failed before taking the handoff (its exec, say) broke
    // the pipe under release(): its own report, if it wrote one, says why.
    if (handoff && ready.error().errnum == EPIPE) {
      const Status reported = wait_ready(status_read.get(), pid);
      if (!reported && reported.error().errnum != ECHILD) return reported.error();
    }
    return ready.error();
  }
  return pid;
}

}  // namespace abx::runtime::spawner
