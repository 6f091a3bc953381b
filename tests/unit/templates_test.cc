#include "templates/templates.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/ids.h"
#include "runtime/sandbox_fs.h"
#include "temp_dir.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

// Only the id mapping matters to the template store. As root, sandbox id n
// maps to host id 200000 + n so ownership is checkable.
class FakeRuntime : public runtime::Runtime {
 public:
  Result<std::unique_ptr<runtime::Sandbox>> create(const runtime::SandboxSpec&) override {
    return Error{"create", ENOSYS, {}};
  }
  Result<std::unique_ptr<runtime::Sandbox>> adopt(const runtime::SandboxRecord&) override {
    return Error{"adopt", ENOSYS, {}};
  }
  Status destroy(const runtime::SandboxRecord&) override { return {}; }
  void sweep_orphans(const std::vector<std::string>&) override {}
  uid_t host_uid(uint32_t id) const override {
    return ::geteuid() == 0 ? 200000 + id : ::geteuid();
  }
  gid_t host_gid(uint32_t id) const override {
    return ::geteuid() == 0 ? 200000 + id : ::getegid();
  }
  std::vector<std::string> warnings() const override { return {}; }
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct stat lstat_of(const fs::path& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st;
}

class TemplateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::permissions(data_, fs::perms::others_exec, fs::perm_options::add);
    host_ = data_ / "templates/host";
  }

  abx::testing::TempDir temp_{"abx-templates-test"};
  fs::path data_ = temp_.path();
  fs::path host_;
  FakeRuntime runtime_;
};

TEST_F(TemplateStoreTest, BuildsHostLayoutWithOwnersAndNoSecrets) {
  TemplateStore store(data_ / "templates", runtime_);
  auto spec = store.rootfs("host");
  ASSERT_TRUE(spec.ok()) << spec.error().message();
  const fs::path rootfs = host_ / "rootfs";
  ASSERT_EQ(spec->lower_layers, std::vector<fs::path>{rootfs});
  ASSERT_GE(spec->read_only_binds.size(), 2u);
  EXPECT_EQ(spec->read_only_binds.front().host_path, "/usr");
  EXPECT_EQ(spec->read_only_binds.back().host_path, host_ / "local");
  EXPECT_EQ(spec->read_only_binds.back().sandbox_path, "/usr/local");

  EXPECT_EQ(fs::read_symlink(rootfs / "bin"), fs::read_symlink("/bin"));
  EXPECT_EQ(lstat_of(rootfs / "tmp").st_mode & 07777, 01777u);
  EXPECT_EQ(lstat_of(rootfs / "root").st_mode & 07777, 0700u);
  for (const char* dir : {"usr", "proc", "dev", "home", "run", "var/tmp", "opt"}) {
    EXPECT_TRUE(fs::is_directory(rootfs / dir)) << dir;
  }
  EXPECT_EQ(lstat_of(rootfs).st_uid, runtime_.host_uid(0));
  EXPECT_EQ(lstat_of(rootfs / "etc").st_uid, runtime_.host_uid(0));
  EXPECT_EQ(lstat_of(rootfs / "etc/passwd").st_gid, runtime_.host_gid(0));
  EXPECT_EQ(lstat_of(rootfs / "home/user").st_uid, runtime_.host_uid(1000));

  EXPECT_NE(read_text(rootfs / "etc/passwd").find("user:x:1000:1000::/home/user:/bin/bash"),
            std::string::npos);
  EXPECT_NE(read_text(rootfs / "etc/profile").find("PATH=/usr/local/sbin:"), std::string::npos);
  EXPECT_TRUE(fs::exists(rootfs / "etc/ld.so.cache"));
  for (const auto& entry : fs::recursive_directory_iterator(rootfs / "etc")) {
    const std::string name = entry.path().filename().string();
    for (const char* secret : {"shadow", "gshadow", "ssh", "sudoers", "machine-id", "private"}) {
      EXPECT_NE(name, secret) << entry.path();
    }
  }
  if (!fs::exists("/usr/bin/python") && fs::exists("/usr/bin/python3")) {
    EXPECT_EQ(fs::read_symlink(host_ / "local/bin/python"), "/usr/bin/python3");
  }
}

TEST_F(TemplateStoreTest, SecondUseReusesTheBuiltTree) {
  TemplateStore store(data_ / "templates", runtime_);
  ASSERT_TRUE(store.rootfs("host").ok());
  std::ofstream(host_ / "rootfs/marker") << "kept";
  TemplateStore again(data_ / "templates", runtime_);
  ASSERT_TRUE(again.rootfs("host").ok());
  EXPECT_TRUE(fs::exists(host_ / "rootfs/marker"));
}

TEST_F(TemplateStoreTest, HalfBuiltTreeIsDiscarded) {
  fs::create_directories(data_ / "templates/.building-host/rootfs/junk");
  TemplateStore store(data_ / "templates", runtime_);
  ASSERT_TRUE(store.rootfs("host").ok());
  EXPECT_FALSE(fs::exists(data_ / "templates/.building-host"));
  EXPECT_FALSE(fs::exists(host_ / "rootfs/junk"));
}

TEST_F(TemplateStoreTest, ConcurrentFirstUseBuildsOnce) {
  TemplateStore store(data_ / "templates", runtime_);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { ok += store.rootfs("host").ok() ? 1 : 0; });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_FALSE(fs::exists(data_ / "templates/.building-host"));
}

// The runtime hands layers to a sandbox as fds, so a private data dir (0700,
// like ~/.local/state under root's 0700 home) serves templates too.
TEST_F(TemplateStoreTest, PrivateDataDirIsFine) {
  fs::permissions(data_, fs::perms::others_all | fs::perms::group_all, fs::perm_options::remove);
  TemplateStore store(data_ / "templates", runtime_);
  EXPECT_TRUE(store.rootfs("host").ok());
}

TEST_F(TemplateStoreTest, UnknownNamesListTheKnownOnes) {
  TemplateStore store(data_ / "templates", runtime_);
  auto resolved = store.resolve("ubuntu");
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().errnum, ENOENT);
  EXPECT_EQ(resolved.error().message(),
            "unknown template 'ubuntu'; known: base, code-interpreter-v1, host");
  EXPECT_EQ(store.resolve("bsae").error().message(),
            "unknown template 'bsae'; did you mean base? known: base, code-interpreter-v1, host");
  EXPECT_FALSE(store.rootfs("ubuntu").ok());
  EXPECT_FALSE(fs::exists(host_));

  // base and code-interpreter-v1 have specs in templates/: known, built on first use.
  for (const char* name : {"base", "host", "code-interpreter-v1"}) {
    auto id = store.resolve(name);
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(*id, name);
  }
  const auto listed = store.list();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_FALSE(listed[0].built);
  EXPECT_TRUE(listed[2].built);
}

// A real sandbox from the host template: needs root and abx-init next to the
// test binary (or in $ABX_INIT).
class HostTemplateSandboxTest : public TemplateStoreTest {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
    const char* from_env = std::getenv("ABX_INIT");
    const fs::path init = from_env != nullptr
                              ? fs::path(from_env)
                              : fs::read_symlink("/proc/self/exe").parent_path() / "abx-init";
    if (!fs::exists(init)) GTEST_SKIP() << "abx-init not built: " << init;
    TemplateStoreTest::SetUp();
    // A fixed state dir: the runtime names its cgroup instance after it.
    auto rt = runtime::open_runtime({state_dir(), init, {}});
    ASSERT_TRUE(rt.ok()) << rt.error().message();
    rt_ = std::move(rt.value());
    TemplateStore store(data_ / "templates", *rt_);
    auto rootfs = store.rootfs("host");
    ASSERT_TRUE(rootfs.ok()) << rootfs.error().message();
    runtime::SandboxSpec spec;
    spec.id = "tpl" + ids::sandbox_id().substr(0, 12);
    spec.rootfs = std::move(rootfs.value());
    auto sb = rt_->create(spec);
    ASSERT_TRUE(sb.ok()) << sb.error().message();
    sb_ = std::move(sb.value());
  }
  void TearDown() override {
    if (sb_) {
      EXPECT_TRUE(rt_->destroy(sb_->record()).ok());
      sb_.reset();
    }
    if (rt_) {
      fs::remove_all(state_dir());
      TemplateStoreTest::TearDown();
    }
  }
  static fs::path state_dir() { return fs::temp_directory_path() / "abx-templates-test-state"; }

  struct Output {
    std::string out;
    int exit_code = -1;
  };
  Output run(const std::string& command, uint32_t uid = 1000) {
    runtime::ProcessSpec spec;
    spec.argv = {"/bin/bash", "-l", "-c", command};
    spec.env = {{"HOME", uid == 0 ? "/root" : "/home/user"}, {"LANG", "C.UTF-8"}};
    spec.cwd = uid == 0 ? "/root" : "/home/user";
    spec.uid = spec.gid = uid;
    spec.stdin_pipe = false;
    auto proc = sb_->spawn(spec);
    EXPECT_TRUE(proc.ok()) << proc.error().message();
    if (!proc.ok()) return {};
    Output result;
    result.out = drain(proc->stdout_fd.get()) + drain(proc->stderr_fd.get());
    int status = 0;
    pollfd p{proc->exit_fd.get(), POLLIN, 0};
    if (::poll(&p, 1, 10000) == 1 && ::read(p.fd, &status, sizeof status) == sizeof status) {
      result.exit_code = runtime::decode_wait_status(status).exit_code;
    }
    return result;
  }
  static std::string drain(int fd) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<size_t>(n));
    return text;
  }

  std::unique_ptr<runtime::Runtime> rt_;
  std::unique_ptr<runtime::Sandbox> sb_;
};

TEST_F(HostTemplateSandboxTest, PythonRunsAndHostSecretsAreHidden) {
  auto python = run("python3 -c 'print(1)' && python -c 'print(2)'");
  EXPECT_EQ(python.out, "1\n2\n");
  EXPECT_EQ(python.exit_code, 0);

  auto hidden =
      run("test -e /etc/shadow || echo no-shadow; test -e /root/.pyenv || echo no-pyenv; "
          "ls -A /root; ls /usr/local/bin",
          0);
  EXPECT_EQ(hidden.out, "no-shadow\nno-pyenv\npython\n");

  auto identity = run("id -un; echo $HOME; pwd; touch ~/f && echo writable");
  EXPECT_EQ(identity.out, "user\n/home/user\n/home/user\nwritable\n");
}

TEST_F(HostTemplateSandboxTest, FilesWrittenFromTheHostAreTheUsers) {
  auto writer = runtime::sandbox_fs::start_write(*sb_, "/home/user/data/in.txt", 1000);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  ASSERT_TRUE(writer->write("hello\n").ok());
  ASSERT_TRUE(writer->finish().ok());
  auto seen =
      run("cat /home/user/data/in.txt; stat -c %U /home/user/data/in.txt; "
          "ln -s /etc/shadow /home/user/s");
  EXPECT_EQ(seen.out, "hello\nuser\n");
  auto through_link = runtime::sandbox_fs::open_read_as(*sb_, "/home/user/s", 0, 0);
  ASSERT_FALSE(through_link.ok());
  EXPECT_EQ(through_link.error().errnum, ENOENT);
}

TEST_F(HostTemplateSandboxTest, TreeOperationsSeenFromInside) {
  namespace sfs = runtime::sandbox_fs;
  ASSERT_TRUE(sfs::make_dir(*sb_, "/home/user/a/b", 1000).ok());
  auto writer = sfs::start_write(*sb_, "/home/user/a/b/f", 1000);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  ASSERT_TRUE(writer->finish().ok());
  // Files only: this overlay renames no directory (EXDEV), inside or out.
  auto moved = sfs::move(*sb_, "/home/user/a/b/f", "/home/user/a/g");
  ASSERT_TRUE(moved.ok()) << moved.error().message();
  auto entries = sfs::list_dir(*sb_, "/home/user/a", 2);
  ASSERT_TRUE(entries.ok()) << entries.error().message();
  ASSERT_EQ(entries->size(), 2u);
  auto info = sfs::stat(*sb_, "/home/user/a/g");
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->owner, "user");
  EXPECT_EQ(run("find /home/user/a | sort").out, "/home/user/a\n/home/user/a/b\n/home/user/a/g\n");
  ASSERT_TRUE(sfs::remove(*sb_, "/home/user/a").ok());
  EXPECT_EQ(run("ls -A /home/user").out, "");

  auto denied = sfs::start_write(*sb_, "/usr/bin/evil", 0);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().errnum, EROFS);
}

}  // namespace
}  // namespace abx::templates
