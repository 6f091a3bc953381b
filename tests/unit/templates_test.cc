#include "templates/templates.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

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
    std::string tmpl = (fs::temp_directory_path() / "abx-templates-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    data_ = tmpl;
    host_ = data_ / "templates/host";
  }
  void TearDown() override { fs::remove_all(data_); }

  fs::path data_, host_;
  FakeRuntime runtime_;
};

TEST_F(TemplateStoreTest, BuildsHostLayoutWithOwnersAndNoSecrets) {
  TemplateStore store(data_, runtime_);
  auto spec = store.rootfs("base");
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
  TemplateStore store(data_, runtime_);
  ASSERT_TRUE(store.rootfs("host").ok());
  std::ofstream(host_ / "rootfs/marker") << "kept";
  TemplateStore again(data_, runtime_);
  ASSERT_TRUE(again.rootfs("code-interpreter-v1").ok());
  EXPECT_TRUE(fs::exists(host_ / "rootfs/marker"));
}

TEST_F(TemplateStoreTest, HalfBuiltTreeIsDiscarded) {
  fs::create_directories(data_ / "templates/host.building/rootfs/junk");
  TemplateStore store(data_, runtime_);
  ASSERT_TRUE(store.rootfs("host").ok());
  EXPECT_FALSE(fs::exists(data_ / "templates/host.building"));
  EXPECT_FALSE(fs::exists(host_ / "rootfs/junk"));
}

TEST_F(TemplateStoreTest, ConcurrentFirstUseBuildsOnce) {
  TemplateStore store(data_, runtime_);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { ok += store.rootfs("base").ok() ? 1 : 0; });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 4);
  EXPECT_FALSE(fs::exists(data_ / "templates/host.building"));
}

TEST_F(TemplateStoreTest, UnknownNamesListTheKnownOnes) {
  TemplateStore store(data_, runtime_);
  auto resolved = store.resolve("ubuntu");
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().step, "template");
  EXPECT_EQ(resolved.error().errnum, ENOENT);
  EXPECT_EQ(resolved.error().detail,
            "unknown template 'ubuntu'; known: base, code-interpreter-v1, host");
  EXPECT_FALSE(store.rootfs("ubuntu").ok());
  EXPECT_FALSE(fs::exists(host_));

  for (const char* name : {"base", "host", "code-interpreter-v1"}) {
    auto id = store.resolve(name);
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(*id, "host");
  }
  EXPECT_EQ(store.list().size(), 3u);
}

}  // namespace
}  // namespace abx::templates
