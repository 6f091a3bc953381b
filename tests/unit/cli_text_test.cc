#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "cli/process_events.h"
#include "cli/text.h"
#include "common/base64.h"

namespace abx::cli {
namespace {

TEST(ShellQuote, LeavesPlainWordsAlone) {
  EXPECT_EQ(shell_quote("python"), "python");
  EXPECT_EQ(shell_quote("/home/user/analyze.py"), "/home/user/analyze.py");
  EXPECT_EQ(shell_quote("a=b"), "a=b");
}

TEST(ShellQuote, QuotesSpacesQuotesAndEmpty) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("exit 3"), "'exit 3'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("a;b"), "'a;b'");
}

TEST(ShellQuote, JoinsWords) { EXPECT_EQ(shell_join({"sh", "-c", "exit 3"}), "sh -c 'exit 3'"); }

TEST(KeyValue, Parses) {
  auto kv = parse_key_value("A=b=c", "--env");
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->first, "A");
  EXPECT_EQ(kv->second, "b=c");
  auto empty = parse_key_value("A=", "--env");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->second, "");
}

TEST(KeyValue, RejectsMissingKeyOrEquals) {
  auto no_eq = parse_key_value("A", "--env");
  ASSERT_FALSE(no_eq.ok());
  EXPECT_NE(no_eq.error().message().find("--env"), std::string::npos);
  EXPECT_NE(no_eq.error().message().find("KEY=VALUE"), std::string::npos);
  EXPECT_FALSE(parse_key_value("=x", "--metadata").ok());
  EXPECT_FALSE(parse_key_values({"A=1", "B"}, "--env").ok());
  auto both = parse_key_values({"A=1", "B=2", "A=3"}, "--env");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->at("A"), "3");
  EXPECT_EQ(both->size(), 2u);
}

TEST(Time, FormatsLocalTime) {
  const char* old = std::getenv("TZ");
  const std::string saved = old ? old : "";
  setenv("TZ", "UTC", 1);
  tzset();
  EXPECT_EQ(rfc3339_to_local("2026-11-29T15:04:05Z"), "2026-11-29 15:04:05");
  setenv("TZ", "Asia/Shanghai", 1);
  tzset();
  EXPECT_EQ(rfc3339_to_local("2026-11-29T15:04:05Z"), "2026-11-29 23:04:05");
  EXPECT_EQ(rfc3339_to_local("not a time"), "not a time");
  if (old) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
}

TEST(Progress, FormatsBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3u << 20), "3.0 MiB");
}

TEST(Table, AlignsColumns) {
  EXPECT_EQ(format_table({{"ID", "STATE"}, {"iabc", "running"}}),
            "ID    STATE\n"
            "iabc  running\n");
}

TEST(Base64, RoundTrips) {
  EXPECT_EQ(base64::encode(""), "");
  EXPECT_EQ(base64::encode("hi\n"), "aGkK");
  EXPECT_EQ(base64::encode("user:"), "dXNlcjo=");
  EXPECT_EQ(base64::encode("ab"), "YWI=");
  EXPECT_EQ(base64::decode("aGkK"), "hi\n");
  EXPECT_EQ(base64::decode("dXNlcjo="), "user:");
  EXPECT_EQ(base64::decode("YWI"), "ab");
  EXPECT_FALSE(base64::decode("a*b").has_value());
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(base64::decode(base64::encode(all)), all);
  for (size_t n = 0; n < 12; ++n) {  // every tail length, padded and not
    const std::string bytes = all.substr(250 - n, n);
    EXPECT_EQ(base64::decode(base64::encode(bytes)), bytes) << n;
    EXPECT_EQ(base64::decode(base64::encode(bytes, false)), bytes) << n;
  }
  EXPECT_FALSE(base64::decode("YWJjZ").has_value());     // a stray fifth character
  EXPECT_FALSE(base64::decode("YW*jZGVm").has_value());  // a bad one in a whole group
  EXPECT_EQ(base64::decode("-_-_"), base64::decode("+/+/"));
}

TEST(DataEvent, WrittenAndMatchedWithoutAJsonTree) {
  const std::string event = e2b::data_event("stderr", "oops\n");
  EXPECT_EQ(event, R"({"event":{"data":{"stderr":"b29wcwo="}}})");
  EXPECT_EQ(nlohmann::json::parse(event)["event"]["data"]["stderr"], "b29wcwo=");
  auto matched = e2b::match_data_event(event);
  ASSERT_TRUE(matched.has_value());
  EXPECT_EQ(matched->stream, "stderr");
  EXPECT_EQ(base64::decode(matched->base64), "oops\n");
  // Other shapes go to the JSON parser.
  EXPECT_FALSE(e2b::match_data_event(R"({"event": {"data":{"stdout":"YQ=="}}})"));
  EXPECT_FALSE(e2b::match_data_event(R"({"event":{"data":{"stdin":"YQ=="}}})"));
  EXPECT_FALSE(e2b::match_data_event(R"({"event":{"data":{"stdout":"Y\"Q"}}})"));
  EXPECT_FALSE(e2b::match_data_event(R"({"event":{"data":{"stdout":"YQ==","x":"y"}}})"));
  EXPECT_FALSE(e2b::match_data_event(R"({"event":{"end":{}}})"));
}

TEST(ExitCode, FromEndEvent) {
  using nlohmann::json;
  EXPECT_EQ(exit_code_from_end(json{{"exited", true}, {"status", "exit status 0"}}), 0);
  EXPECT_EQ(exit_code_from_end(json{{"exitCode", 3}, {"exited", true}}), 3);
  EXPECT_EQ(exit_code_from_end(json{{"exitCode", 3}}), 3);
  EXPECT_EQ(exit_code_from_end(json{{"exitCode", -1}, {"status", "signal: killed"}}), 137);
  EXPECT_EQ(exit_code_from_end(json{{"status", "signal: terminated"}}), 143);
  EXPECT_EQ(exit_code_from_end(json{{"status", "signal: segmentation fault (core dumped)"}}), 139);
  EXPECT_EQ(exit_code_from_end(json{{"exitCode", -9}, {"exited", false}}), 137);
  EXPECT_EQ(signal_from_status("signal: 15"), 15);
  EXPECT_FALSE(signal_from_status("exit status 1").has_value());
}

}  // namespace
}  // namespace abx::cli

namespace abx::cli {
namespace {

TEST(FormatTable, CellsReachTheTerminalWithoutEscapes) {
  // A teammate's metadata value that would retitle the window and recolour the rest.
  const std::string table = format_table({{"KEY", "VALUE"}, {"k", "\x1b]0;PWNED\x07\x1b[2J"}});
  EXPECT_EQ(table.find('\x1b'), std::string::npos) << table;
  EXPECT_EQ(table.find('\x07'), std::string::npos) << table;
}

}  // namespace
}  // namespace abx::cli

namespace abx::cli {
namespace {

TEST(CliSizes, DockerStyleSizesInMib) {
  EXPECT_EQ(parse_mib("512m", "--memory").value(), 512u);
  EXPECT_EQ(parse_mib("2g", "--memory").value(), 2048u);
  EXPECT_EQ(parse_mib("1.5G", "--memory").value(), 1536u);
  EXPECT_EQ(parse_mib("2048k", "--memory").value(), 2u);
  EXPECT_EQ(parse_mib("1024", "--memory").value(), 1024u);
  EXPECT_EQ(parse_mib("1GiB", "--disk").value(), 1024u);
  EXPECT_EQ(parse_mib("1gb", "--disk").value(), 1024u);
  for (const char* bad : {"", "lots", "0.5m", "-1g", "2x", "1.3m", "99999t"})
    EXPECT_FALSE(parse_mib(bad, "--memory")) << bad;
}

}  // namespace
}  // namespace abx::cli
