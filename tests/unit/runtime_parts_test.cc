// Unit tests of the runtime's pieces that need no sandbox.
#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "agent/protocol.h"
#include "runtime/cgroup.h"
#include "runtime/checkpoint.h"
#include "runtime/runtime.h"
#include "runtime/seccomp_policy.h"
#include "runtime/user.h"

namespace abx::runtime {

TEST(WaitStatus, DecodesExitAndSignalInGoWording) {
  ExitInfo ok = decode_wait_status(0);
  EXPECT_TRUE(ok.exited);
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.status, "exit status 0");

  ExitInfo three = decode_wait_status(3 << 8);
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.status, "exit status 3");

  ExitInfo killed = decode_wait_status(SIGKILL);
  EXPECT_FALSE(killed.exited);
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL);
  EXPECT_EQ(killed.status, "signal: killed");
  EXPECT_EQ(decode_wait_status(SIGTERM).status, "signal: terminated");
}

TEST(InitProtocol, SpawnRequestRoundTrips) {
  proto::Request in;
  in.type = proto::RequestType::kSpawn;
  in.spec.argv = {"/bin/sh", "-c", "echo hi"};
  in.spec.env = {{"PATH", "/usr/bin"}, {"HOME", "/home/user"}};
  in.spec.cwd = "/tmp";
  in.spec.uid = 0;
  in.spec.gid = 5;
  in.spec.pty = true;
  in.spec.pty_cols = 132;
  in.spec.pty_rows = 43;
  in.spec.stdin_pipe = false;
  proto::Request out;
  ASSERT_TRUE(proto::decode(proto::encode(in), &out));
  EXPECT_EQ(out.type, proto::RequestType::kSpawn);
  EXPECT_EQ(out.spec.argv, in.spec.argv);
  EXPECT_EQ(out.spec.env, in.spec.env);
  EXPECT_EQ(out.spec.cwd, "/tmp");
  EXPECT_EQ(out.spec.uid, 0u);
  EXPECT_EQ(out.spec.gid, 5u);
  EXPECT_TRUE(out.spec.pty);
  EXPECT_EQ(out.spec.pty_cols, 132);
  EXPECT_EQ(out.spec.pty_rows, 43);
  EXPECT_FALSE(out.spec.stdin_pipe);
}

TEST(InitProtocol, SignalReplyAndConfigRoundTrip) {
  proto::Request signal{proto::RequestType::kSignal, {}, 42, SIGTERM};
  proto::Request decoded;
  ASSERT_TRUE(proto::decode(proto::encode(signal), &decoded));
  EXPECT_EQ(decoded.pid, 42);
  EXPECT_EQ(decoded.signo, SIGTERM);

  proto::Reply reply{0, ENOENT, "chdir /nope"};
  proto::Reply back;
  ASSERT_TRUE(proto::decode(proto::encode(reply), &back));
  EXPECT_FALSE(back.ok());
  EXPECT_EQ(proto::error_from(back).errnum, ENOENT);

  proto::InitConfig config{"box", 1 << 20,     {"/a", "/b"}, {{"/usr", "/usr"}},
                           false, "bpf",       true,         {"meminfo", "uptime"},
                           true,  "10.200.0.5"};
  proto::InitConfig config_back;
  ASSERT_TRUE(proto::decode(proto::encode(config), &config_back));
  EXPECT_EQ(config_back.hostname, "box");
  EXPECT_EQ(config_back.disk_bytes, 1u << 20);
  EXPECT_EQ(config_back.lower_layers, config.lower_layers);
  EXPECT_EQ(config_back.binds, config.binds);
  EXPECT_FALSE(config_back.full_id_map);
  EXPECT_EQ(config_back.seccomp_bpf, "bpf");
  EXPECT_TRUE(config_back.host_writable_dir);
  EXPECT_EQ(config_back.nameserver, "10.200.0.5");
  EXPECT_EQ(config_back.proc_views, config.proc_views);
  EXPECT_TRUE(config_back.workload_cgroup);
  EXPECT_FALSE(config_back.allow_setid) << "no_new_privs unless a template asks";
  config.allow_setid = true;
  proto::InitConfig setid_back;
  ASSERT_TRUE(proto::decode(proto::encode(config), &setid_back));
  EXPECT_TRUE(setid_back.allow_setid);
  // Layers, the bind, the writable dir, lxcfs's proc dir, the workload cgroup.
  EXPECT_EQ(config_back.proc_views_source(), 4u);
  EXPECT_EQ(config_back.handoff_count(), 6u);
}

TEST(InitProtocol, RejectsTruncatedAndTrailingBytes) {
  proto::Request in{proto::RequestType::kSpawn, {}, 0, 0};
  in.spec.argv = {"true"};
  const std::string bytes = proto::encode(in);
  proto::Request out;
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(proto::decode(bytes.substr(0, n), &out));
  EXPECT_FALSE(proto::decode(bytes + "x", &out));
  EXPECT_FALSE(proto::decode(std::string("\x09", 1), &out));  // unknown type
}

TEST(InitProtocol, ASpawnSaysWhetherItCarriesACommandGroup) {
  proto::Request in{proto::RequestType::kSpawn, {}, 0, 0};
  in.spec.argv = {"true"};
  proto::Request out;
  ASSERT_TRUE(proto::decode(proto::encode(in), &out));  // as an older daemon sends it
  EXPECT_FALSE(out.command_group);
  in.command_group = true;
  const std::string grouped = proto::encode(in);
  ASSERT_TRUE(proto::decode(grouped, &out));
  EXPECT_TRUE(out.command_group);
  EXPECT_FALSE(proto::decode(grouped + "\x01", &out));
  std::string other = grouped;
  other.back() = '\x02';
  EXPECT_FALSE(proto::decode(other, &out));
}

TEST(InitProtocol, ASupervisedSpawnCarriesItsLabelAndAdoptionRoundTrips) {
  proto::Request in{proto::RequestType::kSpawn, {}, 0, 0};
  in.spec.argv = {"sleep", "9"};
  in.supervised = true;
  in.label = R"({"cmd":"sleep"})";
  in.timeout_ms = 5000;
  proto::Request out;
  ASSERT_TRUE(proto::decode(proto::encode(in), &out));
  EXPECT_TRUE(out.supervised);
  EXPECT_FALSE(out.command_group);
  EXPECT_EQ(out.label, in.label);
  EXPECT_EQ(out.timeout_ms, 5000u);
  in.label.assign(kMaxProcessLabel + 1, 'x');  // init refuses what it would keep unbounded
  EXPECT_FALSE(proto::decode(proto::encode(in), &out));

  const proto::Request adopt{proto::RequestType::kAdopt, {}, 0, 0};
  ASSERT_TRUE(proto::decode(proto::encode(adopt), &out));
  EXPECT_EQ(out.type, proto::RequestType::kAdopt);

  const proto::Supervised process{42, true, true, "label", false};
  proto::Supervised back;
  ASSERT_TRUE(proto::decode(proto::encode(process), &back));
  EXPECT_EQ(back.pid, 42);
  EXPECT_TRUE(back.ended && back.pty);
  EXPECT_FALSE(back.done);
  EXPECT_EQ(back.label, "label");
  // An older init's answer (a Reply) is not taken for a process.
  const std::string reply = proto::encode(proto::reply_from(Error{"decode request", EPROTO, {}}));
  EXPECT_FALSE(proto::decode(reply, &back));
}

TEST(InitProtocol, FileRequestAndRepliesRoundTrip) {
  proto::Request in;
  in.type = proto::RequestType::kFile;
  in.file = {FileOp::kMove, "/a", "/b", 1000, 1000, 3, 0755, {{"k", "v"}}};
  proto::Request out;
  ASSERT_TRUE(proto::decode(proto::encode(in), &out));
  EXPECT_EQ(out.file.metadata, in.file.metadata);
  EXPECT_EQ(out.file.op, FileOp::kMove);
  EXPECT_EQ(out.file.path, "/a");
  EXPECT_EQ(out.file.other, "/b");
  EXPECT_EQ(out.file.depth, 3u);
  EXPECT_EQ(out.file.mode, 0755u);
  const std::string bytes = proto::encode(in);
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_FALSE(proto::decode(bytes.substr(0, n), &out));
  std::string bad_op = bytes;
  bad_op[1] = 10;  // no such operation (kReadFile is the last)
  EXPECT_FALSE(proto::decode(bad_op, &out));

  proto::FileReply reply;
  reply.done = false;
  reply.written = 7;
  EntryInfo entry;
  entry.name = "f";
  entry.path = "/f";
  entry.type = FileType::kSymlink;
  entry.mtime_sec = -1;  // before 1970
  entry.symlink_target = "/etc/passwd";
  entry.target_type = FileType::kFile;
  entry.target_mode = 0644;
  entry.metadata = {{"author", "mish"}, {"empty", ""}};
  reply.entries = {entry, entry};
  proto::FileReply back;
  ASSERT_TRUE(proto::decode(proto::encode(reply), &back));
  EXPECT_FALSE(back.done);
  EXPECT_EQ(back.written, 7u);
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[1].type, FileType::kSymlink);
  EXPECT_EQ(back.entries[1].mtime_sec, -1);
  EXPECT_EQ(back.entries[1].symlink_target, "/etc/passwd");
  EXPECT_EQ(back.entries[1].target_type, FileType::kFile);
  EXPECT_EQ(back.entries[1].target_mode, 0644u);
  EXPECT_EQ(back.entries[1].metadata, entry.metadata);
  const std::string reply_bytes = proto::encode(reply);
  for (size_t n = 0; n < reply_bytes.size(); ++n)
    EXPECT_FALSE(proto::decode(reply_bytes.substr(0, n), &back));
  // An init that predates file workers answers with a plain Reply: not a FileReply.
  EXPECT_FALSE(proto::decode(proto::encode(proto::Reply{0, EPROTO, "decode request"}), &back));
}

TEST(InitProtocol, PassesFdsWithAMessage) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd a(pair[0]), b(pair[1]);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  UniqueFd r(p[0]), w(p[1]);
  ASSERT_TRUE(proto::send_message(a.get(), "hello", {w.get()}));
  std::string bytes;
  std::vector<UniqueFd> fds;
  auto got = proto::recv_message(b.get(), &bytes, &fds);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ(bytes, "hello");
  ASSERT_EQ(fds.size(), 1u);
  w.reset();
  ASSERT_EQ(::write(fds[0].get(), "x", 1), 1);
  char c = 0;
  EXPECT_EQ(::read(r.get(), &c, 1), 1);
  EXPECT_EQ(c, 'x');
  a.reset();
  got = proto::recv_message(b.get(), &bytes, &fds);
  ASSERT_TRUE(got);
  EXPECT_FALSE(*got);
}

TEST(Seccomp, FilterCompilesToBpf) {
  auto bpf = seccomp_policy::compile();
  ASSERT_TRUE(bpf) << bpf.error().message();
  EXPECT_GT(bpf->size(), 8u * 20);  // 8-byte BPF instructions
  EXPECT_EQ(bpf->size() % 8, 0u);
  EXPECT_FALSE(seccomp_policy::load("short", true));
}

TEST(Seccomp, DeniesUnshareAndNamespaceClonesInAChild) {
  auto bpf = seccomp_policy::compile();
  ASSERT_TRUE(bpf) << bpf.error().message();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!seccomp_policy::load(*bpf, true)) ::_exit(10);
    if (::unshare(CLONE_NEWUSER) == 0 || errno != EPERM) ::_exit(11);
    if (::syscall(SYS_clone3, nullptr, 0) == 0 || errno != ENOSYS) ::_exit(12);
    if (::getpid() <= 0) ::_exit(13);  // ordinary syscalls still work
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Without no_new_privs the kernel takes a filter only from a process with
// CAP_SYS_ADMIN (init, in its user namespace); anyone else is refused rather
// than left unfiltered.
TEST(Seccomp, LoadWithoutNoNewPrivsFailsClosedWithoutCapSysAdmin) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to drop to another uid)";
  auto bpf = seccomp_policy::compile();
  ASSERT_TRUE(bpf) << bpf.error().message();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setresuid(65534, 65534, 65534) != 0) ::_exit(20);  // drops every capability
    auto loaded = seccomp_policy::load(*bpf, false);
    if (loaded || loaded.error().errnum != EACCES) ::_exit(21);
    if (::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 0) ::_exit(22);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Runs `check` in a forked child under the filter; it returns 0 or the
// number of the failed expectation.
void expect_under_filter(int (*check)()) {
  auto bpf = seccomp_policy::compile();
  ASSERT_TRUE(bpf) << bpf.error().message();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!seccomp_policy::load(*bpf, true)) ::_exit(100);
    ::_exit(check());
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "expectation " << WEXITSTATUS(status) << " failed";
}

// socket() straight to the kernel, with every register bit under our control.
long raw_socket(uint64_t family, uint64_t type, uint64_t protocol) {
  const long fd = ::syscall(SYS_socket, family, type, protocol);
  if (fd >= 0) ::close(static_cast<int>(fd));
  return fd;
}

TEST(Seccomp, RefusesSocketFamiliesNotIsolatedByNetworkNamespaces) {
  expect_under_filter([] {
    constexpr uint64_t kHighBit = uint64_t{1} << 32;
    if (raw_socket(AF_VSOCK, SOCK_STREAM, 0) >= 0 || errno != EAFNOSUPPORT) return 1;
    // The kernel reads an int: high bits in the register must not get past.
    if (raw_socket(kHighBit | AF_VSOCK, SOCK_STREAM, 0) >= 0 || errno != EAFNOSUPPORT) return 2;
    if (raw_socket(AF_ALG, SOCK_SEQPACKET, 0) >= 0 || errno != EAFNOSUPPORT) return 3;
    if (raw_socket(200, SOCK_STREAM, 0) >= 0 || errno != EAFNOSUPPORT) return 4;
    int pair[2];
    if (::socketpair(AF_VSOCK, SOCK_STREAM, 0, pair) == 0 || errno != EAFNOSUPPORT) return 5;
    if (raw_socket(AF_INET, SOCK_STREAM, 0) < 0) return 6;
    if (raw_socket(AF_INET6, SOCK_DGRAM, 0) < 0 && errno != EAFNOSUPPORT) return 7;
    if (raw_socket(AF_UNIX, SOCK_STREAM, 0) < 0) return 8;
    if (raw_socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE) < 0) return 9;
    if (raw_socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER) >= 0 || errno != EPROTONOSUPPORT)
      return 10;
    if (raw_socket(kHighBit | AF_NETLINK, SOCK_RAW, kHighBit | NETLINK_NETFILTER) >= 0 ||
        errno != EPROTONOSUPPORT)
      return 11;
    return 0;
  });
}

TEST(Seccomp, PersonalityAllowsOnlySafeValues) {
  expect_under_filter([] {
    auto personality = [](uint64_t value) { return ::syscall(SYS_personality, value); };
    if (personality(0xffffffff) < 0) return 1;  // the query
    for (uint64_t allowed : {0x0ul, 0x8ul, 0x20000ul, 0x20008ul, 0x40000ul})
      if (personality(allowed) < 0) return 2;
    if (personality(0) < 0) return 2;
    for (uint64_t denied : {0x400000ul,    // READ_IMPLIES_EXEC
                            0x80400000ul,  // the same with bit 31
                            0x80000000ul, 0xfffffffeul, 0x100000ul /* MMAP_PAGE_ZERO */,
                            0x1ul /* another execution domain */, (1ul << 32) | 0x400000ul})
      if (personality(denied) >= 0 || errno != EPERM) return 3;
    if (personality(0xffffffff) != 0) return 4;  // nothing denied got through
    return 0;
  });
}

TEST(Cgroup, InstanceNameIsStableShortHex) {
  const std::string a = cgroup::instance_name("/var/lib/abx/state");
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a, cgroup::instance_name("/var/lib/abx/state"));
  EXPECT_EQ(a, cgroup::instance_name("/var/lib/abx//state"));
  EXPECT_NE(a, cgroup::instance_name("/var/lib/abx/other"));
}

TEST(Cgroup, SandboxDirsLiveUnderTheInstance) {
  cgroup::Layout layout{cgroup::Version::kV1,
                        {{"/sys/fs/cgroup/memory/abx/0123456789ab", {"memory"}},
                         {"/sys/fs/cgroup/pids/abx/0123456789ab", {"pids"}}}};
  const auto dirs = cgroup::dirs(layout, "sbx1");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], "/sys/fs/cgroup/memory/abx/0123456789ab/sbx1");
  EXPECT_EQ(dirs[1], "/sys/fs/cgroup/pids/abx/0123456789ab/sbx1");
}

TEST(User, IdMapTranslatesSandboxIds) {
  user::IdMap map{100000, 100001, 200000, 200001, 65536, false};
  EXPECT_EQ(map.host_uid(0), 100000u);
  EXPECT_EQ(map.host_uid(1000), 101000u);
  EXPECT_EQ(map.host_gid(1000), 201000u);
  user::IdMap single{1001, 1001, 1001, 1001, 1, false};
  EXPECT_EQ(single.host_uid(1000), 1001u);
}

TEST(CheckpointVerdict, SaysWhyNotInOneLine) {
  CheckpointFacts facts;
  EXPECT_NE(checkpoint_verdict(facts).reason.find("no criu binary"), std::string::npos);
  facts.criu = "/usr/local/sbin/criu";
  EXPECT_NE(checkpoint_verdict(facts).reason.find("not run as root"), std::string::npos);
  facts.root = true;
  facts.check_failure = "Unexpected rt vDSO area bounds";
  const CheckpointSupport failing = checkpoint_verdict(facts);
  EXPECT_FALSE(failing.available);
  EXPECT_NE(failing.reason.find("check' fails: Unexpected rt vDSO"), std::string::npos);
  facts.check_failure.reset();
  EXPECT_NE(checkpoint_verdict(facts).reason.find("CAP_SYS_RESOURCE"), std::string::npos);
  facts.root_owned_userns = true;
  EXPECT_TRUE(checkpoint_verdict(facts).available);
  facts.root_owned_userns = false;
  facts.cap_sys_resource = true;
  const CheckpointSupport ready = checkpoint_verdict(facts);
  EXPECT_TRUE(ready.available);
  EXPECT_EQ(ready.reason, "");
  EXPECT_EQ(ready.criu, "/usr/local/sbin/criu");
}

// A sandbox's mount table as the trial saw it (docs/design/criu-checkpoint.md).
TEST(CheckpointExternals, NamesEveryMountCriuCannotMakeAgain) {
  const std::string mountinfo =
      "195 150 0:60 / / rw - overlay overlay rw,lowerdir=/layer0\n"
      "196 195 8:1 /usr /usr ro - ext4 /dev/sda1 rw\n"
      "198 195 0:61 / /proc rw - proc proc rw\n"
      "199 198 0:59 /boot_id /proc/sys/kernel/random/boot_id ro - tmpfs tmpfs rw\n"
      "201 198 0:61 /sys /proc/sys ro - proc proc rw\n"
      "202 198 0:5 /null /proc/keys ro - devtmpfs udev rw\n"
      "203 198 0:50 /proc/meminfo /proc/meminfo rw - fuse.lxcfs lxcfs rw\n"
      "204 198 0:22 /diskstats /proc/diskstats ro - proc proc rw\n"
      "215 195 0:59 /dev /dev rw - tmpfs tmpfs rw\n"
      "216 215 0:5 /null /dev/null rw - devtmpfs udev rw\n"
      "217 215 0:62 / /dev/pts rw - devpts devpts rw\n"
      "218 215 0:63 / /dev/shm rw - tmpfs tmpfs rw\n";
  const std::vector<std::string> expected = {
      "--external", "mnt[/usr]:m196",
      "--external", "mnt[/proc/sys/kernel/random/boot_id]:m199",
      "--external", "mnt[/proc/keys]:m202",
      "--external", "mnt[/proc/meminfo]:m203",
      "--external", "mnt[/proc/diskstats]:m204",
      "--external", "mnt[/dev]:m215",
      "--external", "mnt[/dev/null]:m216"};
  EXPECT_EQ(mount_externals(mountinfo), expected);
}

}  // namespace abx::runtime
