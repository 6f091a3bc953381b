// The build context a Sandboxfile's COPY reads from: nothing may lead
// outside it, and its digest changes exactly when a copied file does.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.h"
#include "templates/build_context.h"
#include "templates/layer_store.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

class BuildContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    context_ = root_ / "context";
    fs::create_directories(context_ / "src");
    write(context_ / "src/app.py", "print(1)\n");
    write(context_ / "Sandboxfile", "FROM base\n");
  }

  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  // A tar holding one regular file named `name`.
  fs::path tar_with(const std::string& name) {
    const fs::path tar = root_ / "upload.tar";
    archive* out = archive_write_new();
    archive_write_set_format_pax_restricted(out);
    archive_write_open_filename(out, tar.c_str());
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, name.c_str());
    archive_entry_set_filetype(entry, AE_IFREG);
    archive_entry_set_perm(entry, 0644);
    archive_entry_set_size(entry, 2);
    archive_write_header(out, entry);
    archive_write_data(out, "x\n", 2);
    archive_entry_free(entry);
    archive_write_close(out);
    archive_write_free(out);
    return tar;
  }

  abx::testing::TempDir temp_{"abx-context-test"};
  fs::path root_ = temp_.path();
  fs::path context_;
};

TEST_F(BuildContextTest, UnpackReturnsTheSandboxfile) {
  const fs::path tar = tar_with("Sandboxfile");
  auto text = build_context::unpack(tar, root_ / "out", "Sandboxfile");
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(*text, "x\n");
}

TEST_F(BuildContextTest, UnpackRefusesPathsOutsideTheContext) {
  for (const char* name : {"../escape", "/etc/evil", "a/../../escape"}) {
    auto text = build_context::unpack(tar_with(name), root_ / "out", "Sandboxfile");
    ASSERT_FALSE(text.ok()) << name;
    EXPECT_NE(text.error().message().find("outside the context"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(root_ / "escape"));
}

TEST_F(BuildContextTest, MissingSandboxfileSaysWhatToDo) {
  auto text = build_context::unpack(tar_with("other"), root_ / "out", "Sandboxfile");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message().find("-f"), std::string::npos);
}

TEST_F(BuildContextTest, ExpandMatchesWildcardsAndRefusesEscapes) {
  write(context_ / "src/b.py", "");
  auto found = build_context::expand(context_, "src/*.py");
  ASSERT_TRUE(found.ok()) << found.error().message();
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ(found->at(0).filename(), "app.py");

  fs::create_directory_symlink("/etc", context_ / "etc-link");
  auto escaped = build_context::expand(context_, "etc-link/passwd");
  ASSERT_FALSE(escaped.ok());
  EXPECT_NE(escaped.error().message().find("outside the build context"), std::string::npos);

  auto missing = build_context::expand(context_, "nope.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().errnum, ENOENT);
}

// FROM's image archive: a name or a symlink leading out of the context is refused.
TEST_F(BuildContextTest, FileInsideRefusesEscapes) {
  write(root_ / "secret.tar", "host file");
  fs::create_symlink(root_ / "secret.tar", context_ / "image.tar");
  fs::create_symlink("src", context_ / "linked");
  auto inside = build_context::file_inside(context_, "linked/app.py");
  ASSERT_TRUE(inside.ok()) << inside.error().message();
  EXPECT_EQ(*inside, fs::canonical(context_ / "src/app.py"));
  for (const std::string& name : {std::string("image.tar"), std::string("../secret.tar")}) {
    auto out = build_context::file_inside(context_, name);
    ASSERT_FALSE(out.ok()) << name;
    EXPECT_EQ(out.error().errnum, EPERM) << name;
  }
  auto absolute = build_context::file_inside(context_, (root_ / "secret.tar").string());
  ASSERT_FALSE(absolute.ok());
  EXPECT_EQ(absolute.error().errnum, ENOENT);
}

TEST_F(BuildContextTest, DigestFollowsContentNotTime) {
  auto paths = build_context::expand(context_, "src");
  ASSERT_TRUE(paths.ok());
  auto first = build_context::digest(context_, *paths);
  ASSERT_TRUE(first.ok());
  write(context_ / "src/app.py", "print(1)\n");  // same bytes, new mtime
  EXPECT_EQ(build_context::digest(context_, *paths).value(), *first);
  write(context_ / "src/app.py", "print(2)\n");
  EXPECT_NE(build_context::digest(context_, *paths).value(), *first);
}

TEST_F(BuildContextTest, LayerStoreCommitsAndCollects) {
  LayerStore layers(root_ / "templates");
  auto staging = layers.begin("one");
  ASSERT_TRUE(staging.ok()) << staging.error().message();
  fs::create_directories(*staging / "upper/etc");
  ASSERT_TRUE(layers.commit("one", *staging / "upper", *staging).ok());
  EXPECT_TRUE(layers.has("one"));
  EXPECT_TRUE(fs::exists(layers.path("one") / "etc"));
  EXPECT_FALSE(fs::exists(*staging));

  auto interrupted = layers.begin("two");
  ASSERT_TRUE(interrupted.ok());
  layers.sweep_staging();
  EXPECT_FALSE(fs::exists(*interrupted));

  layers.collect_garbage({});
  EXPECT_FALSE(layers.has("one"));
}

}  // namespace
}  // namespace abx::templates
