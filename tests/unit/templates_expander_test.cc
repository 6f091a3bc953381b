#include <gtest/gtest.h>

#include <map>
#include <string>

#include "templates/sandboxfile_expander.h"

namespace abx::templates::sandboxfile {
namespace {

// A lookup over `vars`; names in `declared_unset` are declared (an ARG with no value) but unset.
VariableLookup lookup_in(std::map<std::string, std::string> vars,
                         std::set<std::string> declared_unset = {}) {
  return [vars = std::move(vars),
          declared_unset = std::move(declared_unset)](const std::string& name) -> Variable {
    if (const auto found = vars.find(name); found != vars.end()) return {true, found->second};
    if (declared_unset.contains(name)) return {true, std::nullopt};
    return {};
  };
}

std::string expand_ok(const std::string& word, const std::map<std::string, std::string>& vars,
                      bool quotes = true) {
  Expander expander(lookup_in(vars), 3);
  Result<std::string> out = expander.expand(word, quotes);
  EXPECT_TRUE(out.ok()) << word << ": " << out.error().message();
  return out.ok() ? *out : "";
}

std::string expand_error(const std::string& word, const std::map<std::string, std::string>& vars) {
  Expander expander(lookup_in(vars), 7);
  Result<std::string> out = expander.expand(word);
  EXPECT_FALSE(out.ok()) << word;
  return out.ok() ? "" : out.error().message();
}

TEST(SandboxfileExpander, PlainAndBracedNames) {
  const std::map<std::string, std::string> vars = {{"A", "1"}, {"LONG_NAME", "x y"}};
  EXPECT_EQ(expand_ok("$A", vars), "1");
  EXPECT_EQ(expand_ok("${A}", vars), "1");
  EXPECT_EQ(expand_ok("pre-${LONG_NAME}-post", vars), "pre-x y-post");
  EXPECT_EQ(expand_ok("$A$A", vars), "11");
  EXPECT_EQ(expand_ok("$Ab", vars), "");  // the name is "Ab", not "A" then "b"
}

TEST(SandboxfileExpander, DefaultsAlternativesAndColon) {
  const std::map<std::string, std::string> vars = {{"SET", "v"}, {"EMPTY", ""}};
  EXPECT_EQ(expand_ok("${SET:-d}", vars), "v");
  EXPECT_EQ(expand_ok("${MISSING:-d}", vars), "d");
  EXPECT_EQ(expand_ok("${EMPTY:-d}", vars), "d");  // ":" counts empty as unset
  EXPECT_EQ(expand_ok("${EMPTY-d}", vars), "");    // without ":" empty is set
  EXPECT_EQ(expand_ok("${SET:+alt}", vars), "alt");
  EXPECT_EQ(expand_ok("${MISSING:+alt}", vars), "");
  EXPECT_EQ(expand_ok("${EMPTY+alt}", vars), "alt");
  EXPECT_EQ(expand_ok("${MISSING:-${SET}}", vars), "v");  // nested
  EXPECT_EQ(expand_ok("${MISSING:-two words}", vars), "two words");
}

TEST(SandboxfileExpander, RequiredVariable) {
  EXPECT_EQ(expand_ok("${SET:?need it}", {{"SET", "v"}}), "v");
  EXPECT_EQ(expand_error("${NAME:?give a name}", {}), "Sandboxfile line 7: NAME: give a name");
  EXPECT_EQ(expand_error("${NAME?}", {}),
            "Sandboxfile line 7: NAME is not set; pass --build-arg NAME=...");
}

TEST(SandboxfileExpander, QuotesAndEscapes) {
  const std::map<std::string, std::string> vars = {{"A", "1"}};
  EXPECT_EQ(expand_ok("'$A'", vars), "$A");
  EXPECT_EQ(expand_ok("\"$A b\"", vars), "1 b");
  EXPECT_EQ(expand_ok("\\$A", vars), "$A");
  EXPECT_EQ(expand_ok("\"a\\\"b\\n\"", vars), "a\"b\\n");  // in "...", \ escapes only " \ $
  EXPECT_EQ(expand_ok("a\\ b", vars), "a b");
  EXPECT_EQ(expand_ok("cost $", vars), "cost $");  // a $ before no name stays
  EXPECT_EQ(expand_ok("\"$A\"", vars, /*quotes=*/false), "\"1\"");
}

TEST(SandboxfileExpander, MalformedWordsSayWhatToDo) {
  EXPECT_EQ(expand_error("'open", {}),
            "Sandboxfile line 7: a ' quote is not closed; close it or write \\'");
  EXPECT_EQ(expand_error("\"open", {}),
            "Sandboxfile line 7: a \" quote is not closed; close it or write \\\"");
  EXPECT_EQ(expand_error("${A", {}), "Sandboxfile line 7: ${A has no closing }; add the }");
  EXPECT_EQ(expand_error("${A:-x", {}), "Sandboxfile line 7: a ${ has no closing }; add the }");
  EXPECT_EQ(expand_error("${}", {}),
            "Sandboxfile line 7: ${ must be followed by a variable name, as in ${NAME}; write "
            "\\$ for a literal $");
  EXPECT_EQ(expand_error("${A/x/y}", {}),
            "Sandboxfile line 7: ${A/...} is not supported; use $NAME, ${NAME}, "
            "${NAME:-default} or ${NAME:+alternative}");
}

TEST(SandboxfileExpander, ReportsOnlyUndeclaredPlainReferences) {
  Expander expander(lookup_in({{"SET", "v"}}, {"DECLARED"}), 1);
  ASSERT_TRUE(expander.expand("$SET $DECLARED ${GHOST} $GHOST ${OTHER:-d}").ok());
  EXPECT_EQ(expander.undefined(), std::set<std::string>{"GHOST"});
}

}  // namespace
}  // namespace abx::templates::sandboxfile
