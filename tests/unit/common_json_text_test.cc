#include <gtest/gtest.h>

#include <string>

#include "common/json_text.h"

namespace abx::json_text {
namespace {

std::string nested_arrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(JsonText, CountsNestingOutsideStrings) {
  EXPECT_FALSE(nested_deeper_than("[[1]]", 2));
  EXPECT_TRUE(nested_deeper_than("[[1]]", 1));
  EXPECT_FALSE(nested_deeper_than(R"({"a":{"b":[]}})", 3));
  EXPECT_TRUE(nested_deeper_than(R"({"a":{"b":[]}})", 2));
  // Brackets in strings, escaped quotes included, are text, not nesting.
  EXPECT_FALSE(nested_deeper_than(R"(["[[[[", "\"[[[[", "\\"])", 1));
  EXPECT_TRUE(nested_deeper_than(R"(["\\", [[]]])", 2));
  // Siblings do not add up.
  EXPECT_FALSE(nested_deeper_than("[[],[],[[]]]", 3));
}

TEST(JsonText, ParsesUpToTheLimit) {
  auto value = parse(nested_arrays(kMaxDepth));
  ASSERT_TRUE(value) << value.error().message();
  EXPECT_TRUE(value->is_array());
}

TEST(JsonText, RefusesDeeperNestingWithoutBuildingIt) {
  for (const size_t depth : {kMaxDepth + 1, size_t{100000}}) {
    auto value = parse(nested_arrays(depth));
    ASSERT_FALSE(value);
    EXPECT_EQ(value.error().errnum, kErrBadInput);
    EXPECT_EQ(value.error().message(), "body: JSON nested deeper than 128 levels (the limit)");
  }
  // An unclosed deep prefix is refused the same way, before the parser sees it.
  auto open_only = parse_object(std::string(200000, '['), "request message");
  ASSERT_FALSE(open_only);
  EXPECT_EQ(open_only.error().message(),
            "request message: JSON nested deeper than 128 levels (the limit)");
}

TEST(JsonText, NamesWhatIsWrong) {
  EXPECT_EQ(parse("{nope", "buildArgs").error().message(), "buildArgs: not valid JSON");
  EXPECT_EQ(parse_object("[1]").error().message(), "body: must be a JSON object");
  EXPECT_EQ(parse_object("nope").error().message(), "body: must be a JSON object");
  EXPECT_EQ(parse_object(R"({"a":1})")->at("a"), 1);
}

TEST(JsonText, DumpReplacesInvalidUtf8) {
  const nlohmann::json value = {{"name", std::string("a\xff"
                                                     "b")}};
  EXPECT_EQ(dump(value),
            "{\"name\":\"a\xef\xbf\xbd"
            "b\"}");
  EXPECT_EQ(dump(nlohmann::json{{"name", "é"}}), R"({"name":"é"})");
}

}  // namespace
}  // namespace abx::json_text
