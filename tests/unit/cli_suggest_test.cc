#include <gtest/gtest.h>

#include "cli/suggest.h"

namespace abx::cli {
namespace {

TEST(EditDistance, CountsInsertsDeletesReplacesAndSwaps) {
  EXPECT_EQ(edit_distance("list", "list"), 0u);
  EXPECT_EQ(edit_distance("lsit", "list"), 1u);
  EXPECT_EQ(edit_distance("lst", "list"), 1u);
  EXPECT_EQ(edit_distance("exce", "exec"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(NearestCommand, GuessesCloseWordsAndPrefixesOnly) {
  CLI::App app;
  app.add_subcommand("list", "l")->alias("ls");
  app.add_subcommand("create", "c");
  app.add_subcommand("template", "t");
  app.add_subcommand("exec", "e");
  EXPECT_EQ(nearest_command(app, "lsit"), "list");
  EXPECT_EQ(nearest_command(app, "craete"), "create");
  EXPECT_EQ(nearest_command(app, "templ"), "template");
  EXPECT_EQ(nearest_command(app, "l"), "list");  // one edit from the alias ls
  EXPECT_EQ(nearest_command(app, "xyzzyplugh"), std::nullopt);
  EXPECT_TRUE(has_command(app, "ls"));
  EXPECT_FALSE(has_command(app, "lst"));
}

}  // namespace
}  // namespace abx::cli
