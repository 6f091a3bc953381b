// The MCP server's pure parts: output clipping, binary detection, argument
// checks against the tool schemas, version negotiation, protocol errors.
#include <gtest/gtest.h>

#include "mcp/arguments.h"
#include "mcp/session.h"
#include "mcp/text_limits.h"
#include "mcp/tool_schemas.h"

namespace abx::mcp {
namespace {

const json& schema(const std::string& name) {
  for (const auto& tool : tool_definitions()) {
    if (tool["name"] == name) return tool["inputSchema"];
  }
  throw std::runtime_error("no tool " + name);
}

TEST(McpClip, KeepsShortTextAndCutsLongTextKeepingHeadAndTail) {
  EXPECT_EQ(clip("hello", 10), "hello");
  const std::string text = std::string(50, 'a') + std::string(50, 'b');
  const std::string cut = clip(text, 20);
  EXPECT_EQ(cut.substr(0, 10), std::string(10, 'a'));
  EXPECT_EQ(cut.substr(cut.size() - 10), std::string(10, 'b'));
  EXPECT_NE(cut.find("80 bytes dropped"), std::string::npos);
}

TEST(McpClip, NeverSplitsAUtf8Character) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "\xc3\xa9";  // é
  EXPECT_FALSE(looks_binary(clip(text, 21)));
}

TEST(McpShorten, KeepsTheHeadOfALongLineAndSaysHowMuchWentAtACharacterBound) {
  EXPECT_EQ(shorten("hello", 5), "hello");
  EXPECT_EQ(shorten("hello world", 5), "hello[... 6 more bytes]");
  std::string text;
  for (int i = 0; i < 10; ++i) text += "\xc3\xa9";  // é
  const std::string cut = shorten(text, 5);
  EXPECT_EQ(cut, "\xc3\xa9\xc3\xa9[... 16 more bytes]");
  EXPECT_FALSE(looks_binary(cut));
}

TEST(McpBinary, NulAndInvalidUtf8AreBinary) {
  EXPECT_FALSE(looks_binary("plain text\n\xe4\xb8\xad"));
  EXPECT_TRUE(looks_binary(std::string("a\0b", 3)));
  EXPECT_TRUE(looks_binary("\xff\xfe"));
  EXPECT_TRUE(looks_binary("\xe4\xb8"));  // truncated sequence
}

TEST(McpArguments, RequiredTypesUnknownAndEnum) {
  EXPECT_FALSE(check_arguments(schema("run_command"), {{"command", "ls"}}));
  EXPECT_EQ(*check_arguments(schema("run_command"), json::object()),
            "missing required argument command");
  EXPECT_EQ(*check_arguments(schema("run_command"), {{"command", 1}}), "command must be a string");
  EXPECT_NE(check_arguments(schema("run_command"), {{"command", "ls"}, {"x", 1}})
                ->find("unknown argument x"),
            std::string::npos);
  EXPECT_TRUE(check_arguments(schema("run_code"), {{"code", "1"}, {"language", "cobol"}}));
  EXPECT_FALSE(check_arguments(schema("run_code"), {{"code", "1"}, {"language", "javascript"}}));
  EXPECT_FALSE(
      check_arguments(schema("sandbox_events"), {{"sandbox_id", "i1"}, {"type", "files"}}));
  EXPECT_EQ(*check_arguments(schema("sandbox_events"), {{"sandbox_id", "i1"}, {"since", -1}}),
            "since must be at least 0");
  EXPECT_TRUE(check_arguments(schema("sandbox_create"), {{"timeout", 0}}));
  EXPECT_TRUE(check_arguments(schema("sandbox_create"), {{"envs", {{"A", 1}}}}));
}

TEST(McpVersions, ClientVersionWhenKnownElseOurLatest) {
  EXPECT_EQ(negotiate_protocol_version("2025-03-26"), "2025-03-26");
  EXPECT_EQ(negotiate_protocol_version("2025-06-18"), "2025-06-18");
  EXPECT_EQ(negotiate_protocol_version("1999-01-01"), supported_protocol_versions().front());
}

TEST(McpSession, AnswersProtocolRequestsWithoutADaemon) {
  Session session({{{"127.0.0.1", "9", ""}, "key"}, {}, ""});
  std::vector<json> replies;
  const Reply collect = [&](std::optional<json> reply) { replies.push_back(*reply); };
  session.dispatch({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}}, collect);
  session.dispatch({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}}, collect);
  session.dispatch({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "nope"}}, collect);
  session.dispatch(
      {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/call"}, {"params", {{"name", "nope"}}}},
      collect);
  session.dispatch({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, collect);
  session.dispatch({{"id", 5}}, collect);
  ASSERT_EQ(replies.size(), 5u);
  EXPECT_EQ(replies[0]["result"], json::object());
  EXPECT_EQ(replies[1]["result"]["tools"].size(), 14u);
  EXPECT_EQ(replies[2]["error"]["code"], kMethodNotFound);
  EXPECT_EQ(replies[3]["error"]["code"], kInvalidParams);
  EXPECT_EQ(replies[4]["error"]["code"], kInvalidRequest);
}

// Members of the wrong type read as absent: no throw (which ended `abx mcp
// serve` and was a 500 on the daemon's /mcp; found by tests/security/test_request_fuzz.py).
TEST(McpSession, WrongTypedMembersAreRefusedNotThrown) {
  Session session({{{"127.0.0.1", "9", ""}, "key"}, {}, ""});
  std::vector<json> replies;
  const Reply collect = [&](std::optional<json> reply) { replies.push_back(*reply); };
  session.dispatch({{"jsonrpc", 1e308}, {"id", 1}, {"method", "ping"}}, collect);
  session.dispatch({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "initialize"}, {"params", 7}},
                   collect);
  session.dispatch({{"jsonrpc", "2.0"},
                    {"id", 3},
                    {"method", "initialize"},
                    {"params", {{"protocolVersion", json::array()}}}},
                   collect);
  session.dispatch(
      {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "tools/call"}, {"params", {{"name", 5}}}},
      collect);
  session.dispatch({{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", "x"}},
                   collect);
  ASSERT_EQ(replies.size(), 4u);
  EXPECT_EQ(replies[0]["error"]["code"], kInvalidRequest);
  EXPECT_EQ(replies[1]["result"]["protocolVersion"], supported_protocol_versions().front());
  EXPECT_EQ(replies[2]["result"]["protocolVersion"], supported_protocol_versions().front());
  EXPECT_EQ(replies[3]["error"]["code"], kInvalidParams);
}

}  // namespace
}  // namespace abx::mcp
