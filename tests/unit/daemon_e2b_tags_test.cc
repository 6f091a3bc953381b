// E2B's template tags: which names are tags, what a build's tags name, and
// that they outlive the object (the daemon) through their file.
#include <gtest/gtest.h>

#include <filesystem>

#include "daemon/e2b_tags.h"

namespace abx::daemon {
namespace {

namespace fs = std::filesystem;

class E2bTagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("abx-e2b-tags-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path file() const { return dir_ / "e2b-tags.json"; }
  fs::path dir_;
};

TEST_F(E2bTagsTest, TagsAreShortWordsAndANameMayCarryOne) {
  EXPECT_TRUE(E2bTags::valid_tag("v1.0-rc_2"));
  for (const char* bad : {"", ":x", "-x", ".x", "a b", "a/b", "a:b", "a\n"})
    EXPECT_FALSE(E2bTags::valid_tag(bad)) << bad;
  EXPECT_FALSE(E2bTags::valid_tag(std::string(129, 'a')));
  auto plain = E2bTags::split("app");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->name, "app");
  EXPECT_EQ(plain->tag, "default");
  auto tagged = E2bTags::split("app:v2");
  ASSERT_TRUE(tagged);
  EXPECT_EQ(tagged->tag, "v2");
  EXPECT_FALSE(E2bTags::split(":v2"));
  EXPECT_FALSE(E2bTags::split("app:"));
  EXPECT_FALSE(E2bTags::split("app:v:2"));
  EXPECT_FALSE(E2bTags::split("a\nb:v1"));
  EXPECT_FALSE(E2bTags::split(std::string(257, 'a')));
}

TEST_F(E2bTagsTest, ABuildsTagsNameItUntilAnotherBuildTakesThem) {
  E2bTags tags(file());
  ASSERT_TRUE(tags.record_build("t", "app", "b1", {}));
  ASSERT_TRUE(tags.record_build("t", "app", "b2", {"v2"}));
  auto first = tags.find("t", {"app", "default"});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->build_id, "b1");
  EXPECT_FALSE(first->latest);
  EXPECT_TRUE(tags.find("t", {"app", "v2"})->latest);
  EXPECT_FALSE(tags.find("other-team", {"app", "v2"}));

  auto assigned = tags.assign("t", {"app", "v2"}, {"prod", "default"});
  ASSERT_TRUE(assigned);
  EXPECT_EQ(assigned->build_id, "b2");
  EXPECT_EQ(tags.find("t", {"app", "default"})->build_id, "b2");  // moved
  EXPECT_EQ(tags.assign("t", {"app", "nope"}, {"x"}).error().errnum, ENOENT);
  EXPECT_EQ(tags.assign("t", {"app", "v2"}, {"bad tag"}).error().errnum, kErrBadInput);

  // Removing is all or nothing.
  EXPECT_EQ(tags.remove("t", "app", {"prod", "nope"}).error().errnum, ENOENT);
  EXPECT_TRUE(tags.find("t", {"app", "prod"}));
  ASSERT_TRUE(tags.remove("t", "app", {"prod"}));
  EXPECT_FALSE(tags.find("t", {"app", "prod"}));
  EXPECT_EQ(tags.list("t", "app")->size(), 2u);
  EXPECT_FALSE(tags.list("t", "other"));
}

TEST_F(E2bTagsTest, TagsOutliveTheObjectAndADamagedFileIsSetAside) {
  {
    E2bTags tags(file());
    ASSERT_TRUE(tags.record_build("t", "app", "b1", {"v1"}));
  }
  E2bTags again(file());
  auto found = again.find("t", {"app", "v1"});
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->latest);

  {
    std::FILE* f = std::fopen(file().c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("[{\"team\": 1}", f);
    std::fclose(f);
  }
  E2bTags damaged(file());
  EXPECT_FALSE(damaged.find("t", {"app", "v1"}));
  EXPECT_TRUE(fs::exists(fs::path(file().string() + ".damaged")));
}

TEST_F(E2bTagsTest, ATemplateHasAtMost64Tags) {
  E2bTags tags(file());
  std::vector<std::string> many;
  for (int i = 0; i < 64; ++i) many.push_back("t" + std::to_string(i));
  ASSERT_TRUE(tags.record_build("t", "app", "b1", many));
  EXPECT_EQ(tags.assign("t", {"app", "t0"}, {"one-more"}).error().errnum, kErrBadInput);
  EXPECT_TRUE(tags.assign("t", {"app", "t0"}, {"t1"}));  // an existing tag moves
}

}  // namespace
}  // namespace abx::daemon
