#include "agent/launch.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "agent/caps.h"
#include "runtime/root_paths.h"

namespace abx::agent {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// What the child reports through its close-on-exec pipe when it cannot exec.
struct ChildFailure {
  int32_t errnum = 0;
  char step[200] = {};
};

// Everything the child needs, built before fork.
struct Prepared {
  std::vector<std::string> argv_storage, env_storage;
  std::vector<char*> argv, envp;
  std::vector<std::string> candidates;  // where argv[0] may be
  std::string cwd;
  uid_t uid = 0;
  gid_t gid = 0;
  bool set_groups = true;
  bool pty = false;
  std::string pty_slave;
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  int workload_procs = -1;
  int command_procs = -1;
};

std::vector<std::string> exec_candidates(const ProcessSpec& spec) {
  const std::string& program = spec.argv[0];
  if (program.find('/') != std::string::npos) return {program};
  const auto path = spec.env.find("PATH");
  const std::string dirs = path != spec.env.end() ? path->second : kDefaultPath;
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    out.push_back((dir.empty() ? "." : dir) + "/" + program);
    start = end + 1;
  }
  return out;
}

Prepared prepare(const ProcessSpec& spec, bool full_id_map, const std::vector<UniqueFd>& stdio) {
  Prepared p;
  p.argv_storage = spec.argv;
  for (const auto& [k, v] : spec.env) p.env_storage.push_back(k + "=" + v);
  for (auto& a : p.argv_storage) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  for (auto& e : p.env_storage) p.envp.push_back(e.data());
  p.envp.push_back(nullptr);
  p.candidates = exec_candidates(spec);
  p.cwd = spec.cwd.empty() ? "/" : spec.cwd;
  // Without a full id map only root exists inside: everything runs as it.
  p.uid = full_id_map ? spec.uid : 0;
  p.gid = full_id_map ? spec.gid : 0;
  p.set_groups = full_id_map;
  p.pty = spec.pty;
  if (!spec.pty) {
    size_t i = 0;
    if (spec.stdin_pipe) p.stdin_fd = stdio[i++].get();
    p.stdout_fd = stdio[i++].get();
    p.stderr_fd = stdio[i++].get();
  }
  return p;
}

[[noreturn]] void fail(int report, const std::string& step) {
  ChildFailure f;
  f.errnum = errno;
  std::strncpy(f.step, step.c_str(), sizeof f.step - 1);
  (void)::write(report, &f, sizeof f);
  ::_exit(127);
}

// The daemon raises its own soft open-files limit to the hard one (often
// 524288); programs that loop over every possible descriptor crawl with that.
// Sandbox processes start at the usual 1024 and may raise it to the hard one.
void reset_open_files_limit() {
  constexpr rlim_t kSoftOpenFiles = 1024;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur <= kSoftOpenFiles) return;
  limit.rlim_cur = kSoftOpenFiles;
  (void)::setrlimit(RLIMIT_NOFILE, &limit);
}

void setup_stdio(const Prepared& p, int report) {
  if (p.pty) {
    const int slave = ::open(p.pty_slave.c_str(), O_RDWR);
    if (slave < 0) fail(report, "open pty " + p.pty_slave);
    if (::ioctl(slave, TIOCSCTTY, 0) != 0) fail(report, "set controlling terminal");
    if (::fchown(slave, p.uid, p.gid) != 0) fail(report, "chown pty");
    for (int fd = 0; fd < 3; ++fd)
      if (::dup2(slave, fd) < 0) fail(report, "dup2 pty");
    return;
  }
  const int in = p.stdin_fd >= 0 ? p.stdin_fd : ::open("/dev/null", O_RDONLY);
  if (in < 0) fail(report, "open /dev/null");
  if (::dup2(in, 0) < 0 || ::dup2(p.stdout_fd, 1) < 0 || ::dup2(p.stderr_fd, 2) < 0)
    fail(report, "dup2 stdio");
}

// Before the child looks up any path a caller gave: init's fds (the overlay's
// upper dir, host cgroup files, its control socket, every exit pipe) would
// otherwise be reachable as /proc/self/fd/N, as runc's were (CVE-2024-21626).
// Only stdio and the close-on-exec report pipe stay.
void close_inherited_fds(int report) {
  const auto keep = static_cast<unsigned>(report);
  if (keep > 3) ::close_range(3, keep - 1, 0);
  ::close_range(keep + 1, ~0U, 0);
}

// The caller's cwd, looked up as the user inside the sandbox's root: ".."
// stops at "/", and /proc's magic links (/proc/self/fd/N, /proc/1/cwd,
// /proc/PID/root) are refused (ELOOP). As runc does, a cwd the kernel cannot
// name from the root is refused too.
void enter_cwd(const std::string& cwd, int report) {
  const std::string step = "chdir " + cwd;
  UniqueFd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) fail(report, step);
  auto dir = runtime::root_paths::open(root.get(), cwd, O_PATH | O_DIRECTORY);
  if (!dir) {
    errno = dir.error().errnum;
    fail(report, step);
  }
  if (::fchdir(dir->get()) != 0) fail(report, step);
  char named[PATH_MAX];
  if (::getcwd(named, sizeof named) == nullptr || named[0] != '/') {
    errno = ELOOP;
    fail(report, step);
  }
}

[[noreturn]] void exec_child(const Prepared& p, int report) {
  if (auto s = become_workload(p.workload_procs); !s) {
    errno = s.error().errnum;
    fail(report, s.error().step);
  }
  // Before exec, so nothing the command starts is outside its group.
  if (p.command_procs >= 0 && ::write(p.command_procs, "0", 1) != 1)
    fail(report, "join the command's cgroup");
  reset_open_files_limit();
  if (::setsid() < 0) fail(report, "setsid");
  setup_stdio(p, report);
  close_inherited_fds(report);
  if (auto s = become_user(p.uid, p.gid, p.set_groups); !s) {
    errno = s.error().errnum;
    fail(report, s.error().step);
  }
  enter_cwd(p.cwd, report);
  int first_error = 0;
  for (const auto& candidate : p.candidates) {
    ::execve(candidate.c_str(), p.argv.data(), p.envp.data());
    if (errno != ENOENT && errno != ENOTDIR && first_error == 0) first_error = errno;
  }
  if (first_error != 0) errno = first_error;
  fail(report, "exec " + p.argv_storage[0]);
}

Result<UniqueFd> open_pty(const ProcessSpec& spec, std::string* slave) {
  UniqueFd master(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master.valid()) return Error::from_errno("open /dev/ptmx");
  if (::unlockpt(master.get()) != 0) return Error::from_errno("unlock pty");
  char name[64];
  if (::ptsname_r(master.get(), name, sizeof name) != 0) return Error::from_errno("ptsname");
  winsize size{spec.pty_rows, spec.pty_cols, 0, 0};
  if (::ioctl(master.get(), TIOCSWINSZ, &size) != 0) return Error::from_errno("set pty size");
  *slave = name;
  return master;
}

}  // namespace

// Into the memory cgroup that holds the sandbox's limit, which init stays
// out of: an OOM there never picks init, whatever score sandbox root gives
// it. Before anything else, so every byte the process uses is charged there.
// Init runs shielded from the OOM killer (-1000); its children must not be.
// A restored init's memory was made by CRIU in the host's user namespace:
// while it is undumpable its /proc files (and those of its children before
// their exec) are host root's, which no process of the sandbox may open for
// writing. Such an init runs unshielded (Runtime::restore), so its children
// start at 0 already. No allocation: this runs in the pre-exec child.
static bool already_unshielded() {
  const int saved = errno;
  const int fd = ::open("/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC);
  char value[8] = {};
  const ssize_t n = fd >= 0 ? ::read(fd, value, sizeof value - 1) : -1;
  if (fd >= 0) ::close(fd);
  errno = saved;
  return n >= 1 && value[0] == '0' && (n == 1 || value[1] == '\n');
}

Status become_workload(int workload_procs) {
  for (int signo = 1; signo < NSIG; ++signo) ::signal(signo, SIG_DFL);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (workload_procs >= 0 && ::write(workload_procs, "0", 1) != 1)
    return Error::from_errno("join the sandbox's memory cgroup");
  const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  const bool reset = fd >= 0 ? ::write(fd, "0", 1) == 1 : already_unshielded();
  const int saved = errno;
  if (fd >= 0) ::close(fd);
  if (!reset) return Error{"reset oom_score_adj", saved, {}};
  const sched_param normal{};  // init runs as a batch task (init.cc); its children do not
  if (::sched_setscheduler(0, SCHED_OTHER, &normal) != 0)
    return Error::from_errno("reset the scheduling policy");
  return {};
}

Status become_user(uid_t uid, gid_t gid, bool set_groups) {
  if (auto s = caps::restrict_for_user_process(); !s) return s;
  if (set_groups && ::setgroups(1, &gid) != 0) return Error::from_errno("setgroups");
  if (::setresgid(gid, gid, gid) != 0) return Error::from_errno("setresgid", std::to_string(gid));
  if (::setresuid(uid, uid, uid) != 0) return Error::from_errno("setresuid", std::to_string(uid));
  return {};
}

Result<Launched> launch(const ProcessSpec& spec, bool full_id_map, int workload_procs,
                        int command_procs, const std::vector<UniqueFd>& stdio) {
  const size_t expected = spec.pty ? 0 : (spec.stdin_pipe ? 3 : 2);
  if (spec.argv.empty() || stdio.size() != expected)
    return Error{"spawn", EINVAL, "malformed spawn request"};
  Prepared p = prepare(spec, full_id_map, stdio);
  p.workload_procs = workload_procs;
  p.command_procs = command_procs;
  Launched launched;
  if (spec.pty) {
    auto master = open_pty(spec, &p.pty_slave);
    if (!master) return master.error();
    launched.pty_master = std::move(*master);
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return Error::from_errno("pipe");
  UniqueFd report_read(report[0]), report_write(report[1]);
  const pid_t pid = ::fork();
  if (pid < 0) return Error::from_errno("fork");
  if (pid == 0) exec_child(p, report_write.get());
  launched.pid = pid;
  launched.report = std::move(report_read);
  return launched;
}

bool start_reported(int report) {
  pollfd ready{report, POLLIN, 0};
  return ::poll(&ready, 1, 0) > 0;
}

// An empty pipe at EOF: the child exec'd (or died before it could write,
// which its exit status then tells).
Status start_outcome(int report, pid_t pid, bool reaped) {
  ChildFailure f;
  ssize_t n;
  do n = ::read(report, &f, sizeof f);
  while (n < 0 && errno == EINTR);
  if (n == 0) return {};
  if (!reaped) abandon_start(pid);  // it may be stopped between its report and its exit
  if (n != static_cast<ssize_t>(sizeof f)) return Error{"spawn", EPROTO, "short failure report"};
  f.step[sizeof f.step - 1] = '\0';
  return Error{f.step, f.errnum, {}};
}

// Not waited for here: init's reaper collects it like any orphan (no exit
// pipe is registered for it), so init never blocks on a child the sandbox
// holds.
void abandon_start(pid_t pid) { ::kill(pid, SIGKILL); }

}  // namespace abx::agent
