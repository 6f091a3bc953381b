// Inputs the fuzz targets (fuzz/) found, kept as tests of the parser that
// mishandled them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "templates/sandboxfile.h"

namespace abx::templates::sandboxfile {
namespace {

using namespace std::string_literals;

std::string parse_error(const std::string& text,
                        const std::map<std::string, std::string>& args = {},
                        const BaseImage& base = {}) {
  Result<Sandboxfile> result = parse(text, args, base);
  EXPECT_FALSE(result.ok()) << text;
  return result.ok() ? "" : result.error().message();
}

// fuzz_sandboxfile: "..\0/x" passed the build-context check (its first part is "..\0", not
// ".."), and every syscall would then have read "..": the context's parent.
TEST(FuzzRegressions, SandboxfileWithNulIsRefusedWithItsLine) {
  EXPECT_EQ(parse_error("FROM base\nCOPY ..\0/x /dst\n"s),
            "Sandboxfile line 2: contains a NUL byte; a Sandboxfile is text (saved as UTF-16?)");
  // What the fuzzer found first: a WORKDIR with a NUL after substitution.
  EXPECT_NE(parse_error("FROM base\nRUN echo\nWORKDIR $A=/\x13\0srv\n"s).find("line 3"),
            std::string::npos);
}

TEST(FuzzRegressions, NulFromJsonBuildArgsOrImageEnvIsRefused) {
  const std::string nul_value = "a value here contains a NUL byte";
  EXPECT_NE(parse_error(R"(FROM base
COPY ["..\u0000/x", "/dst"]
)")
                .find("Sandboxfile line 2: " + nul_value),
            std::string::npos);
  EXPECT_NE(parse_error("FROM base\nARG SRC\nCOPY $SRC /dst\n", {{"SRC", "..\0/x"s}})
                .find("Sandboxfile line 3: " + nul_value),
            std::string::npos);
  BaseImage base;
  base.env["DIR"] = "/srv\0/../.."s;
  EXPECT_NE(parse_error("FROM base\nWORKDIR $DIR\n", {}, base).find("line 2: " + nul_value),
            std::string::npos);
  base = {};
  base.workdir = "/srv\0x"s;
  EXPECT_EQ(parse_error("FROM base\nWORKDIR rel\n", {}, base),
            "Sandboxfile: the FROM image's WorkingDir contains a NUL byte");
}

}  // namespace
}  // namespace abx::templates::sandboxfile
