// Template ownership on a real TemplateStore over a temp dir: which team sees
// which template, and a template removed while sandboxes run on it keeping
// its layers until the last of them ends.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "temp_dir.h"
#include "template_store_fakes.h"
#include "templates/catalog.h"
#include "templates/store_common.h"
#include "templates/templates.h"

namespace abx::templates {
namespace {

namespace fs = std::filesystem;

using testing::NoSandboxRuntime;
using testing::read_bytes;
using testing::write_tar;

class TemplateTenancyTest : public ::testing::Test {
 protected:
  // A stored template as a build leaves it: meta.json naming layers that exist.
  void store_template(const std::string& name, const std::string& owner,
                      const std::vector<std::string>& layers) {
    for (const auto& layer : layers) {
      fs::create_directories(layers_dir() / layer / "etc");
      std::ofstream(layers_dir() / layer / "etc/marker") << layer;
    }
    TemplateMeta meta;
    meta.name = name;
    meta.owner = owner;
    meta.layers = layers;
    fs::create_directories(templates_ / name);
    ASSERT_TRUE(write_meta(templates_ / name, meta).ok());
  }
  // A one-layer image as `docker save` writes it.
  fs::path docker_image() {
    const fs::path layer = temp_.path() / "layer.tar";
    write_tar(layer, {{"etc/marker", "image\n"}});
    const fs::path image = temp_.path() / "image.tar";
    write_tar(image,
              {{"config.json", R"({"config": {"Env": ["PATH=/bin"]}})"},
               {"l/layer.tar", read_bytes(layer)},
               {"manifest.json", R"([{"Config": "config.json", "Layers": ["l/layer.tar"]}])"}});
    return image;
  }
  fs::path layers_dir() const { return templates_ / ".layers"; }
  bool has_layer(const std::string& id) const { return fs::is_directory(layers_dir() / id); }

  abx::testing::TempDir temp_{"abx-tenancy-test"};
  fs::path templates_ = temp_.path() / "templates";
  NoSandboxRuntime runtime_;
};

TEST_F(TemplateTenancyTest, BuiltinsAreEveryonesAndStoredTemplatesTheirOwnersTeams) {
  store_template("mine", "alpha", {"l-mine"});
  store_template("legacy", "", {"l-legacy"});
  store_template("base", "alpha", {"l-base"});
  TemplateStore store(templates_, runtime_);

  for (const char* name : {"base", "host", "code-interpreter-v1"}) {
    EXPECT_TRUE(store.is_builtin(name)) << name;
    EXPECT_TRUE(store.visible_to(name, "beta")) << name;
  }
  EXPECT_FALSE(store.is_builtin("mine"));
  EXPECT_FALSE(store.is_builtin("nope"));

  EXPECT_TRUE(store.visible_to("mine", "alpha"));
  EXPECT_FALSE(store.visible_to("mine", "beta"));
  EXPECT_EQ(store.owner_of("mine"), "alpha");
  // Made before templates had owners: the default team's.
  EXPECT_TRUE(store.visible_to("legacy", "default"));
  EXPECT_FALSE(store.visible_to("legacy", "alpha"));
  EXPECT_EQ(store.owner_of("legacy"), "default");
  // Unknown names and paths are nobody's, like a foreign template.
  for (const char* name : {"nope", "../templates/mine", ".layers", ""}) {
    EXPECT_FALSE(store.visible_to(name, "alpha")) << name;
    EXPECT_FALSE(store.owner_of(name)) << name;
  }
}

// An operator's spec dir is the catalog: its templates are built-ins too,
// whoever built them first.
TEST_F(TemplateTenancyTest, TemplatesOfTheSpecDirAreBuiltins) {
  const fs::path specs = temp_.path() / "specs";
  fs::create_directories(specs / "base");
  fs::create_directories(specs / "extra");
  std::ofstream(specs / "base/spec.toml") << "suite = \"bookworm\"\n";
  std::ofstream(specs / "extra/spec.toml") << "suite = \"bookworm\"\n";
  const char* before = std::getenv("ABX_TEMPLATE_SPECS");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("ABX_TEMPLATE_SPECS", specs.c_str(), 1);
  store_template("extra", "alpha", {"l-extra"});
  TemplateStore store(templates_, runtime_);
  EXPECT_TRUE(store.is_builtin("extra"));
  EXPECT_TRUE(store.visible_to("extra", "beta"));
  EXPECT_FALSE(store.is_builtin("other"));
  if (before != nullptr) {
    ::setenv("ABX_TEMPLATE_SPECS", saved.c_str(), 1);
  } else {
    ::unsetenv("ABX_TEMPLATE_SPECS");
  }
}

TEST_F(TemplateTenancyTest, UnknownNameErrorListsOnlyWhatTheTeamSees) {
  store_template("mine", "alpha", {"l-mine"});
  TemplateStore store(templates_, runtime_);
  const Error for_beta = store.unknown_for("mine", "beta");
  EXPECT_EQ(for_beta.errnum, ENOENT);
  EXPECT_EQ(for_beta.message(), "unknown template 'mine'; known: base, code-interpreter-v1, host");
  EXPECT_EQ(store.unknown_for("x", "alpha").message(),
            "unknown template 'x'; known: base, code-interpreter-v1, host, mine");
}

TEST_F(TemplateTenancyTest, RemovedUnusedTemplateTakesItsOwnLayersAtOnce) {
  store_template("a", "alpha", {"l-a", "l-shared"});
  store_template("b", "alpha", {"l-shared"});
  TemplateStore store(templates_, runtime_);
  ASSERT_TRUE(store.remove("a", false).ok());
  EXPECT_FALSE(store.resolve("a").ok());
  EXPECT_FALSE(has_layer("l-a"));
  EXPECT_TRUE(has_layer("l-shared")) << "b still uses it";
}

TEST_F(TemplateTenancyTest, TemplateRemovedInUseKeepsItsLayersUntilItsLastSandboxEnds) {
  store_template("a", "alpha", {"l-a", "l-shared"});
  store_template("b", "alpha", {"l-shared"});
  TemplateStore store(templates_, runtime_);
  ASSERT_TRUE(store.remove("a", true).ok());

  // Gone for every name lookup and list...
  EXPECT_FALSE(store.resolve("a").ok());
  EXPECT_FALSE(store.visible_to("a", "alpha"));
  for (const auto& info : store.list()) EXPECT_NE(info.name, "a");
  // ...but what its sandboxes run on stays, also through another removal's collection.
  EXPECT_TRUE(has_layer("l-a"));
  store.release_retired({"a", "b"});
  ASSERT_TRUE(store.remove("b", false).ok());
  EXPECT_TRUE(has_layer("l-a"));
  EXPECT_TRUE(has_layer("l-shared"));

  store.release_retired({});
  EXPECT_FALSE(has_layer("l-a"));
  EXPECT_FALSE(has_layer("l-shared"));
  EXPECT_FALSE(fs::exists(templates_ / ".retired"));
}

TEST_F(TemplateTenancyTest, NameOfARetiredTemplateCanBeUsedAgain) {
  store_template("a", "alpha", {"l-old"});
  TemplateStore store(templates_, runtime_);
  ASSERT_TRUE(store.remove("a", true).ok());
  store_template("a", "alpha", {"l-new"});
  EXPECT_TRUE(store.resolve("a").ok());
  // A sandbox of either "a" keeps both: ids are names, so the old one waits for all of them.
  store.release_retired({"a"});
  EXPECT_TRUE(has_layer("l-old"));
  store.release_retired({});
  EXPECT_FALSE(has_layer("l-old"));
  EXPECT_TRUE(has_layer("l-new"));
}

// A running build commits layers before any meta.json names them, so
// releasing waits for a later call rather than collecting them.
TEST_F(TemplateTenancyTest, ReleaseWaitsWhileABuildHoldsTheLock) {
  store_template("a", "alpha", {"l-a"});
  TemplateStore store(templates_, runtime_);
  ASSERT_TRUE(store.remove("a", true).ok());
  {
    auto build = store::take_build_lock(templates_);
    ASSERT_TRUE(build.ok());
    std::thread([&] { store.release_retired({}); }).join();
    EXPECT_TRUE(has_layer("l-a"));
  }
  store.release_retired({});
  EXPECT_FALSE(has_layer("l-a"));
}

// Names are per team: a team's template of a name another team uses is its
// own id (name@team), and each team's lookups find only its own.
TEST_F(TemplateTenancyTest, TwoTeamsKeepTheirOwnTemplatesOfOneName) {
  store_template("shared", "alpha", {"l-alpha"});  // stored before names were per team
  TemplateStore store(templates_, runtime_);
  const auto quiet = [](const std::string&) {};

  auto id = store.id_for("beta", "shared");
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(*id, "shared@beta");
  ASSERT_TRUE(store.import_image(*id, docker_image(), "test", "beta", quiet).ok());
  EXPECT_EQ(read_meta(templates_ / "shared")->layers, std::vector<std::string>{"l-alpha"});

  EXPECT_EQ(store.resolve_for("alpha", "shared").value(), "shared");
  EXPECT_EQ(store.resolve_for("beta", "shared").value(), "shared@beta");
  EXPECT_EQ(store.resolve_for("beta", "shared@beta").value(), "shared@beta");
  EXPECT_EQ(store.id_for("alpha", "shared").value(), "shared");
  EXPECT_EQ(store.id_for("beta", "shared").value(), "shared@beta");
  EXPECT_EQ(store.id_for("default", "fresh").value(), "fresh");
  EXPECT_EQ(store.id_for("beta", "base").value(), "base");  // built-ins are everyone's

  // A third team, or one naming another's id, gets the unknown name's answer.
  auto other = store.resolve_for("gamma", "shared");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message().find("beta"), std::string::npos);
  EXPECT_EQ(store.unknown_for("shared", "gamma").message(), other.error().message());
  EXPECT_FALSE(store.resolve_for("alpha", "shared@beta").ok());
  EXPECT_FALSE(store.id_for("alpha", "shared@beta").ok());  // users never name an id
  EXPECT_EQ(TemplateStore::name_of_id("shared@beta"), "shared");
  EXPECT_EQ(store.unknown_for("x", "beta").message().find("shared@beta"), std::string::npos);
}

// The daemon builds under the caller's own id (id_for); the store still
// refuses to replace another team's template when asked to directly.
TEST_F(TemplateTenancyTest, ImportUnderAnotherTeamsNameIsRefusedAndLeavesItsTemplate) {
  store_template("taken", "alpha", {"l-taken"});
  TemplateStore store(templates_, runtime_);
  const fs::path image = docker_image();
  const auto quiet = [](const std::string&) {};

  auto refused = store.import_image("taken", image, "test", "beta", quiet);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().errnum, EEXIST);
  EXPECT_EQ(refused.error().message(), "template name 'taken' is in use, choose another");
  EXPECT_EQ(store.owner_of("taken"), "alpha");
  EXPECT_EQ(read_meta(templates_ / "taken")->layers, std::vector<std::string>{"l-taken"});

  // Its owner's team may replace it; a free name is anyone's.
  auto replaced = store.import_image("taken", image, "test", "alpha", quiet);
  ASSERT_TRUE(replaced.ok()) << replaced.error().message();
  auto fresh = store.import_image("fresh", image, "test", "beta", quiet);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message();
  EXPECT_EQ(store.owner_of("fresh"), "beta");
}

TEST_F(TemplateTenancyTest, SandboxfileFromAnotherTeamsTemplateIsAnUnknownFrom) {
  store_template("mine", "alpha", {"l-mine"});
  TemplateStore store(templates_, runtime_);
  SandboxfileRequest request;
  request.name = "theirs";
  request.context_dir = temp_.path();
  request.sandboxfile = "FROM mine\nENV A=1\n";
  request.owner = "beta";
  auto built = store.build_sandboxfile(request, [](const std::string&) {});
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().errnum, ENOENT);
  EXPECT_NE(built.error().message().find("unknown template 'mine' in FROM"), std::string::npos)
      << built.error().message();
  EXPECT_FALSE(store.owner_of("theirs"));
}

}  // namespace
}  // namespace abx::templates
