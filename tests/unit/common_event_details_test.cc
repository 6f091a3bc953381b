// How `abx events` and the MCP tool print an event's fields: one line each,
// whatever a sandbox put in them.
#include <gtest/gtest.h>

#include "common/e2b_api.h"

namespace abx::e2b {
namespace {

TEST(EventDetails, KeepsEachEventOnOneLineAndSandboxTextInert) {
  const json event = {{"seq", 3},
                      {"at", 1},
                      {"type", "commands"},
                      {"event", "ended"},
                      {"exitCode", 0},
                      {"status", "exited"},
                      {"outputHead", "a\nb"},
                      {"path", "/tmp/x"},
                      {"tag", "\x1b]0;owned\x07"}};
  const std::string shown = event_details(event);
  EXPECT_EQ(shown.find('\n'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\x1b'), std::string::npos) << shown;
  EXPECT_NE(shown.find(R"(outputHead="a\nb")"), std::string::npos) << shown;
  EXPECT_NE(shown.find("path=/tmp/x"), std::string::npos) << "plain text stays as it is";
  EXPECT_NE(shown.find("exitCode=0"), std::string::npos);
  EXPECT_EQ(shown.find("seq="), std::string::npos);
}

}  // namespace
}  // namespace abx::e2b
