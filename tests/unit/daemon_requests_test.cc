#include <gtest/gtest.h>

#include "daemon/control_requests.h"
#include "daemon/plane.h"
#include "daemon/url.h"

namespace abx::daemon {
namespace {

TEST(DaemonUrl, QueryDecoding) {
  const auto q = url::parse_query("path=%2Fhome%2Fuser%2Fa+b.txt&username=user&flag");
  EXPECT_EQ(q.at("path"), "/home/user/a b.txt");
  EXPECT_EQ(q.at("username"), "user");
  EXPECT_EQ(q.at("flag"), "");
  std::string path, query;
  url::split_target("/sandboxes/abc%20d?x=1", &path, &query);
  EXPECT_EQ(path, "/sandboxes/abc d");
  EXPECT_EQ(query, "x=1");
}

TEST(DaemonRequests, ListQueryMetadataAndState) {
  // The SDK url-encodes "k=v&k2=v 2" into one metadata parameter.
  const auto all = url::parse_query("metadata=k%3Dv%26k2%3Dv%25202&state=running,paused&limit=5");
  auto query = parse_list_query(all);
  ASSERT_TRUE(query);
  EXPECT_EQ(query->metadata.at("k"), "v");
  EXPECT_EQ(query->metadata.at("k2"), "v 2");
  EXPECT_EQ(query->states, (std::vector<std::string>{"running", "paused"}));
  EXPECT_EQ(query->limit, 5u);
  EXPECT_EQ(parse_list_query({{"limit", "101"}}).error().message(),
            "limit: must be an integer from 1 to 100");
  EXPECT_EQ(parse_list_query({{"state", "gone"}}).error().message(),
            "state: must be running or paused (comma-joined)");
}

TEST(DaemonRequests, CreateDefaultsAndExtensions) {
  auto req = parse_create_sandbox(
      R"({"templateID":"base","metadata":{"a":"b"},"envVars":{"X":"1"},"secure":true,"memoryMB":256})",
      4);
  ASSERT_TRUE(req) << req.error().message();
  EXPECT_EQ(req->template_name, "base");
  EXPECT_EQ(req->timeout_sec, 300);
  EXPECT_EQ(req->metadata.at("a"), "b");
  EXPECT_EQ(req->env_vars.at("X"), "1");
  EXPECT_TRUE(req->secure);
  EXPECT_EQ(req->memory_mb.value(), 256u);
  EXPECT_FALSE(req->cpu_count.has_value());
  EXPECT_TRUE(req->wait_for_build) << "E2B clients wait for a first build";
  auto cli = parse_create_sandbox(R"({"templateID":"base","waitForBuild":false})", 4);
  ASSERT_TRUE(cli) << cli.error().message();
  EXPECT_FALSE(cli->wait_for_build);
}

TEST(DaemonRequests, CreateErrorsNameTheField) {
  auto message = [](const std::string& body) {
    return parse_create_sandbox(body, 2).error().message();
  };
  EXPECT_EQ(message("nope"), "body: must be a JSON object");
  EXPECT_EQ(message("{}"), "templateID: required string (e.g. \"base\")");
  EXPECT_EQ(message(R"({"templateID":"base","timeout":0})"),
            "timeout: must be an integer number of seconds from 1 to 86400");
  EXPECT_EQ(message(R"({"templateID":"base","timeout":"5"})"),
            "timeout: must be an integer number of seconds from 1 to 86400");
  EXPECT_EQ(message(R"({"templateID":"base","metadata":{"a":1}})"), "metadata.a: must be a string");
  EXPECT_EQ(message(R"({"templateID":"base","envVars":[]})"),
            "envVars: must be an object of strings");
  EXPECT_EQ(message(R"({"templateID":"base","cpuCount":3})"),
            "cpuCount: must be an integer from 1 to 2");
  EXPECT_EQ(message(R"({"templateID":"base","diskSizeMB":1})"),
            "diskSizeMB: must be an integer from 16 to 65536");
}

TEST(DaemonRequests, TimeoutBody) {
  EXPECT_EQ(parse_timeout_body(R"({"timeout":30})").value(), 30);
  EXPECT_EQ(parse_timeout_body(R"({"timeout":0})").value(), 0);  // E2B: ends the sandbox now
  EXPECT_EQ(parse_timeout_body("{}").error().message(), "timeout: required integer (seconds)");
  EXPECT_FALSE(parse_timeout_body(R"({"timeout":-1})"));
  EXPECT_FALSE(parse_timeout_body(R"({"timeout":1.5})"));
  EXPECT_FALSE(parse_timeout_body(R"({"timeout":86401})"));
}

TEST(DaemonRequests, ListQueryOrderTimeAndTemplate) {
  auto newest = parse_list_query({});
  ASSERT_TRUE(newest);
  EXPECT_TRUE(newest->newest_first);  // E2B lists newest first
  auto query = parse_list_query({{"order", "asc"},
                                 {"startedAfter", "2026-12-01T10:00:00.123456+01:00"},
                                 {"startedBefore", "2026-12-01T09:00:01Z"},
                                 {"template", "base"}});
  ASSERT_TRUE(query) << query.error().message();
  EXPECT_FALSE(query->newest_first);
  EXPECT_EQ(query->started_after_ms, int64_t{1796115600123});
  EXPECT_EQ(query->started_before_ms, int64_t{1796115601000});
  EXPECT_EQ(query->template_name, "base");
  EXPECT_EQ(parse_list_query({{"order", "up"}}).error().message(), "order: must be asc or desc");
  for (const char* bad : {"yesterday", "2026-12-01", "2026-12-01T10:00:00", "2026-12-01T10:00:00.Z",
                          "2026-12-01T10:00:00+1:00", "2026-12-01T10:00:00Zjunk"}) {
    EXPECT_FALSE(parse_list_query({{"startedAfter", bad}})) << bad;
  }
}

TEST(DaemonPlane, HeadersThenHost) {
  http::Request req;
  EXPECT_FALSE(sandbox_target(req));
  req.headers["host"] = "127.0.0.1:49980";
  EXPECT_FALSE(sandbox_target(req));
  req.headers["host"] = "49999-iabc123.localhost:3000";
  auto target = sandbox_target(req);
  ASSERT_TRUE(target);
  EXPECT_EQ(target->sandbox_id, "iabc123");
  EXPECT_EQ(target->port, 49999);
  req.headers["e2b-sandbox-id"] = "ixyz";
  target = sandbox_target(req);
  EXPECT_EQ(target->sandbox_id, "ixyz");
  EXPECT_EQ(target->port, kEnvdPort);  // default when the port header is absent
  req.headers["e2b-sandbox-port"] = "8080";
  EXPECT_EQ(sandbox_target(req)->port, 8080);
}

}  // namespace
}  // namespace abx::daemon
