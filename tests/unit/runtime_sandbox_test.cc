// Integration tests: real sandboxes from a `host`-style rootfs (symlinks plus
// a read-only bind of the host's /usr). Need root; skipped otherwise.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "common/fd_io.h"
#include "runtime/agent_tcp_client.h"
#include "runtime/cgroup.h"
#include "runtime/runtime.h"

namespace abx::runtime {
namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// The first line `fd` gives within `timeout_ms` (without its newline), or what
// came before the timeout or end of file.
std::string read_line(int fd, int timeout_ms) {
  std::string line;
  char c;
  pollfd readable{fd, POLLIN, 0};
  while (::poll(&readable, 1, timeout_ms) == 1 && ::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

// -1 if the exit pipe closed without a status.
int wait_status(const Process& p) {
  int32_t status = -1;
  if (::read(p.exit_fd.get(), &status, sizeof status) != sizeof status) return -1;
  return status;
}

std::string mounts() {
  std::ifstream in("/proc/self/mounts");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

fs::path beside_self(const std::string& name) {
  return fs::read_symlink("/proc/self/exe").parent_path() / name;
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    char tmpl[] = "/tmp/abxrt-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);  // the sandbox's root must traverse to the rootfs
    config_ = {dir_ / "state", beside_self("abx-init"), {}};
    // Sandbox networks (veths, nftables) are the business of tests/net, which gives them
    // a world of their own; these tests keep to loopback.
    config_.network.enabled = false;
    configure(config_);
    auto rt = open_runtime(config_);
    ASSERT_TRUE(rt) << rt.error().message();
    runtime_ = std::move(*rt);
    make_rootfs();
  }

  virtual void configure(RuntimeConfig& /*config*/) {}

  void TearDown() override {
    sandboxes_.clear();
    for (const auto& record : records_) EXPECT_TRUE(runtime_->destroy(record));
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  void make_rootfs() {
    rootfs_ = dir_ / "rootfs";
    fs::create_directories(rootfs_ / "etc");
    for (const char* link : {"bin", "lib", "lib64", "sbin"})
      fs::create_symlink(std::string("usr/") + link, rootfs_ / link);
    std::ofstream(rootfs_ / "etc/passwd") << "root:x:0:0:root:/root:/bin/sh\n"
                                          << "user:x:1000:1000::/home/user:/bin/sh\n";
    std::ofstream(rootfs_ / "etc/group") << "root:x:0:\nuser:x:1000:\n";
    for (const auto& entry : fs::recursive_directory_iterator(rootfs_))
      ASSERT_EQ(::lchown(entry.path().c_str(), runtime_->host_uid(0), runtime_->host_gid(0)), 0);
    ASSERT_EQ(::lchown(rootfs_.c_str(), runtime_->host_uid(0), runtime_->host_gid(0)), 0);
  }

  RootfsSpec rootfs() const { return {{rootfs_}, {{"/usr", "/usr"}}}; }

  Sandbox& create(Limits limits = {}) { return create(rootfs(), limits); }

  Sandbox& create(const RootfsSpec& rootfs, Limits limits = {}) {
    SandboxSpec spec;
    spec.id = "t" + std::to_string(::getpid()) + "x" + std::to_string(records_.size());
    spec.rootfs = rootfs;
    spec.limits = limits;
    auto sb = runtime_->create(spec);
    EXPECT_TRUE(sb) << sb.error().message();
    if (!sb) throw std::runtime_error(sb.error().message());
    records_.push_back((*sb)->record());
    sandboxes_.push_back(std::move(*sb));
    return *sandboxes_.back();
  }

  // A sandbox whose agent also serves TCP `port` to clients with `token`.
  Sandbox& create_serving_tcp(const std::string& name, uint16_t port, const std::string& token) {
    SandboxSpec spec;
    spec.id = "t" + std::to_string(::getpid()) + name;
    spec.rootfs = rootfs();
    spec.agent_port = port;
    spec.agent_token = token;
    auto sb = runtime_->create(spec);
    EXPECT_TRUE(sb) << sb.error().message();
    if (!sb) throw std::runtime_error(sb.error().message());
    records_.push_back((*sb)->record());
    sandboxes_.push_back(std::move(*sb));
    return *sandboxes_.back();
  }

  struct Output {
    std::string out, err;
    int status = -1;
  };

  Output run(Sandbox& sb, const std::string& script, uint32_t uid = 1000) {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.uid = spec.gid = uid;
    spec.cwd = uid == 0 ? "/" : "/home/user";
    auto p = sb.spawn(spec);
    EXPECT_TRUE(p) << p.error().message();
    if (!p) return {};
    p->stdin_fd.reset();
    Output o;
    o.out = read_all(p->stdout_fd.get());
    o.err = read_all(p->stderr_fd.get());
    o.status = wait_status(*p);
    return o;
  }

  fs::path dir_, rootfs_;
  RuntimeConfig config_;
  std::unique_ptr<Runtime> runtime_;
  std::vector<std::unique_ptr<Sandbox>> sandboxes_;
  std::vector<SandboxRecord> records_;
};

TEST_F(SandboxTest, RunsACommandAsUser) {
  Sandbox& sb = create();
  Output o = run(sb, "echo hi; id -u; id -g; pwd; echo err >&2; exit 3");
  EXPECT_EQ(o.out, "hi\n1000\n1000\n/home/user\n");
  EXPECT_EQ(o.err, "err\n");
  EXPECT_EQ(decode_wait_status(o.status).exit_code, 3);
}

TEST_F(SandboxTest, PassesStdin) {
  Sandbox& sb = create();
  ProcessSpec spec;
  spec.argv = {"cat"};
  spec.env = {{"PATH", "/usr/bin"}};
  auto p = sb.spawn(spec);
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_EQ(::write(p->stdin_fd.get(), "abc", 3), 3);
  p->stdin_fd.reset();
  EXPECT_EQ(read_all(p->stdout_fd.get()), "abc");
  EXPECT_EQ(wait_status(*p), 0);
}

TEST_F(SandboxTest, SpawnFailuresAreErrors) {
  Sandbox& sb = create();
  ProcessSpec spec;
  spec.argv = {"no-such-program"};
  auto missing = sb.spawn(spec);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().errnum, ENOENT);
  spec.argv = {"/bin/true"};
  spec.cwd = "/nowhere";
  auto bad_cwd = sb.spawn(spec);
  ASSERT_FALSE(bad_cwd);
  EXPECT_EQ(bad_cwd.error().errnum, ENOENT);
  EXPECT_NE(bad_cwd.error().message().find("/nowhere"), std::string::npos);
}

TEST_F(SandboxTest, PtyGivesATerminal) {
  Sandbox& sb = create();
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "tty; stty size; echo done"};
  spec.env = {{"PATH", "/usr/bin"}};
  spec.pty = true;
  spec.pty_cols = 100;
  spec.pty_rows = 30;
  auto p = sb.spawn(spec);
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_TRUE(p->pty_fd.valid());
  EXPECT_FALSE(p->stdout_fd.valid());
  std::string out;
  char buf[256];
  ssize_t n;
  // Ends with EIO at hangup.
  while ((n = ::read(p->pty_fd.get(), buf, sizeof buf)) > 0)
    out.append(buf, static_cast<size_t>(n));
  EXPECT_NE(out.find("/dev/pts/0"), std::string::npos) << out;
  EXPECT_NE(out.find("30 100"), std::string::npos) << out;
  EXPECT_NE(out.find("done"), std::string::npos) << out;
  EXPECT_EQ(wait_status(*p), 0);
}

TEST_F(SandboxTest, IsIsolated) {
  Sandbox& sb = create();
  Output procs = run(sb, "ls /proc | grep -c '^[0-9]'");
  EXPECT_LE(std::stoi(procs.out), 4) << procs.out;
  Output net = run(sb, "grep -c : /proc/net/dev; grep -o 'lo:' /proc/net/dev");
  EXPECT_EQ(net.out, "1\nlo:\n");
  Output host = run(sb, "hostname");
  EXPECT_EQ(host.out, sb.record().id + "\n");
  Output root = run(sb, "id -u; grep CapEff /proc/self/status; unshare -U true", 0);
  EXPECT_EQ(root.out.substr(0, 2), "0\n");
  EXPECT_NE(root.out.find("CapEff:\t00000000a80425fb"), std::string::npos) << root.out;
  EXPECT_NE(decode_wait_status(root.status).exit_code, 0) << "unshare must be denied";
  Output caps = run(sb, "grep CapEff /proc/self/status");
  EXPECT_EQ(caps.out, "CapEff:\t0000000000000000\n");
  Output write_usr = run(sb, "touch /usr/x", 0);
  EXPECT_NE(decode_wait_status(write_usr.status).exit_code, 0);
  Output fds = run(sb, "ls /proc/self/fd | wc -l");
  EXPECT_EQ(fds.out, "4\n") << "only stdio and ls's own directory fd";
  Output masked = run(sb,
                      "wc -c < /proc/keys; grep NoNewPrivs /proc/self/status; "
                      "echo x > /proc/sys/kernel/hostname || echo ro",
                      0);
  EXPECT_EQ(masked.out, "0\nNoNewPrivs:\t1\nro\n") << masked.err;
  Output tmp = run(sb, "echo data > /tmp/f && cat /tmp/f && stat -c %a /tmp");
  EXPECT_EQ(tmp.out, "data\n1777\n");
}

// Set-id bits work only in a template that asks (RootfsSpec::allow_setid):
// elsewhere every process has no_new_privs. Either way the seccomp filter
// binds every process.
TEST_F(SandboxTest, SetidProgramsWorkOnlyWhereTheTemplateAllowsThem) {
  const fs::path setid_id = rootfs_ / "setid-id";
  fs::copy_file("/usr/bin/id", setid_id);
  ASSERT_EQ(::chown(setid_id.c_str(), runtime_->host_uid(0), runtime_->host_gid(0)), 0);
  ASSERT_EQ(::chmod(setid_id.c_str(), 04755), 0);
  const std::string script =
      "/setid-id -u; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; "
      "read inside outside count < /proc/self/uid_map; echo \"$inside $outside\"";
  // Each sandbox's own range (runtime/id_ranges.h), or the shared one.
  auto root_map = [](const Sandbox& sb) { return "0 " + std::to_string(sb.host_uid(0)) + "\n"; };

  Sandbox& plain_sb = create();
  Output plain = run(plain_sb, script);
  EXPECT_EQ(plain.out, "1000\nNoNewPrivs:\t1\nSeccomp:\t2\n" + root_map(plain_sb)) << plain.err;

  RootfsSpec allowing = rootfs();
  allowing.allow_setid = true;
  // Root there is still the unprivileged host uid root maps to.
  Sandbox& setid_sb = create(allowing);
  Output setid = run(setid_sb, script);
  EXPECT_EQ(setid.out, "0\nNoNewPrivs:\t0\nSeccomp:\t2\n" + root_map(setid_sb)) << setid.err;
}

TEST_F(SandboxTest, TemplateAndBindsUnderAPrivateDir) {
  const fs::path secret = dir_ / "secret";
  fs::create_directories(secret);
  std::ofstream(secret / "note") << "hidden\n";
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);  // like a data dir under /root
  RootfsSpec spec = rootfs();
  spec.read_only_binds.push_back({secret / "note", "/opt/note"});
  Sandbox& sb = create(spec);
  Output o = run(sb, "cat /opt/note; grep -c user /etc/passwd");
  EXPECT_EQ(o.out, "hidden\n1\n") << o.err;
  EXPECT_NE(decode_wait_status(run(sb, "echo x > /opt/note", 0).status).exit_code, 0);
}

// The sandbox's first process reports why it could not become init (here the
// exec, of a file that is no program) and the create fails with that step.
TEST_F(SandboxTest, AnInitThatCannotRunFailsTheCreateNamingTheStep) {
  const fs::path not_a_program = dir_ / "not-init";
  std::ofstream(not_a_program) << "plain text\n";
  RuntimeConfig config = config_;
  config.state_dir = dir_ / "bad-init";
  config.init_binary = not_a_program;
  config.warm_pool_size = 0;
  auto rt = open_runtime(config);
  ASSERT_TRUE(rt) << rt.error().message();
  SandboxSpec spec;
  spec.id = "t" + std::to_string(::getpid()) + "noinit";
  spec.rootfs = rootfs();
  auto sb = (*rt)->create(spec);
  ASSERT_FALSE(sb);
  EXPECT_NE(sb.error().message().find("exec abx-init"), std::string::npos) << sb.error().message();
}

// A connection to `port` on the loopback of the sandbox whose PID 1 is
// `init_pid`, made from a thread that enters its network namespace (a
// thread's namespace is its own; it ends with the thread).
UniqueFd connect_in_sandbox(pid_t init_pid, uint16_t port) {
  UniqueFd connected;
  std::thread([&] {
    UniqueFd ns(
        ::open(("/proc/" + std::to_string(init_pid) + "/ns/net").c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns.valid() || ::setns(ns.get(), CLONE_NEWNET) != 0) return;
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0)
      connected = std::move(fd);
  }).join();
  return connected;
}

struct Ended {
  std::string out, err;
  int wait_status = -1;
};

// Reads a command's kept output from the agent until it has ended (30 s at most).
// `script` run by /bin/sh as the sandbox's user.
ProcessSpec shell(const std::string& script) {
  ProcessSpec process;
  process.argv = {"/bin/sh", "-c", script};
  process.env = {{"PATH", "/usr/bin:/bin"}};
  process.uid = process.gid = 1000;
  process.cwd = "/";
  return process;
}

Ended read_until_ended(AgentTcpClient& agent, int pid) {
  Ended ended;
  uint64_t offset = 0;
  for (int attempt = 0; attempt < 1500; ++attempt) {
    auto slice = agent.read(pid, offset);
    EXPECT_TRUE(slice) << slice.error().message();
    if (!slice) break;
    for (const auto& chunk : slice->chunks) {
      (chunk.stream == OutputStream::kStdout ? ended.out : ended.err) += chunk.bytes;
      offset = chunk.offset + chunk.bytes.size();  // a slice holds at most kMaxReadBytes
    }
    if (slice->chunks.empty()) offset = slice->end;
    if (slice->ended && offset >= slice->end) {
      ended.wait_status = slice->wait_status;
      break;
    }
    if (slice->chunks.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ended;
}

// The transport for a daemon on another host: the agent serves spawn, read
// and signal on a TCP port to a client with the sandbox's token, keeps the
// output itself and enforces the timeout itself.
TEST_F(SandboxTest, AgentServesItsTokenOverTcp) {
  const std::string token = "a-token-of-this-sandbox";
  Sandbox& sb = create_serving_tcp("tcp", 7070, token);
  const pid_t init = sb.record().init_pid;

  // A wrong token runs nothing: the agent closes the connection.
  auto stranger = AgentTcpClient::start(connect_in_sandbox(init, 7070), "a-token-of-another");
  ASSERT_TRUE(stranger) << stranger.error().message();
  auto refused = stranger->spawn(shell("touch /tmp/ran"), 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().errnum, ECONNRESET);
  EXPECT_EQ(run(sb, "test -e /tmp/ran").status, 256) << "the stranger's command ran";

  // Code in the sandbox holding connections open without a Hello cannot keep
  // the daemon out: beyond 16 the oldest go.
  std::vector<UniqueFd> squatters;
  for (int i = 0; i < 40; ++i) squatters.push_back(connect_in_sandbox(init, 7070));
  auto agent = AgentTcpClient::start(connect_in_sandbox(init, 7070), token);
  ASSERT_TRUE(agent) << agent.error().message();
  auto pid = agent->spawn(shell("echo out; echo err >&2; exit 3"), 0);
  ASSERT_TRUE(pid) << pid.error().message();
  const Ended ended = read_until_ended(*agent, *pid);
  EXPECT_EQ(ended.out, "out\n");
  EXPECT_EQ(ended.err, "err\n");
  EXPECT_TRUE(WIFEXITED(ended.wait_status) && WEXITSTATUS(ended.wait_status) == 3);

  auto late = agent->spawn(shell("sleep 100"), 300);
  ASSERT_TRUE(late) << late.error().message();
  const int late_status = read_until_ended(*agent, *late).wait_status;
  EXPECT_TRUE(WIFSIGNALED(late_status) && WTERMSIG(late_status) == SIGKILL) << late_status;

  auto signalled = agent->spawn(shell("sleep 100"), 0);
  ASSERT_TRUE(signalled) << signalled.error().message();
  ASSERT_TRUE(agent->signal(*signalled, SIGTERM));
  const int signalled_status = read_until_ended(*agent, *signalled).wait_status;
  EXPECT_TRUE(WIFSIGNALED(signalled_status) && WTERMSIG(signalled_status) == SIGTERM);

  // Still serving on the control socket, and over TCP.
  EXPECT_EQ(run(sb, "echo fine").out, "fine\n");
  EXPECT_TRUE(agent->read(*pid, 0));
}

// A client follows a command over TCP without polling: a read that waits is
// answered when output comes or the command ends, and an idle one after its
// wait; meanwhile the agent serves the other connections.
TEST_F(SandboxTest, AgentAnswersAWaitingReadWhenOutputComes) {
  const std::string token = "the-token-of-the-follower";
  const pid_t init = create_serving_tcp("tcpwait", 7073, token).record().init_pid;
  auto follower = AgentTcpClient::start(connect_in_sandbox(init, 7073), token);
  auto other = AgentTcpClient::start(connect_in_sandbox(init, 7073), token);
  ASSERT_TRUE(follower && other);
  auto pid = other->spawn(shell("sleep 0.3; echo one; sleep 0.3; echo two; exit 4"), 0);
  ASSERT_TRUE(pid) << pid.error().message();

  std::string out;
  uint64_t offset = 0;
  int reads = 0;
  std::optional<OutputSlice> last;
  while (reads < 20) {
    auto slice = follower->read(*pid, offset, proto::kMaxReadBytes, 20000);
    ASSERT_TRUE(slice) << slice.error().message();
    ++reads;
    for (const auto& chunk : slice->chunks) {
      out += chunk.bytes;
      offset = chunk.offset + chunk.bytes.size();
    }
    if (slice->ended && offset >= slice->end) {
      last = std::move(*slice);
      break;
    }
  }
  EXPECT_EQ(out, "one\ntwo\n");
  ASSERT_TRUE(last);
  EXPECT_TRUE(WIFEXITED(last->wait_status) && WEXITSTATUS(last->wait_status) == 4);
  EXPECT_LE(reads, 4) << "each read should wait for output, not return empty";

  auto quiet = other->spawn(shell("exec sleep 100"), 0);
  ASSERT_TRUE(quiet) << quiet.error().message();
  auto nothing = follower->read(*quiet, 0, proto::kMaxReadBytes, 200);
  ASSERT_TRUE(nothing) << nothing.error().message();
  EXPECT_TRUE(nothing->chunks.empty());
  EXPECT_FALSE(nothing->ended);
  auto unknown = follower->read(999999, 0, proto::kMaxReadBytes, 20000);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().errnum, ENOENT);
  EXPECT_TRUE(other->signal(*quiet, SIGKILL));
}

// Follows an in-band command to its end as a daemon's event loop would:
// wait for the follower's fd, take the answer, ask again from where it left.
Ended follow_to_end(OutputFollower& follower) {
  Ended ended;
  uint64_t offset = 0;
  for (int asked = 0; asked < 200; ++asked) {
    EXPECT_TRUE(follower.ask(offset, 20000));
    pollfd answered{follower.fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&answered, 1, 30000), 1) << "no answer within 30 s";
    auto slice = follower.answer();
    EXPECT_TRUE(slice) << slice.error().message();
    if (!slice || !*slice) break;
    for (const auto& chunk : (*slice)->chunks) {
      (chunk.stream == OutputStream::kStdout ? ended.out : ended.err) += chunk.bytes;
      offset = chunk.offset + chunk.bytes.size();
    }
    if ((*slice)->ended && offset >= (*slice)->end) {
      ended.wait_status = (*slice)->wait_status;
      break;
    }
  }
  return ended;
}

// In band on the control socket: the agent makes the pipes (the daemon
// gets no fd), keeps the output for any follower, takes stdin and resizes
// a terminal by request, lists its commands with their labels, and puts
// each in a cgroup of its own.
TEST_F(SandboxTest, InBandCommandsKeepEveryFdInTheSandbox) {
  Sandbox& sb = create();
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "read line; echo got $line; echo oops >&2; exit 5"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.supervise_label = "the-reader";
  auto pid = sb.spawn_in_band(spec);
  ASSERT_TRUE(pid) << pid.error().message();
  auto listed = sb.list_processes();
  ASSERT_TRUE(listed) << listed.error().message();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().pid, *pid);
  EXPECT_EQ(listed->front().label, "the-reader");
  EXPECT_FALSE(listed->front().ended);
  EXPECT_EQ(sb.command_processes().count(*pid), 1u) << "no cgroup of its own";
  auto follower = sb.follow_output(*pid);
  ASSERT_TRUE(follower) << follower.error().message();
  ASSERT_TRUE(sb.send_input(*pid, "hello\n"));
  const Ended ended = follow_to_end(**follower);
  EXPECT_EQ(ended.out, "got hello\n");
  EXPECT_EQ(ended.err, "oops\n");
  EXPECT_TRUE(WIFEXITED(ended.wait_status) && WEXITSTATUS(ended.wait_status) == 5);
  // A second follower, later, reads it all again from the ring.
  auto again = sb.follow_output(*pid);
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(follow_to_end(**again).out, "got hello\n");

  ProcessSpec terminal;
  terminal.argv = {"/bin/sh", "-c", "read go; stty size"};
  terminal.env = spec.env;
  terminal.pty = true;
  terminal.supervise_label = "the-terminal";
  auto tty = sb.spawn_in_band(terminal);
  ASSERT_TRUE(tty) << tty.error().message();
  ASSERT_TRUE(sb.resize_terminal(*tty, 100, 40));
  ASSERT_TRUE(sb.send_input(*tty, "go\n"));
  auto shown = sb.follow_output(*tty);
  ASSERT_TRUE(shown) << shown.error().message();
  EXPECT_NE(follow_to_end(**shown).out.find("40 100"), std::string::npos);
  EXPECT_FALSE(sb.send_input(999999, "x"));
}

// An in-band command as the agent lists it (nullopt: not listed).
std::optional<ListedProcess> listed_as(Sandbox& sb, int pid) {
  auto listed = sb.list_processes();
  EXPECT_TRUE(listed) << listed.error().message();
  if (listed)
    for (const auto& process : *listed)
      if (process.pid == pid) return process;
  return std::nullopt;
}

// A follower's end comes after the last byte the command wrote, also when
// the agent had stopped reading it at the follower's window when it exited
// (the rest still in its pipe); and once a follower had that end, the next
// daemon has nothing of it to adopt.
TEST_F(SandboxTest, AnInBandEndComesAfterTheLastByte) {
  Sandbox& sb = create();
  // A 64 KiB ring (so a 64 KiB window), a first line, then 96 KiB in small
  // writes: the agent reads up to the window, the rest waits in the pipe
  // when the writer exits, and one read answers all the ring holds.
  constexpr uint64_t kWritten = 6 + 24 * 4096;
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c",
               "sleep 0.3; echo first; sleep 0.3; "
               "for i in $(seq 24); do head -c 4096 /dev/zero; done"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.output_ring_bytes = 64 * 1024;
  auto pid = sb.spawn_in_band(spec);
  ASSERT_TRUE(pid) << pid.error().message();
  auto follower = sb.follow_output(*pid);
  ASSERT_TRUE(follower) << follower.error().message();
  ASSERT_TRUE((*follower)->ask(0, 20000));  // waits for the first output: the follower's now
  pollfd answered{(*follower)->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&answered, 1, 30000), 1);
  auto first = (*follower)->answer();
  ASSERT_TRUE(first && *first);
  // The follower asks nothing more until the command has exited.
  for (int i = 0; i < 500; ++i) {
    const auto listed = listed_as(sb, *pid);
    if (listed && listed->ended) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(listed_as(sb, *pid)->ended) << "the writer did not end";
  uint64_t offset = 6;
  bool ended = false;
  for (int asked = 0; asked < 100 && !ended; ++asked) {
    ASSERT_TRUE((*follower)->ask(offset, 20000));
    ASSERT_EQ(::poll(&answered, 1, 30000), 1);
    auto slice = (*follower)->answer();
    ASSERT_TRUE(slice && *slice);
    for (const auto& chunk : (*slice)->chunks) offset = chunk.offset + chunk.bytes.size();
    ended = (*slice)->ended && offset >= (*slice)->end;
  }
  EXPECT_TRUE(ended);
  EXPECT_EQ(offset, kWritten) << "the end came before the last byte";
  EXPECT_FALSE(listed_as(sb, *pid)) << "a command whose end was followed is listed for adoption";
}

// The agent lists whether an in-band command's stdin is open: a daemon that
// adopts it knows whether it takes input.
TEST_F(SandboxTest, TheAgentListsAnInBandCommandsStdin) {
  Sandbox& sb = create();
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "exec sleep 100"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.stdin_pipe = false;
  auto deaf = sb.spawn_in_band(spec);
  spec.stdin_pipe = true;
  auto reader = sb.spawn_in_band(spec);
  auto closed = sb.spawn_in_band(spec);
  ASSERT_TRUE(deaf && reader && closed);
  ASSERT_TRUE(sb.close_stdin(*closed));
  EXPECT_FALSE(listed_as(sb, *deaf)->has_stdin);
  EXPECT_TRUE(listed_as(sb, *reader)->has_stdin);
  EXPECT_FALSE(listed_as(sb, *closed)->has_stdin);
  for (const int pid : {*deaf, *reader, *closed}) EXPECT_TRUE(sb.signal(pid, SIGKILL));
}

// Commands that never read their stdin: the agent holds at most
// proto::kMaxPendingInputTotal of input for all of them together, then
// refuses more (EAGAIN, as for one command's full queue).
TEST_F(SandboxTest, TheAgentBoundsThePendingInputOfAllCommands) {
  Sandbox& sb = create();
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", "exec sleep 100"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.stdin_pipe = true;
  std::vector<int> deaf;
  for (int i = 0; i < 12; ++i) {
    auto pid = sb.spawn_in_band(spec);
    ASSERT_TRUE(pid) << pid.error().message();
    deaf.push_back(*pid);
  }
  const std::string piece(proto::kMaxInputBytes, 'z');
  size_t taken = 0;
  Status refused;
  for (const int pid : deaf) {
    Status sent;
    for (int i = 0; i < 40 && sent; ++i)
      if ((sent = sb.send_input(pid, piece))) taken += piece.size();
    ASSERT_FALSE(sent) << "40 x 64 KiB queued for a command that reads nothing";
    EXPECT_EQ(sent.error().errnum, EAGAIN) << sent.error().message();
    refused = sent;
  }
  // Each pipe holds its 64 KiB besides what the agent keeps.
  EXPECT_LE(taken, proto::kMaxPendingInputTotal + deaf.size() * 64 * 1024)
      << "12 commands took " << taken << " bytes of input they never read";
  EXPECT_NE(refused.error().message().find("sandbox's commands"), std::string::npos)
      << refused.error().message();
  for (const int pid : deaf) EXPECT_TRUE(sb.signal(pid, SIGKILL));
  // Killed, their queues leave the budget: a new command takes input again.
  for (int i = 0; i < 200; ++i) {
    const auto listed = listed_as(sb, deaf.back());
    if (listed && listed->ended) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto fresh = sb.spawn_in_band(spec);
  ASSERT_TRUE(fresh) << fresh.error().message();
  for (int i = 0; i < 8; ++i)
    EXPECT_TRUE(sb.send_input(*fresh, std::string(proto::kMaxInputBytes, 'y')));
  EXPECT_TRUE(sb.signal(*fresh, SIGKILL));
}

// A command's kept stdout until it shows `needle` (30 s at most).
std::string read_until_shown(AgentTcpClient& agent, int pid, const std::string& needle) {
  std::string out;
  for (int attempt = 0; attempt < 1500 && out.find(needle) == std::string::npos; ++attempt) {
    auto slice = agent.read(pid, out.size());
    if (!slice || slice->ended) break;
    for (const auto& chunk : slice->chunks) out += chunk.bytes;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return out;
}

// Over TCP the agent also takes a command's stdin, queued as it reads, and
// drives its terminal: what it shows, what is typed, its size.
TEST_F(SandboxTest, AgentTakesStdinAndDrivesATerminalOverTcp) {
  const std::string token = "the-token-of-this-sandbox";
  const pid_t init = create_serving_tcp("tcpio", 7071, token).record().init_pid;
  auto agent = AgentTcpClient::start(connect_in_sandbox(init, 7071), token);
  ASSERT_TRUE(agent) << agent.error().message();

  // More than a pipe holds arrives whole and in order; EOF once closed. (It
  // stays until read: an ended command keeps only the tail of its output.)
  auto cat = agent->spawn(shell("cat; echo done; exec sleep 100"), 0, 4 << 20);
  ASSERT_TRUE(cat) << cat.error().message();
  std::string sent = "hello\n";
  ASSERT_TRUE(agent->send_input(*cat, sent));
  for (char fill = 'a'; fill < 'a' + 5; ++fill) {
    const std::string piece(proto::kMaxInputBytes, fill);
    ASSERT_TRUE(agent->send_input(*cat, piece));
    sent += piece;
  }
  ASSERT_TRUE(agent->close_stdin(*cat));
  const std::string echoed = read_until_shown(*agent, *cat, "done\n");
  EXPECT_EQ(echoed.size(), sent.size() + 5);
  EXPECT_TRUE(echoed == sent + "done\n") << "stdin arrived out of order or incomplete";
  ASSERT_TRUE(agent->signal(*cat, SIGKILL));
  EXPECT_TRUE(WIFSIGNALED(read_until_ended(*agent, *cat).wait_status));
  const auto gone = agent->send_input(*cat, "late");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().errnum, ESRCH);

  // A command that never reads: the agent holds a bounded queue, then refuses.
  ProcessSpec sleeper = shell("sleep 100");
  sleeper.supervise_label = "the daemon's note on it";
  auto deaf = agent->spawn(sleeper, 0);
  ASSERT_TRUE(deaf) << deaf.error().message();
  // What a daemon rebuilds its view from: the running one with its label,
  // the ended one marked so.
  auto listed = agent->list();
  ASSERT_TRUE(listed) << listed.error().message();
  std::map<int, proto::Supervised> by_pid;
  for (const auto& process : *listed) by_pid[process.pid] = process;
  ASSERT_TRUE(by_pid.contains(*deaf) && by_pid.contains(*cat));
  EXPECT_EQ(by_pid[*deaf].label, "the daemon's note on it");
  EXPECT_FALSE(by_pid[*deaf].ended);
  EXPECT_TRUE(by_pid[*cat].ended);
  Status full;
  for (int i = 0; i < 40 && full; ++i)
    full = agent->send_input(*deaf, std::string(proto::kMaxInputBytes, 'z'));
  ASSERT_FALSE(full) << "40 x 64 KiB queued for a command that reads nothing";
  EXPECT_EQ(full.error().errnum, EAGAIN) << full.error().message();
  const auto no_terminal = agent->resize(*deaf, 100, 30);
  ASSERT_FALSE(no_terminal);
  EXPECT_EQ(no_terminal.error().errnum, ENOTTY);
  ASSERT_TRUE(agent->signal(*deaf, SIGKILL));

  // A terminal: its size, a resize, typed input, its exit code.
  ProcessSpec term = shell("stty size; read line; stty size; echo got:$line; exit 7");
  term.pty = true;
  term.pty_cols = 100;
  term.pty_rows = 30;
  auto tty = agent->spawn(term, 0);
  ASSERT_TRUE(tty) << tty.error().message();
  EXPECT_NE(read_until_shown(*agent, *tty, "30 100").find("30 100"), std::string::npos);
  ASSERT_TRUE(agent->resize(*tty, 120, 40));
  ASSERT_TRUE(agent->send_input(*tty, "hi\n"));
  const Ended typed = read_until_ended(*agent, *tty);
  EXPECT_NE(typed.out.find("40 120"), std::string::npos) << typed.out;
  EXPECT_NE(typed.out.find("got:hi"), std::string::npos) << typed.out;
  EXPECT_TRUE(WIFEXITED(typed.wait_status) && WEXITSTATUS(typed.wait_status) == 7)
      << typed.wait_status;
}

// Files over TCP: each operation on a connection of its own, done by a
// worker inside the sandbox with the asked user's permissions.
TEST_F(SandboxTest, AgentServesFilesOverTcp) {
  const std::string token = "the-file-token";
  Sandbox& sb = create_serving_tcp("tcpfs", 7072, token);
  const pid_t init = sb.record().init_pid;
  const auto client = [&] {
    auto started = AgentTcpClient::start(connect_in_sandbox(init, 7072), token);
    EXPECT_TRUE(started) << started.error().message();
    return std::move(*started);
  };
  const auto request = [](FileOp op, const std::string& path) {
    FileRequest file;
    file.op = op;
    file.path = path;
    file.uid = file.gid = 1000;
    return file;
  };

  std::string data(300 * 1024 + 7, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31 % 251);
  FileRequest write = request(FileOp::kWrite, "/tmp/dir/data.bin");
  write.mode = 0600;
  auto written = client().write_file(write, data);
  ASSERT_TRUE(written) << written.error().message();
  EXPECT_EQ(*written, data.size());
  EXPECT_EQ(run(sb, "wc -c < /tmp/dir/data.bin").out, std::to_string(data.size()) + "\n");
  auto back = client().read_file(request(FileOp::kReadFile, "/tmp/dir/data.bin"));
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_TRUE(*back == data) << "the file came back different";

  auto listed = client().file_op(request(FileOp::kList, "/tmp/dir"));
  ASSERT_TRUE(listed) << listed.error().message();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "data.bin");
  EXPECT_EQ((*listed)[0].size, data.size());
  EXPECT_EQ((*listed)[0].mode, 0600u);
  EXPECT_EQ((*listed)[0].owner, "user");
  ASSERT_TRUE(client().file_op(request(FileOp::kMakeDir, "/tmp/dir/sub")));
  FileRequest move = request(FileOp::kMove, "/tmp/dir/data.bin");
  move.other = "/tmp/dir/sub/moved.bin";
  ASSERT_TRUE(client().file_op(move));
  auto stat = client().file_op(request(FileOp::kStat, "/tmp/dir/sub/moved.bin"));
  ASSERT_TRUE(stat) << stat.error().message();
  EXPECT_EQ(stat->at(0).size, data.size());
  ASSERT_TRUE(client().file_op(request(FileOp::kRemove, "/tmp/dir")));
  auto gone = client().file_op(request(FileOp::kStat, "/tmp/dir"));
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().errnum, ENOENT);

  // The user's permissions, and only regular files.
  FileRequest secret = request(FileOp::kWrite, "/tmp/root-only");
  secret.uid = secret.gid = 0;
  secret.mode = 0600;
  ASSERT_TRUE(client().write_file(secret, "secret"));
  auto shadow = client().read_file(request(FileOp::kReadFile, "/tmp/root-only"));
  ASSERT_FALSE(shadow);
  EXPECT_EQ(shadow.error().errnum, EACCES) << shadow.error().message();
  EXPECT_FALSE(client().read_file(request(FileOp::kReadFile, "/proc/1/environ")));
  auto dir_handle = client().file_op(request(FileOp::kOpenDir, "/tmp"));
  ASSERT_FALSE(dir_handle);
  EXPECT_EQ(dir_handle.error().errnum, EPROTONOSUPPORT);

  // An upload whose connection ends before its commit leaves no file.
  {
    UniqueFd raw = connect_in_sandbox(init, 7072);
    proto::Hello hello;
    hello.token = token;
    ASSERT_TRUE(proto::send_frame(raw.get(), proto::encode(hello)));
    proto::Request upload;
    upload.type = proto::RequestType::kFile;
    upload.file = request(FileOp::kWrite, "/tmp/half.bin");
    ASSERT_TRUE(proto::send_frame(raw.get(), proto::encode(upload)));
    std::string opened;
    ASSERT_TRUE(proto::recv_frame(raw.get(), &opened));
    ASSERT_TRUE(proto::send_frame(raw.get(), std::string(1000, 'h')));
  }
  bool left = true;
  for (int attempt = 0; attempt < 500 && left; ++attempt) {
    left = run(sb, "test -e /tmp/half.bin").status == 0;
    if (left) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(left) << "an abandoned upload stayed";
  // Still serving commands over TCP.
  auto pid = client().spawn(ProcessSpec{{"/bin/true"}, {}, "/", 1000, 1000}, 0);
  EXPECT_TRUE(pid) << pid.error().message();
}

TEST_F(SandboxTest, SignalReachesTheWholeProcessGroup) {
  Sandbox& sb = create();
  ProcessSpec spec;
  // "ready" once sleep is forked (so in sh's group): a signal sent earlier
  // could find no group yet, or kill sh before there is a child to reach.
  spec.argv = {"/bin/sh", "-c", "sleep 100 & echo ready; wait; echo survived"};
  spec.env = {{"PATH", "/usr/bin"}};
  auto p = sb.spawn(spec);
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_EQ(read_line(p->stdout_fd.get(), 30000), "ready");
  ASSERT_TRUE(sb.signal(p->pid, SIGTERM));
  pollfd eof{p->stdout_fd.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&eof, 1, 5000), 1) << "sleep still holds stdout";
  EXPECT_EQ(read_all(p->stdout_fd.get()), "");
  EXPECT_EQ(decode_wait_status(wait_status(*p)).status, "signal: terminated");
  // sleep dies of the same signal, but may be reaped a moment after sh
  // (one CPU: the sandbox is pinned to as many as its limit).
  bool group_gone = false;
  for (int attempt = 0; attempt < 500 && !group_gone; ++attempt) {
    group_gone = !sb.signal(p->pid, SIGTERM);
    if (!group_gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(group_gone) << "nothing is left to signal";
}

// Sandbox root may SIGSTOP init's child before it execs: that spawn fails at
// once with a clear error (it used to hold init, and the daemon's caller,
// for 30 s), and init goes on serving.
TEST_F(SandboxTest, AChildStoppedBeforeItsExecFailsItsSpawnAtOnce) {
  Sandbox& sb = create();
  ProcessSpec stopper;
  // kill(-1) reaches every process but init and the caller: each new child
  // is stopped within microseconds of its fork, most before their exec.
  stopper.argv = {"/usr/bin/python3", "-c",
                  "import os, signal\nprint('stopping', flush=True)\n"
                  "while True:\n    try: os.kill(-1, signal.SIGSTOP)\n    except OSError: pass"};
  stopper.uid = stopper.gid = 0;
  auto stopping = sb.spawn(stopper);
  ASSERT_TRUE(stopping) << stopping.error().message();
  ASSERT_EQ(read_line(stopping->stdout_fd.get(), 30000), "stopping");
  // A long PATH of missing dirs before /bin: hundreds of failed execve()s
  // widen the window between fork and exec for the stopper to hit.
  std::string path;
  for (int i = 0; i < 2000; ++i) path += "/missing" + std::to_string(i) + ":";
  int refused = 0;
  for (int i = 0; i < 50 && refused == 0; ++i) {
    ProcessSpec spec;
    spec.argv = {"true"};
    spec.env = {{"PATH", path + "/bin"}};
    auto p = sb.spawn(spec);
    if (p) continue;  // stopped only after its exec: a process like any other
    EXPECT_NE(p.error().message().find("stopped before it could start"), std::string::npos)
        << p.error().message();
    ++refused;
  }
  EXPECT_GT(refused, 0) << "no child was stopped before its exec";
  ASSERT_TRUE(sb.signal(stopping->pid, SIGKILL));
  EXPECT_EQ(decode_wait_status(wait_status(*stopping)).status, "signal: killed");
  EXPECT_EQ(run(sb, "echo alive").out, "alive\n");
}

TEST_F(SandboxTest, HostnameIsInEtcHosts) {
  Sandbox& sb = create();
  const std::string& id = sb.record().id;
  Output o = run(sb, "cat /etc/hostname; grep -c \"^127.0.0.1.*\\b$(hostname)$\" /etc/hosts");
  EXPECT_EQ(o.out, id + "\n1\n") << o.err;
  EXPECT_FALSE(fs::exists(rootfs_ / "etc/hosts")) << "written to the sandbox's own layer";
}

// The sandboxes' state dirs (the runtime's own files there, its init copy
// and uid region, are not sandboxes).
std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory()) out.insert(entry.path().filename());
  return out;
}

// The pool refills in the background; under ASan on a loaded 2-core CI machine one
// sandbox can take seconds, so wait generously (this bounds a hang, it times nothing).
void wait_for_entry_count(const fs::path& dir, size_t wanted) {
  for (int i = 0; i < 6000 && entries(dir).size() != wanted; ++i) ::usleep(10000);
}

TEST_F(SandboxTest, WarmPoolHandsOutReadySandboxes) {
  RuntimeConfig config = config_;
  config.state_dir = dir_ / "pool";
  auto opened = open_runtime(config);
  ASSERT_TRUE(opened) << opened.error().message();
  std::unique_ptr<Runtime> runtime = std::move(*opened);
  SandboxSpec spec;
  spec.rootfs = rootfs();
  auto first = runtime->create(spec);
  ASSERT_TRUE(first) << first.error().message();
  wait_for_entry_count(config.state_dir, 3);
  const std::set<std::string> before = entries(config.state_dir);
  ASSERT_EQ(before.size(), 3u) << "the pool refills to 2 after a take";
  auto second = runtime->create(spec);
  ASSERT_TRUE(second) << second.error().message();
  const SandboxRecord taken = (*second)->record();
  EXPECT_TRUE(before.contains(taken.id));
  EXPECT_EQ(run(**second, "hostname").out, taken.id + "\n");
  runtime->sweep_orphans({(*first)->record().id, taken.id});
  wait_for_entry_count(config.state_dir, 4);
  EXPECT_EQ(entries(config.state_dir).size(), 4u) << "sweep spares pooled sandboxes";
  // A changed template: the pool is emptied, and refills only on a later take.
  runtime->drain_pool();
  // One may still be in the making: it is discarded when done.
  wait_for_entry_count(config.state_dir, 2);
  EXPECT_EQ(entries(config.state_dir).size(), 2u) << "pooled sandboxes are destroyed";
  auto third = runtime->create(spec);
  ASSERT_TRUE(third) << third.error().message();
  EXPECT_FALSE(before.contains((*third)->record().id)) << "made now, not taken from the pool";
  for (auto* sb : {&*first, &*second, &*third}) {
    const SandboxRecord record = (*sb)->record();
    sb->reset();
    EXPECT_TRUE(runtime->destroy(record));
  }
  runtime.reset();
  EXPECT_TRUE(entries(config.state_dir).empty()) << "pooled sandboxes die with the runtime";
}

double median_ms(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

template <class F>
double elapsed_ms(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// A benchmark, not a timed test: run with --gtest_also_run_disabled_tests.
TEST_F(SandboxTest, DISABLED_Latency) {
  std::vector<double> create_ms, exec_ms, destroy_ms;
  for (int i = 0; i < 30; ++i) {
    Sandbox* sb = nullptr;
    create_ms.push_back(elapsed_ms([&] { sb = &create(); }));
    ProcessSpec spec;
    spec.argv = {"/bin/true"};
    spec.stdin_pipe = false;
    exec_ms.push_back(elapsed_ms([&] {
      auto p = sb->spawn(spec);
      ASSERT_TRUE(p);
      wait_status(*p);
    }));
    const SandboxRecord record = sb->record();
    sandboxes_.clear();
    records_.clear();
    destroy_ms.push_back(elapsed_ms([&] { EXPECT_TRUE(runtime_->destroy(record)); }));
  }
  std::printf("create p50 %.2f ms, exec /bin/true p50 %.2f ms, destroy p50 %.2f ms\n",
              median_ms(create_ms), median_ms(exec_ms), median_ms(destroy_ms));
  SandboxSpec spec;
  spec.rootfs = rootfs();
  std::vector<double> pooled_ms;
  for (int i = 0; i < 10; ++i) {
    std::unique_ptr<Sandbox> sb;
    pooled_ms.push_back(elapsed_ms([&] { sb = std::move(runtime_->create(spec).value()); }));
    records_.push_back(sb->record());
    sandboxes_.push_back(std::move(sb));
    ::usleep(100 * 1000);  // time to refill
  }
  std::printf("create from the warm pool p50 %.3f ms\n", median_ms(pooled_ms));
}

// Overlay in a user namespace needs userxattr, which rules out redirect_dir:
// a directory from the template cannot be renamed (EXDEV, so `mv` copies),
// but one made in the sandbox can.
TEST_F(SandboxTest, DirectoriesMadeInTheSandboxRename) {
  Sandbox& sb = create();
  Output o =
      run(sb,
          "mkdir -p d/e && mv d moved && ls moved; mkdir /tmp/t && mv /tmp/t /tmp/u && "
          "echo tmp; python3 -c \"import os; os.mkdir('p'); os.rename('p', 'q'); print('py')\"");
  EXPECT_EQ(o.out, "e\ntmp\npy\n") << o.err;
  Output merged = run(sb, "mkdir /etc/new && mv /etc/new /etc/renamed && mv /etc/renamed /", 0);
  EXPECT_EQ(merged.status, 0) << "in a directory of the template too: " << merged.err;
  Output lower = run(sb, "python3 -c \"import os; os.rename('/etc', '/etc2')\" 2>&1", 0);
  EXPECT_NE(lower.out.find("Invalid cross-device link"), std::string::npos) << lower.out;
}

uint64_t meminfo_kib(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) {
    if (name == field + ":") return value;
    in.ignore(64, '\n');
  }
  return 0;
}

uint64_t rollup_kib(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1));
  return 0;
}

// A benchmark: run with --gtest_also_run_disabled_tests.
TEST_F(SandboxTest, DISABLED_IdleMemory) {
  constexpr int kCount = 200;
  const uint64_t before = meminfo_kib("MemAvailable");
  for (int i = 0; i < kCount; ++i) create();
  ::usleep(500 * 1000);
  const uint64_t after = meminfo_kib("MemAvailable");
  const pid_t init = sandboxes_.front()->record().init_pid;
  uint64_t charged = 0;
  for (const auto& sb : sandboxes_) charged += sb->usage().memory_bytes;
  std::printf(
      "%d idle sandboxes: MemAvailable %.2f MiB less each (noisy on a shared host), memory "
      "cgroup %.2f MiB each; init RSS %llu KiB, PSS %llu KiB, private dirty %llu KiB\n",
      kCount, (static_cast<double>(before) - static_cast<double>(after)) / 1024 / kCount,
      static_cast<double>(charged) / kCount / (1 << 20),
      static_cast<unsigned long long>(rollup_kib(init, "Rss")),
      static_cast<unsigned long long>(rollup_kib(init, "Pss")),
      static_cast<unsigned long long>(rollup_kib(init, "Private_Dirty")));
}

TEST_F(SandboxTest, PidsLimitStopsAForkLoop) {
  Sandbox& sb = create(Limits{0, 16, 0, 0});
  Output o = run(sb, "for i in $(seq 40); do sleep 1 & done; wait");
  EXPECT_NE(o.err.find("fork"), std::string::npos) << o.err;
}

TEST_F(SandboxTest, AppliesCgroupLimits) {
  Sandbox& sb = create(Limits{100ull << 20, 50, 500, 0});
  const fs::path base = "/sys/fs/cgroup";
  const std::string at = "abx/" + cgroup::instance_name(config_.state_dir) + "/" + sb.record().id;
  auto value = [&](const char* controller, const char* file) {
    std::ifstream in(base / controller / at / file);
    std::string v;
    in >> v;
    return v;
  };
  if (!fs::exists(base / "memory")) GTEST_SKIP() << "cgroup v1 layout expected";
  // The sandbox as a whole holds to the limit; its workload leaves init 12.5 % (16 MiB at most).
  EXPECT_EQ(value("memory", "memory.limit_in_bytes"), std::to_string(100 << 20));
  EXPECT_EQ(value("memory", "work/memory.limit_in_bytes"),
            std::to_string((100 << 20) - (100 << 20) / 8));
  EXPECT_EQ(run(sb, "grep -o :memory:.* /proc/self/cgroup").out, ":memory:/work\n");
  EXPECT_EQ(value("pids", "pids.max"), "50");
  EXPECT_EQ(value("cpu", "cpu.cfs_quota_us"), "50000");
  EXPECT_EQ(run(sb, "cat /proc/self/cgroup | grep -c ':/$'").status, 0)
      << "cgroupns hides the path";
}

TEST_F(SandboxTest, AnInitThatDiesIsReaped) {
  Sandbox& sb = create();
  const pid_t pid = sb.record().init_pid;
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  bool gone = false;
  for (int i = 0; i < 3000 && !gone; ++i) {
    gone = !fs::exists("/proc/" + std::to_string(pid));
    ::usleep(10000);
  }
  EXPECT_TRUE(gone) << "init left as a zombie";
  EXPECT_FALSE(sb.spawn(ProcessSpec{{"/bin/true"}}));
}

TEST_F(SandboxTest, MemoryHogIsOomKilled) {
  Sandbox& sb = create(Limits{64ull << 20, 0, 0, 0});
  Output o = run(sb, "exec python3 -c 'b = bytearray(256 << 20); print(len(b))'");
  EXPECT_EQ(decode_wait_status(o.status).status, "signal: killed") << o.out << o.err;
  EXPECT_GT(sb.usage().cpu_usage_ns, 0u);
  EXPECT_EQ(run(sb, "echo init survived; cat /proc/self/oom_score_adj").out, "init survived\n0\n");
}

// Collects what Runtime::on_stopped reports.
struct StopLog : StopListener {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> reasons;

  void sandbox_stopped(const std::string& id, const std::string& reason) override {
    std::lock_guard lock(mutex);
    reasons[id] = reason;
    changed.notify_all();
  }
  std::string wait_for(const std::string& id) {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, std::chrono::seconds(30), [&] { return reasons.count(id) > 0; });
    return reasons.count(id) ? reasons[id] : "";
  }
};

TEST_F(SandboxTest, AnInitKilledFromTheHostIsReportedStopped) {
  StopLog log;
  runtime_->on_stopped(&log);
  Sandbox& sb = create();
  EXPECT_GE(sb.net_ns_fd(), 0);
  EXPECT_EQ(sb.stopped_reason(), "");
  EXPECT_EQ(::kill(sb.record().init_pid, SIGKILL), 0);
  EXPECT_EQ(log.wait_for(sb.record().id), "its init was killed (signal: killed)");
  EXPECT_EQ(sb.stopped_reason(), "its init was killed (signal: killed)");
  runtime_->on_stopped(nullptr);
}

// Init's shield (a privileged lowering of its score, where the daemon has
// CAP_SYS_RESOURCE) must not become a floor its children inherit: no
// process of the sandbox, root or user, may make itself immune.
TEST_F(SandboxTest, NoSandboxProcessMayShieldItselfFromTheOomKiller) {
  Sandbox& sb = create();
  for (const uid_t uid : {0u, 1000u}) {
    Output o = run(sb,
                   "echo -1000 > /proc/self/oom_score_adj 2>/dev/null; "
                   "echo -17 > /proc/self/oom_adj 2>/dev/null; "
                   "cat /proc/self/oom_score_adj",
                   uid);
    EXPECT_EQ(o.out, "0\n") << "uid " << uid << ": " << o.err;
  }
  const std::string init_score = run(sb, "cat /proc/1/oom_score_adj", 0).out;
  // The test runs as root: it holds CAP_SYS_RESOURCE wherever the bounding set has it.
  if (::prctl(PR_CAPBSET_READ, CAP_SYS_RESOURCE) == 1) {
    EXPECT_EQ(init_score, "-1000\n") << "init is shielded where the daemon may shield it";
  }
}

TEST_F(SandboxTest, RootRaisingInitsOomScoreDoesNotMakeInitTheVictim) {
  StopLog log;
  runtime_->on_stopped(&log);
  Sandbox& sb = create(Limits{64ull << 20, 0, 0, 0});
  // Sandbox root owns init, so it may raise the score.
  Output raised = run(sb, "echo 1000 > /proc/1/oom_score_adj; cat /proc/1/oom_score_adj", 0);
  EXPECT_EQ(raised.out, "1000\n") << raised.err;
  Output hog = run(sb, "exec python3 -c 'b = bytearray(256 << 20)'");
  EXPECT_EQ(decode_wait_status(hog.status).status, "signal: killed");
  if (fs::exists("/sys/fs/cgroup/memory")) {  // v1: the limit is on a group init is not in
    EXPECT_EQ(run(sb, "echo alive").out, "alive\n");
    EXPECT_EQ(sb.stopped_reason(), "");
  } else {  // v2: init may be the victim, and then the sandbox says so
    EXPECT_EQ(log.wait_for(sb.record().id), "its init was killed (out of memory)");
  }
  runtime_->on_stopped(nullptr);
}

TEST_F(SandboxTest, DestroyLeavesNothingBehind) {
  const std::string before = mounts();
  Sandbox& sb = create();
  const SandboxRecord record = sb.record();
  EXPECT_EQ(run(sb, "sleep 100 >/dev/null 2>&1 & echo bg").out, "bg\n");
  sandboxes_.clear();
  records_.clear();
  ASSERT_TRUE(runtime_->destroy(record));
  EXPECT_EQ(mounts(), before);
  EXPECT_FALSE(fs::exists(record.state_dir));
  EXPECT_NE(::kill(record.init_pid, 0), 0);
  for (const char* controller : {"memory", "pids", "cpu"})
    for (const auto& entry :
         fs::recursive_directory_iterator(fs::path("/sys/fs/cgroup") / controller / "abx"))
      EXPECT_EQ(entry.path().filename().string().find(record.id), std::string::npos);
  EXPECT_TRUE(runtime_->destroy(record)) << "destroy is idempotent";
}

TEST_F(SandboxTest, AdoptFromASecondRuntime) {
  const SandboxRecord record = create().record();
  sandboxes_.clear();  // the first connection goes away, as when the daemon dies
  auto second = open_runtime(config_);
  ASSERT_TRUE(second) << second.error().message();
  auto adopted = (*second)->adopt(record);
  ASSERT_TRUE(adopted) << adopted.error().message();
  Output o = run(**adopted, "echo adopted");
  EXPECT_EQ(o.out, "adopted\n");
  SandboxRecord stale = record;
  stale.init_start_time += 1;
  EXPECT_FALSE((*second)->adopt(stale));
}

TEST_F(SandboxTest, SweepRemovesOrphans) {
  Sandbox& sb = create();
  const SandboxRecord record = sb.record();
  sandboxes_.clear();
  records_.clear();
  runtime_->sweep_orphans({});
  EXPECT_FALSE(fs::exists(record.state_dir));
  EXPECT_NE(::kill(record.init_pid, 0), 0);
}

// Issue 33: a checkpoint ends the sandbox's processes and its memory goes to
// disk; a restore brings them back.
class CheckpointTest : public SandboxTest {
 protected:
  void configure(RuntimeConfig& config) override { config.checkpoints = true; }
};

TEST_F(CheckpointTest, DumpEndsTheProcessesAndFreesTheirMemory) {
  const CheckpointSupport support = runtime_->checkpoint_support();
  if (!support.available) GTEST_SKIP() << "checkpoints unavailable: " << support.reason;
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3 on the host";
  Sandbox& sb = create();
  ProcessSpec spec;
  spec.argv = {"/usr/bin/python3", "-c",
               "import time\nheld = b'x' * (50 << 20)\nfor i in range(1, 10**9):\n"
               "    open('/tmp/count', 'w').write(str(i))\n    time.sleep(0.05)\n"};
  spec.env = {{"PATH", "/usr/bin"}};
  spec.stdin_pipe = false;
  auto counter = sb.spawn(spec);
  ASSERT_TRUE(counter) << counter.error().message();
  constexpr uint64_t kMiB = 1024 * 1024;
  for (int i = 0; i < 200 && sb.usage().memory_bytes < 50 * kMiB; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const uint64_t before = sb.usage().memory_bytes;
  ASSERT_GE(before, 50 * kMiB) << "the counter never held its 50 MiB";
  const pid_t init = sb.record().init_pid;
  const fs::path images = dir_ / "images";
  auto dumped = runtime_->checkpoint(sb, images);
  ASSERT_TRUE(dumped) << dumped.error().message();
  // The processes ended: the counter's exit pipe closes without a status.
  EXPECT_EQ(wait_status(*counter), -1);
  for (int i = 0; i < 100 && ::kill(init, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_NE(::kill(init, 0), 0) << "init still runs, or is a zombie nobody reaps";
  EXPECT_LT(sb.usage().memory_bytes, 10 * kMiB) << "before: " << before;
  uint64_t image_bytes = 0;
  for (const auto& file : fs::directory_iterator(images))
    if (file.is_regular_file()) image_bytes += file.file_size();
  EXPECT_GE(image_bytes, 50 * kMiB) << "the memory is not in the images";
  EXPECT_GT(fs::file_size(images / "upper.tar"), 0u);  // the writable layer, with /tmp/count
}

// The counter's value as the sandbox's /tmp/count holds it; 0 if unreadable.
long count_in(const std::string& out) { return std::atol(out.c_str()); }

// Two checkpoint/restore cycles of one sandbox: its memory goes and comes
// back, a counter goes on past its value at the dump, its files stay, the
// daemon reaches init again, and nothing is left after destroy.
TEST_F(CheckpointTest, RestoreGoesOnWhereItStoodTwice) {
  const CheckpointSupport support = runtime_->checkpoint_support();
  if (!support.available) GTEST_SKIP() << "checkpoints unavailable: " << support.reason;
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "needs /usr/bin/python3 on the host";
  Sandbox* sb = &create();
  const std::string id = sb->record().id;
  ASSERT_EQ(run(*sb, "echo kept > /tmp/note").status, 0);
  ProcessSpec spec;
  spec.argv = {"/usr/bin/python3", "-c",
               "import time\nheld = b'x' * (50 << 20)\nfor i in range(1, 10**9):\n"
               "    open('/tmp/count', 'w').write(str(i))\n    time.sleep(0.05)\n"};
  spec.env = {{"PATH", "/usr/bin"}};
  spec.stdin_pipe = false;
  auto counter = sb->spawn(spec);
  ASSERT_TRUE(counter) << counter.error().message();
  constexpr uint64_t kMiB = 1024 * 1024;
  for (int i = 0; i < 200 && (sb->usage().memory_bytes < 50 * kMiB ||
                              count_in(run(*sb, "cat /tmp/count").out) < 20);
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (int cycle = 1; cycle <= 2; ++cycle) {
    SCOPED_TRACE("cycle " + std::to_string(cycle));
    const long before = count_in(run(*sb, "cat /tmp/count").out);
    ASSERT_GE(before, 20) << "the counter does not count";
    const pid_t old_init = sb->record().init_pid;
    const fs::path images = dir_ / ("images" + std::to_string(cycle));
    auto dumped = runtime_->checkpoint(*sb, images);
    ASSERT_TRUE(dumped) << dumped.error().message();
    EXPECT_LT(sb->usage().memory_bytes, 10 * kMiB) << "the memory was not freed";
    auto restored = runtime_->restore(records_.back(), images);
    ASSERT_TRUE(restored) << restored.error().message();
    EXPECT_NE((*restored)->record().init_pid, old_init);
    EXPECT_EQ((*restored)->record().id, id);
    records_.back() = (*restored)->record();
    sandboxes_.push_back(std::move(*restored));
    sb = sandboxes_.back().get();
    // Went on from where it stood: neither from 1 nor stuck.
    long after = 0;
    for (int i = 0; i < 100 && (after = count_in(run(*sb, "cat /tmp/count").out)) <= before; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_GT(after, before);
    EXPECT_GE(sb->usage().memory_bytes, 50 * kMiB) << "the 50 MiB did not come back";
    const Output o = run(*sb, "cat /tmp/note; id -u");
    EXPECT_EQ(o.out, "kept\n1000\n") << o.err;
    EXPECT_EQ(o.status, 0);
  }
  const pid_t init = sb->record().init_pid;
  ASSERT_TRUE(runtime_->destroy(sb->record()));
  // Not our child (criu restore -d leaves it to the host's reaper): gone
  // once that reaps it.
  for (int i = 0; i < 100 && ::kill(init, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_NE(::kill(init, 0), 0) << "the restored init outlived destroy";
  auto mounts = read_file("/proc/self/mountinfo");
  ASSERT_TRUE(mounts);
  EXPECT_EQ(mounts->find("abx-restore"), std::string::npos) << "a restore's mount is left";
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator("/sys/fs/cgroup", ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 4) it.disable_recursion_pending();
    EXPECT_NE(it->path().filename(), id) << "a cgroup is left: " << it->path();
  }
}

}  // namespace
}  // namespace abx::runtime
