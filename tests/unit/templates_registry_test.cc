// Registry references, and a template's layers exported as an OCI image
// layout that unpack_image (the import path) reads back with the same files,
// deletions and owners.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>

#include "temp_dir.h"
#include "templates/image_archive.h"
#include "templates/oci_export.h"
#include "templates/registry.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

TEST(RegistryReference, TellsRegistryImagesFromNamesAndPaths) {
  for (const char* ref : {"localhost/app", "localhost:5000/app:1", "127.0.0.1:5000/a/b:c",
                          "ghcr.io/org/img", "registry.example.com/team/app@sha256:ab"})
    EXPECT_TRUE(registry::is_reference(ref)) << ref;
  for (const char* not_ref : {"base", "debian:bookworm", "images/app.tar", "./x.d/app.tar",
                              "../a.b/app.tar", "/abs/path", "team/app"})
    EXPECT_FALSE(registry::is_reference(not_ref)) << not_ref;
}

TEST(RegistryReference, ParseSplitsHostAndRefusesOddCharacters) {
  auto ref = registry::parse_reference("localhost:5000/team/app:1");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->host, "localhost:5000");
  EXPECT_EQ(ref->rest, "team/app:1");
  for (const char* bad : {"localhost:5000/app;rm", "localhost/", "localhost//x", "base",
                          "localhost/a b", "localhost/a\nb"})
    EXPECT_FALSE(registry::parse_reference(bad).ok()) << bad;
}

TEST(RegistryCredentials, OnlyAuthOrIdentityTokenStrings) {
  EXPECT_TRUE(registry::check_credentials("").ok());
  EXPECT_TRUE(registry::check_credentials(R"({"auth":"YTpi"})").ok());
  EXPECT_TRUE(registry::check_credentials(R"({"identitytoken":"t"})").ok());
  for (const char* bad : {"{}", "[]", "nope", R"({"auth":1})", R"({"credHelper":"x"})"})
    EXPECT_FALSE(registry::check_credentials(bad).ok()) << bad;
}

// A resolver that never answers (a DNS server swallowing queries) costs the
// caller the bound, not its thread: check_host fails naming host and limit.
TEST(RegistryHost, LookupThatNeverAnswersFailsWithinTheBound) {
  auto release = std::make_shared<std::promise<void>>();
  std::shared_future<void> released = release->get_future().share();
  const auto never = [released](const std::string&) {
    released.wait();  // what getaddrinfo does on a resolver that never answers
    return registry::Resolved{};
  };
  auto ref = registry::parse_reference("silent.example:5000/app");
  ASSERT_TRUE(ref.ok());
  auto st = registry::check_host(
      *ref, [](uint32_t) { return false; }, std::chrono::milliseconds(50), never);
  release->set_value();  // the given-up lookup's thread ends
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().errnum, ETIMEDOUT);
  EXPECT_EQ(st.error().message(),
            "registry silent.example:5000: no DNS answer for silent.example within 50 ms; "
            "check the daemon host's resolver (/etc/resolv.conf)");
}

TEST(RegistryHost, AnswersAreCheckedAgainstTheDeniedSet) {
  auto ref = registry::parse_reference("reg.example/app");
  ASSERT_TRUE(ref.ok());
  const auto answers = [](uint32_t ip) {
    return [ip](const std::string&) { return registry::Resolved{0, {ip}}; };
  };
  const auto loopback = [](uint32_t ip) { return ip >> 24 == 127; };
  EXPECT_FALSE(registry::check_host(*ref, loopback, registry::kLookupTimeout, answers(0x7f000001)));
  EXPECT_TRUE(registry::check_host(*ref, loopback, registry::kLookupTimeout, answers(0x5db8d822)));
}

void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

TEST(OciExport, LayersRoundTripThroughTheImporter) {
  if (::geteuid() != 0) GTEST_SKIP() << "whiteouts (0:0 char devices) need root to make";
  testing::TempDir dir("abx-oci-export-test");
  const IdShift shift{100000, 100000};
  const fs::path lower = dir.path() / "lower", upper = dir.path() / "upper";
  fs::create_directories(lower / "etc");
  fs::create_directories(lower / "opaque");
  write(lower / "etc" / "gone.txt", "deleted above\n");
  write(lower / "etc" / "kept.txt", "kept\n");
  write(lower / "opaque" / "hidden.txt", "hidden by an opaque dir\n");
  ASSERT_EQ(::lchown((lower / "etc" / "kept.txt").c_str(), 101000, 101000), 0);
  fs::create_directories(upper / "etc");
  ASSERT_EQ(::mknod((upper / "etc" / "gone.txt").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  fs::create_directories(upper / "opaque");
  const bool xattrs =
      ::lsetxattr((upper / "opaque").c_str(), "user.overlay.opaque", "y", 1, 0) == 0;
  write(upper / "opaque" / "new.txt", "new\n");
  write(upper / "etc" / "a.txt", "linked\n");
  fs::create_hard_link(upper / "etc" / "a.txt", upper / "etc" / "b.txt");
  fs::create_symlink("a.txt", upper / "etc" / "link");

  const fs::path layout = dir.path() / "layout";
  fs::create_directory(layout);
  ExportConfig config;
  config.env = {{"FOO", "bar"}};
  config.workdir = "/etc";
  config.user = "1000";
  ASSERT_TRUE(write_oci_layout({lower, upper}, config, shift, layout, {}).ok());

  const fs::path rootfs = dir.path() / "rootfs", scratch = dir.path() / "scratch";
  fs::create_directory(rootfs);
  fs::create_directory(scratch);
  auto unpacked = unpack_image(layout, scratch, rootfs, IdShift{200000, 200000});
  ASSERT_TRUE(unpacked.ok()) << unpacked.error().message();
  EXPECT_EQ(unpacked->layers, 2u);
  EXPECT_EQ(unpacked->env.at("FOO"), "bar");
  EXPECT_EQ(unpacked->workdir, "/etc");
  EXPECT_EQ(unpacked->user, "1000");
  EXPECT_FALSE(fs::exists(rootfs / "etc" / "gone.txt"));
  EXPECT_FALSE(fs::exists(rootfs / "etc" / ".wh.gone.txt"));
  EXPECT_TRUE(fs::exists(rootfs / "opaque" / "new.txt"));
  if (xattrs) {
    EXPECT_FALSE(fs::exists(rootfs / "opaque" / "hidden.txt"));
  }
  EXPECT_EQ(fs::read_symlink(rootfs / "etc" / "link"), "a.txt");
  struct stat a {
  }, b{}, kept{};
  ASSERT_EQ(::stat((rootfs / "etc" / "a.txt").c_str(), &a), 0);
  ASSERT_EQ(::stat((rootfs / "etc" / "b.txt").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino) << "a hard link stays one";
  ASSERT_EQ(::stat((rootfs / "etc" / "kept.txt").c_str(), &kept), 0);
  EXPECT_EQ(kept.st_uid, 201000u) << "uid 1000 in the sandbox range, shifted back and on again";
}

}  // namespace
}  // namespace abx::templates
