// Reads on a user's behalf: what init may hand back for a download, the
// host-side fallback for an init that cannot open files, and the checks of
// signed /files URLs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "agent/protocol.h"
#include "daemon/envd_auth.h"
#include "runtime/sandbox_fs.h"
#include "temp_dir.h"

namespace abx {
namespace {

namespace fs = std::filesystem;
namespace proto = runtime::proto;
namespace sfs = runtime::sandbox_fs;
namespace auth = daemon::envd_auth;

TEST(FilesAsUser, OpenRequestRoundTrips) {
  proto::Request in{proto::RequestType::kOpen, {}, 0, 0, {"/root/secret", 1000, 1001}};
  proto::Request out;
  ASSERT_TRUE(proto::decode(proto::encode(in), &out));
  EXPECT_EQ(out.type, proto::RequestType::kOpen);
  EXPECT_EQ(out.open.path, "/root/secret");
  EXPECT_EQ(out.open.uid, 1000u);
  EXPECT_EQ(out.open.gid, 1001u);
}

Status check(const std::string& path, int flags = O_RDONLY) {
  UniqueFd fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("test open", path);
  return proto::check_readable_file(fd.get(), path);
}

TEST(FilesAsUser, OnlyRegularFilesOutsideProcAndSysAreReadable) {
  testing::TempDir dir("abx-files-as-user");
  std::ofstream(dir.path() / "plain") << "x";
  EXPECT_TRUE(check((dir.path() / "plain").string()));
  EXPECT_EQ(check(dir.path().string()).error().errnum, EISDIR);
  const Status proc = check("/proc/self/status");
  EXPECT_EQ(proc.error().errnum, EPERM);
  EXPECT_EQ(proc.error().step, proto::kPseudoFileStep);
  EXPECT_EQ(check("/sys/kernel/uevent_seqnum").error().errnum, EPERM);
  EXPECT_EQ(check("/dev/null").error().step, proto::kNotRegularStep);
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(check(fifo.string(), O_RDWR | O_NONBLOCK).error().errnum, EINVAL);
}

// A sandbox rooted in a temp dir whose init cannot open files (the default
// Sandbox::open_as), or one whose init hands back `handed_out` instead.
class FakeSandbox : public runtime::Sandbox {
 public:
  explicit FakeSandbox(const fs::path& root)
      : root_fd_(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)) {}
  const runtime::SandboxRecord& record() const override { return record_; }
  Result<runtime::Process> spawn(const runtime::ProcessSpec&) override {
    return Error{"spawn", ENOSYS, {}};
  }
  Status signal(int, int) override { return Error{"signal", ENOSYS, {}}; }
  Result<UniqueFd> open_as(const std::string& path, uint32_t uid, uint32_t gid) const override {
    if (handed_out.empty()) return Sandbox::open_as(path, uid, gid);
    return UniqueFd(::open(handed_out.c_str(), O_RDONLY | O_CLOEXEC));
  }
  int root_fd() const override { return root_fd_.get(); }
  uid_t host_uid(uint32_t id) const override { return privileged() ? 100000 + id : ::geteuid(); }
  gid_t host_gid(uint32_t id) const override { return privileged() ? 100000 + id : ::getegid(); }
  Usage usage() const override { return {}; }
  static bool privileged() { return ::geteuid() == 0; }

  std::string handed_out;

 private:
  runtime::SandboxRecord record_;
  UniqueFd root_fd_;
};

std::vector<gid_t> thread_groups() {
  std::vector<gid_t> groups(static_cast<size_t>(::getgroups(0, nullptr)));
  groups.resize(static_cast<size_t>(::getgroups(static_cast<int>(groups.size()), groups.data())));
  return groups;
}

TEST(FilesAsUser, HostFallbackAppliesTheUsersPermissions) {
  testing::TempDir dir("abx-files-as-user");
  FakeSandbox sb(dir.path());
  const fs::path secret = dir.path() / "secret";
  std::ofstream(secret) << "root only";
  ASSERT_EQ(::chmod(secret.c_str(), 0600), 0);
  ASSERT_EQ(::chown(secret.c_str(), sb.host_uid(0), sb.host_gid(0)), 0);
  auto as_root = sfs::open_read_as(sb, "/secret", 0, 0);
  ASSERT_TRUE(as_root.ok()) << as_root.error().message();
  if (!FakeSandbox::privileged()) GTEST_SKIP() << "unprivileged: every sandbox id is us";
  const std::vector<gid_t> groups_before = thread_groups();
  auto as_user = sfs::open_read_as(sb, "/secret", 1000, 1000);
  ASSERT_FALSE(as_user.ok());
  EXPECT_EQ(as_user.error().errnum, EACCES);
  EXPECT_NE(as_user.error().message().find("permission denied"), std::string::npos);
  // The thread's own ids came back: the daemon, host root, reads it again.
  EXPECT_TRUE(sfs::open_read_as(sb, "/secret", 0, 0).ok());
  EXPECT_EQ(thread_groups(), groups_before);
}

TEST(FilesAsUser, WhatInitHandsBackIsCheckedAgain) {
  testing::TempDir dir("abx-files-as-user");
  FakeSandbox sb(dir.path());
  sb.handed_out = "/proc/self/status";  // an init subverted by sandbox root
  auto fd = sfs::open_read_as(sb, "/innocent", 1000, 1000);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.error().message().find("/proc or /sys"), std::string::npos);
}

// With the host's own root as the sandbox's, /proc is a real procfs: the
// daemon's reads (its own and the host fallback) refuse it before reading.
TEST(FilesAsUser, HostSideReadsRefuseProc) {
  FakeSandbox sb("/");
  auto fallback = sfs::open_read_as(sb, "/proc/self/status", 0, 0);
  ASSERT_FALSE(fallback.ok());
  EXPECT_NE(fallback.error().message().find("/proc or /sys"), std::string::npos);
  auto device = sfs::open_read_as(sb, "/dev/null", 0, 0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.error().errnum, EINVAL);
}

std::map<std::string, std::string> signed_query(const std::string& expiration) {
  return {
      {"path", "/home/user/a.txt"},
      {"username", "user"},
      {"signature", auth::file_signature("/home/user/a.txt", "read", "user", "tok", expiration)},
      {"signature_expiration", expiration}};
}

TEST(FilesAsUser, SignedUrlVerdicts) {
  using V = auth::SignatureVerdict;
  EXPECT_EQ(auth::check_file_signature(signed_query("1700000000"), "read", "tok", 1699999999),
            V::kValid);
  EXPECT_EQ(auth::check_file_signature(signed_query(""), "read", "tok", 1699999999), V::kValid);
  EXPECT_EQ(auth::check_file_signature(signed_query("1700000000"), "read", "tok", 1700000001),
            V::kExpired);
  // The user is part of what was signed: another user's name does not match.
  auto as_root = signed_query("1700000000");
  as_root["username"] = "root";
  EXPECT_EQ(auth::check_file_signature(as_root, "read", "tok", 1699999999), V::kMismatch);
  // Only an authentic link is told it expired; a forged one is a mismatch.
  auto forged = signed_query("1700000000");
  forged["signature_expiration"] = "1";
  EXPECT_EQ(auth::check_file_signature(forged, "read", "tok", 1699999999), V::kMismatch);
  auto truncated = signed_query("");
  truncated["signature"].pop_back();
  EXPECT_EQ(auth::check_file_signature(truncated, "read", "tok", 0), V::kMismatch);
  EXPECT_EQ(auth::check_file_signature({}, "read", "tok", 0), V::kMissing);
  auto odd = signed_query("soon");
  EXPECT_EQ(auth::check_file_signature(odd, "read", "tok", 0), V::kBadExpiration);
}

TEST(FilesAsUser, AnExpiredLinkSaysSo) {
  const std::string text = auth::signature_refusal(auth::SignatureVerdict::kExpired);
  EXPECT_EQ(text, "signature is already expired");  // envd's words, which E2B's suite checks
  EXPECT_EQ(auth::signature_refusal(auth::SignatureVerdict::kValid), "");
  EXPECT_EQ(auth::signed_url_refusal(signed_query("1700000000"), "GET", "tok", 1700000001),
            "signature is already expired");
  EXPECT_EQ(auth::signed_url_refusal({{"path", "/x"}}, "GET", "tok", 0), "");
}

TEST(FilesAsUser, ASignedLinkNamesTheSandboxWhoseTokenSignedIt) {
  const std::vector<auth::Signer> signers = {{"iother", "other"}, {"inone", ""}, {"iours", "tok"}};
  EXPECT_EQ(auth::signer_of(signed_query("1700000000"), "GET", signers, 1699999999), "iours");
  // An expired link still names its sandbox, which then says it expired.
  EXPECT_EQ(auth::signer_of(signed_query("1700000000"), "GET", signers, 1700000001), "iours");
  // Signed for reading: it names no sandbox for a write, nor a forged or absent signature.
  EXPECT_EQ(auth::signer_of(signed_query("1700000000"), "POST", signers, 0), std::nullopt);
  auto forged = signed_query("");
  forged["signature"] = "v1_forged";
  EXPECT_EQ(auth::signer_of(forged, "GET", signers, 0), std::nullopt);
  EXPECT_EQ(auth::signer_of({{"path", "/x"}}, "GET", signers, 0), std::nullopt);
}

}  // namespace
}  // namespace abx
