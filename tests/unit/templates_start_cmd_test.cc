// A template's start and ready commands: kept in meta.json, shown by
// inspect, handed to a create with the process defaults, and inherited by a
// Sandboxfile's FROM unless it names its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "template_store_fakes.h"
#include "templates/catalog.h"
#include "templates/templates.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

using testing::NoSandboxRuntime;

class TemplateStartCmdTest : public ::testing::Test {
 protected:
  void store_template(const std::string& name, const std::string& start, const std::string& ready) {
    TemplateMeta meta;
    meta.name = name;
    meta.layers = {"l-" + name};
    meta.start_cmd = start;
    meta.ready_cmd = ready;
    fs::create_directories(templates_ / ".layers" / meta.layers.front());
    fs::create_directories(templates_ / name);
    ASSERT_TRUE(write_meta(templates_ / name, meta).ok());
  }
  Result<TemplateInfo> build(TemplateStore& store, const std::string& name,
                             const std::string& sandboxfile) {
    return testing::build_sandboxfile(store, name, sandboxfile, temp_.path() / "context");
  }

  abx::testing::TempDir temp_{"abx-start-cmd-test"};
  fs::path templates_ = temp_.path() / "templates";
  NoSandboxRuntime runtime_;
};

TEST_F(TemplateStartCmdTest, MetaRoundTrips) {
  store_template("svc", "python3 -m http.server 9000", "curl -sf localhost:9000");
  auto meta = read_meta(templates_ / "svc");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->start_cmd, "python3 -m http.server 9000");
  EXPECT_EQ(meta->ready_cmd, "curl -sf localhost:9000");
}

TEST_F(TemplateStartCmdTest, OlderMetaWithoutThemHasNone) {
  fs::create_directories(templates_ / "old");
  std::ofstream(templates_ / "old/meta.json") << R"({"name": "old", "layers": ["x"]})";
  auto meta = read_meta(templates_ / "old");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->start_cmd, "");
  EXPECT_EQ(meta->ready_cmd, "");
}

TEST_F(TemplateStartCmdTest, InspectAndProcessDefaultsCarryThem) {
  store_template("svc", "serve", "check");
  TemplateStore store(templates_, runtime_);
  EXPECT_EQ(store.inspect("svc")->start_cmd, "serve");
  EXPECT_EQ(store.inspect("svc")->ready_cmd, "check");
  ProcessDefaults defaults;
  ASSERT_TRUE(store.rootfs("svc", &defaults).ok());
  EXPECT_EQ(defaults.start_cmd, "serve");
  EXPECT_EQ(defaults.ready_cmd, "check");
}

TEST_F(TemplateStartCmdTest, FromInheritsThemUnlessOverridden) {
  store_template("svc", "serve", "check");
  TemplateStore store(templates_, runtime_);

  ASSERT_TRUE(build(store, "same", "FROM svc\nENV A=1\n").ok());
  EXPECT_EQ(read_meta(templates_ / "same")->start_cmd, "serve");
  EXPECT_EQ(read_meta(templates_ / "same")->ready_cmd, "check");

  // A new start command drops the old check, which may test another service.
  ASSERT_TRUE(build(store, "other", "FROM svc\nCMD other\n").ok());
  EXPECT_EQ(read_meta(templates_ / "other")->start_cmd, "other");
  EXPECT_EQ(read_meta(templates_ / "other")->ready_cmd, "");

  ASSERT_TRUE(build(store, "checked", "FROM svc\nREADY better\n").ok());
  EXPECT_EQ(read_meta(templates_ / "checked")->start_cmd, "serve");
  EXPECT_EQ(read_meta(templates_ / "checked")->ready_cmd, "better");

  ASSERT_TRUE(build(store, "cleared", "FROM svc\nCMD []\n").ok());
  EXPECT_EQ(store.inspect("cleared")->start_cmd, "");
}

}  // namespace
}  // namespace abx::templates
