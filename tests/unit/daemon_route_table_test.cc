#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "daemon/route_table.h"

namespace abx::daemon {
namespace {

std::string cell(std::string text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '`')) text.erase(0, 1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '`')) text.pop_back();
  return text;
}

// The rows of spec/daemon-api.md's "Route table", as "METHOD PATH plane credential handler".
std::multiset<std::string> spec_rows() {
  std::ifstream in(std::string(ABX_SOURCE_DIR) + "/spec/daemon-api.md");
  std::multiset<std::string> rows;
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line == "## Route table")
      in_table = true;
    else if (in_table && line.rfind("## ", 0) == 0)
      break;
    if (!in_table || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream fields(line.substr(1));
    std::string field;
    while (std::getline(fields, field, '|')) cells.push_back(cell(field));
    if (cells.size() >= 5)
      rows.insert(cells[0] + " " + cells[1] + " " + cells[2] + " " + cells[3] + " " + cells[4]);
  }
  return rows;
}

std::multiset<std::string> table_rows() {
  std::multiset<std::string> rows;
  for (const Route& route : route_table()) {
    rows.insert(std::string(route.method) + " " + std::string(route.pattern) + " " +
                std::string(plane_name(route.plane)) + " " +
                std::string(credential_name(route.credential)) + " " +
                std::string(route.handler_name));
  }
  return rows;
}

TEST(RouteTable, SpecListsExactlyTheServedRoutes) {
  const auto spec = spec_rows();
  const auto served = table_rows();
  ASSERT_FALSE(spec.empty()) << "spec/daemon-api.md has no Route table section";
  for (const auto& row : served) EXPECT_TRUE(spec.count(row)) << "not in the spec: " << row;
  for (const auto& row : spec) EXPECT_TRUE(served.count(row)) << "not served: " << row;
  // A row listed twice (in either) is a copy-paste slip, not a second endpoint.
  for (const auto& row : spec) EXPECT_EQ(spec.count(row), 1u) << "twice in the spec: " << row;
  for (const auto& row : served) EXPECT_EQ(served.count(row), 1u) << "twice in the table: " << row;
}

// Two rows for one plane, method and pattern: the second would never run.
TEST(RouteTable, NoTwoRowsServeTheSameEndpoint) {
  std::set<std::string> seen;
  for (const Route& route : route_table()) {
    const std::string key = std::string(plane_name(route.plane)) + " " + std::string(route.method) +
                            " " + std::string(route.pattern);
    EXPECT_TRUE(seen.insert(key).second) << "two rows for " << key;
  }
}

TEST(RouteTable, MatchesPatternsAndCapturesParams) {
  auto match = match_route(Plane::control, "POST", "/sandboxes/abc123/timeout");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->handler_name, "sandbox_set_timeout");
  EXPECT_EQ(match.params.at("id"), "abc123");
  match = match_route(Plane::interpreter, "DELETE", "/contexts/ctx1");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.params.at("context"), "ctx1");
}

TEST(RouteTable, FixedSegmentsWinOverParameters) {
  auto match = match_route(Plane::control, "GET", "/sandboxes/metrics");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->handler_name, "sandboxes_metrics");
}

TEST(RouteTable, WrongMethodListsTheAllowedOnes) {
  auto match = match_route(Plane::control, "PUT", "/sandboxes/abc");
  EXPECT_EQ(match.route, nullptr);
  EXPECT_EQ(match.allowed, "GET, DELETE");
}

TEST(RouteTable, UnknownAndMalformedPathsMatchNothing) {
  for (const char* path :
       {"/nope", "/sandboxes/", "/sandboxes//timeout", "/contexts", "", "/sandboxes/a/b/c/d"}) {
    auto match = match_route(Plane::control, "GET", path);
    EXPECT_EQ(match.route, nullptr) << path;
    EXPECT_TRUE(match.allowed.empty()) << path;
  }
  EXPECT_EQ(match_route(Plane::interpreter, "DELETE", "/contexts/").route, nullptr);
  EXPECT_EQ(match_route(Plane::control, "GET", "health").route, nullptr);  // no leading slash
  EXPECT_EQ(match_route(Plane::interpreter, "DELETE", "/contexts").route, nullptr);
}

TEST(RouteTable, EveryOtherPortIsProxied) {
  auto match = match_route(Plane::proxy, "PATCH", "/any/path?x");
  ASSERT_NE(match.route, nullptr);
  EXPECT_EQ(match.route->handler_name, "proxy_port");
}

}  // namespace
}  // namespace abx::daemon
