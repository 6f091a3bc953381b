// Which templates let set-id programs work (RootfsSpec::allow_setid): one
// whose checked-in spec.toml says `allow_setid = true`, and those built FROM
// it; never an imported image or a Sandboxfile on its own.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "template_store_fakes.h"
#include "templates/catalog.h"
#include "templates/spec.h"
#include "templates/templates.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

using testing::NoSandboxRuntime;
using testing::read_bytes;
using testing::write_tar;

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// Points load_spec at a spec dir of the test's own for its lifetime.
class SpecRoot {
 public:
  explicit SpecRoot(const fs::path& dir) { ::setenv("ABX_TEMPLATE_SPECS", dir.c_str(), 1); }
  ~SpecRoot() { ::unsetenv("ABX_TEMPLATE_SPECS"); }
  SpecRoot(const SpecRoot&) = delete;
  SpecRoot& operator=(const SpecRoot&) = delete;
};

class TemplateSetidTest : public ::testing::Test {
 protected:
  void store_template(const std::string& name, bool allow_setid) {
    TemplateMeta meta;
    meta.name = name;
    meta.layers = {"l-" + name};
    meta.allow_setid = allow_setid;
    fs::create_directories(templates_ / ".layers" / meta.layers.front());
    fs::create_directories(templates_ / name);
    ASSERT_TRUE(write_meta(templates_ / name, meta).ok());
  }
  // A one-layer image as `docker save` writes it, whose config asks for
  // allow_setid in every way it might: the importer must ignore it all.
  fs::path docker_image() {
    const fs::path layer = temp_.path() / "layer.tar";
    write_tar(layer, {{"etc/marker", "image\n"}});
    const fs::path image = temp_.path() / "context/image.tar";
    fs::create_directories(image.parent_path());
    write_tar(image,
              {{"config.json", R"({"allow_setid": true, "config": {"Env": ["PATH=/bin"],)"
                               R"( "Labels": {"allow_setid": "true"}}})"},
               {"l/layer.tar", read_bytes(layer)},
               {"manifest.json", R"([{"Config": "config.json", "Layers": ["l/layer.tar"]}])"}});
    return image;
  }
  Result<TemplateInfo> build(TemplateStore& store, const std::string& name,
                             const std::string& sandboxfile) {
    return testing::build_sandboxfile(store, name, sandboxfile, temp_.path() / "context");
  }

  abx::testing::TempDir temp_{"abx-setid-test"};
  fs::path templates_ = temp_.path() / "templates";
  NoSandboxRuntime runtime_;
};

TEST_F(TemplateSetidTest, SpecKeyIsReadAndInheritedThroughExtends) {
  const fs::path specs = temp_.path() / "specs";
  write_text(specs / "base/spec.toml", "packages = [\"bash\"]\n");
  write_text(specs / "sudoer/spec.toml", "packages = [\"sudo\"]\nallow_setid = true\n");
  write_text(specs / "child/spec.toml", "extends = \"sudoer\"\n");
  write_text(specs / "optout/spec.toml", "extends = \"sudoer\"\nallow_setid = false\n");
  write_text(specs / "bad/spec.toml", "allow_setid = \"yes\"\n");
  SpecRoot root(specs);

  EXPECT_FALSE(load_spec("base")->allow_setid);
  EXPECT_TRUE(load_spec("sudoer")->allow_setid);
  EXPECT_TRUE(load_spec("child")->allow_setid);
  EXPECT_FALSE(load_spec("optout")->allow_setid);
  auto bad = load_spec("bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().errnum, EINVAL);
  EXPECT_NE(bad.error().message().find("allow_setid must be true or false"), std::string::npos);
  // The key is part of the spec's hash: turning it on builds afresh.
  EXPECT_NE(load_spec("sudoer")->hash, load_spec("optout")->hash);
}

TEST_F(TemplateSetidTest, MetaCarriesItToTheRootfsAndSandboxfilesFromItInheritIt) {
  store_template("sudoer", true);
  store_template("plain", false);
  TemplateStore store(templates_, runtime_);
  EXPECT_TRUE(store.rootfs("sudoer")->allow_setid);
  EXPECT_TRUE(store.inspect("sudoer")->allow_setid);
  EXPECT_FALSE(store.rootfs("plain")->allow_setid);

  ASSERT_TRUE(build(store, "child", "FROM sudoer\nENV A=1\n").ok());
  EXPECT_TRUE(store.rootfs("child")->allow_setid);
  EXPECT_TRUE(read_meta(templates_ / "child")->allow_setid);
  ASSERT_TRUE(build(store, "plainchild", "FROM plain\nENV A=1\n").ok());
  EXPECT_FALSE(store.rootfs("plainchild")->allow_setid);
}

TEST_F(TemplateSetidTest, AnImportedImageNeverHasIt) {
  TemplateStore store(templates_, runtime_);
  const fs::path image = docker_image();
  auto imported = store.import_image("img", image, "test", "alpha", [](const std::string&) {});
  ASSERT_TRUE(imported.ok()) << imported.error().message();
  EXPECT_FALSE(imported->allow_setid);
  EXPECT_FALSE(store.rootfs("img")->allow_setid);

  ASSERT_TRUE(build(store, "fromimage", "FROM image.tar\nENV A=1\n").ok());
  EXPECT_FALSE(store.rootfs("fromimage")->allow_setid);
}

}  // namespace
}  // namespace abx::templates
