// The egress policy model: E2B's allowOut/denyOut precedence, host patterns, rules.
#include <gtest/gtest.h>

#include "egress/policy.h"

namespace abx::egress {
namespace {

uint32_t ip(const char* text) { return parse_cidr(text)->network; }

TEST(EgressPolicy, ParsesAddressesAndCidrs) {
  EXPECT_EQ(parse_cidr("10.1.2.3"), (Cidr{0x0a010203, 32}));
  EXPECT_EQ(parse_cidr("10.1.0.0/16"), (Cidr{0x0a010000, 16}));
  EXPECT_EQ(parse_cidr("0.0.0.0/0"), kAllTraffic);
  for (const char* bad : {"", "10.1.2.3/", "10.1.2.3/33", "10.1.2.3/16", "10.1.2", "x/8",
                          "10.0.0.0/8x", "::1", "10.0.0.0/-1"})
    EXPECT_FALSE(parse_cidr(bad).has_value()) << bad;
  EXPECT_EQ(parse_cidr("10.1.0.0/16")->text(), "10.1.0.0/16");
  EXPECT_TRUE(parse_cidr("10.1.0.0/16")->contains(ip("10.1.255.1")));
  EXPECT_FALSE(parse_cidr("10.1.0.0/16")->contains(ip("10.2.0.1")));
  EXPECT_TRUE(kAllTraffic.contains(ip("255.255.255.255")));
}

TEST(EgressPolicy, NeverDialsNonPublicRangesUnlessOpened) {
  const auto closed = never_dialed({}, HostAddresses::unless_opened);
  for (const char* denied : {"0.1.2.3", "10.0.0.1", "100.64.0.1", "127.0.0.1", "169.254.169.254",
                             "172.16.0.1", "192.0.0.8", "192.168.1.1", "198.18.0.1", "198.19.255.1",
                             "224.0.0.1", "240.0.0.1", "255.255.255.255"})
    EXPECT_TRUE(closed(ip(denied))) << denied;
  for (const char* open : {"1.1.1.1", "8.8.8.8", "192.0.2.1", "198.20.0.1", "203.0.113.10"})
    EXPECT_FALSE(closed(ip(open))) << open;
  const auto opened = never_dialed({*parse_cidr("198.18.0.0/24")}, HostAddresses::unless_opened);
  EXPECT_FALSE(opened(ip("198.18.0.5")));
  EXPECT_TRUE(opened(ip("198.18.1.5")));
}

TEST(EgressPolicy, MatchesHostsExactlyOrBySuffixIgnoringCasePortAndTrailingDot) {
  EXPECT_TRUE(host_matches("example.com", "Example.COM."));
  EXPECT_TRUE(host_matches("example.com", "example.com:443"));
  EXPECT_FALSE(host_matches("example.com", "a.example.com"));
  EXPECT_TRUE(host_matches("*.example.com", "a.example.com"));
  EXPECT_TRUE(host_matches("*.example.com", "a.b.example.com"));
  EXPECT_FALSE(host_matches("*.example.com", "example.com"));
  EXPECT_FALSE(host_matches("*.example.com", "badexample.com"));
  EXPECT_FALSE(host_matches("example.com", ""));
  EXPECT_FALSE(host_matches("", "example.com"));
}

TEST(EgressPolicy, AllowWinsOverDenyAndNoAllowMeansAllowedUnlessDenied) {
  Policy open;
  EXPECT_TRUE(allows(open, ip("1.2.3.4"), ""));
  Policy p;
  p.deny_cidrs = {kAllTraffic};
  p.allow_cidrs = {*parse_cidr("1.2.3.0/24")};
  p.allow_hosts = {"*.allowed.com"};
  EXPECT_TRUE(allows(p, ip("1.2.3.4"), ""));
  EXPECT_FALSE(allows(p, ip("5.6.7.8"), ""));
  EXPECT_TRUE(allows(p, ip("5.6.7.8"), "api.allowed.com"));
  EXPECT_FALSE(allows(p, ip("5.6.7.8"), "allowed.com"));
  Policy deny;
  deny.deny_hosts = {"bad.com"};
  deny.deny_cidrs = {*parse_cidr("9.9.9.9")};
  EXPECT_FALSE(allows(deny, ip("1.1.1.1"), "BAD.com"));
  EXPECT_TRUE(allows(deny, ip("1.1.1.1"), "good.com"));
  EXPECT_FALSE(allows(deny, ip("9.9.9.9"), "good.com"));
  deny.allow_hosts = {"bad.com"};  // allow wins
  EXPECT_TRUE(allows(deny, ip("1.1.1.1"), "bad.com"));
}

TEST(EgressPolicy, ResolvesNamesAsTheProxyWouldAllowThem) {
  Policy p;
  p.deny_cidrs = {kAllTraffic};
  p.allow_hosts = {"*.ok.com"};
  EXPECT_TRUE(resolves(p, "a.ok.com"));
  EXPECT_FALSE(resolves(p, "other.com"));
  Policy d;
  d.deny_hosts = {"bad.com"};
  EXPECT_FALSE(resolves(d, "bad.com"));
  EXPECT_TRUE(resolves(d, "good.com"));
}

TEST(EgressPolicy, PicksExactRulesBeforeWildcards) {
  Policy p;
  p.rules = {HostRule{"*.api.com", {{"A", "wild"}}}, HostRule{"x.api.com", {{"A", "exact"}}}};
  ASSERT_NE(rule_for(p, "X.api.com:443"), nullptr);
  EXPECT_EQ(rule_for(p, "X.api.com:443")->headers[0].value, "exact");
  EXPECT_EQ(rule_for(p, "y.api.com")->headers[0].value, "wild");
  EXPECT_EQ(rule_for(p, "api.com"), nullptr);
  EXPECT_EQ(rule_for(p, ""), nullptr);
}

TEST(EgressPolicy, NeedsTheProxyOnlyForNamesRulesOrSocks) {
  Policy p;
  p.deny_cidrs = {kAllTraffic};
  EXPECT_FALSE(p.needs_proxy());
  EXPECT_TRUE(p.denies_all());
  p.allow_hosts = {"a.com"};
  EXPECT_TRUE(p.needs_proxy());
  Policy s;
  s.egress_proxy = SocksProxy{"proxy", 1080};
  EXPECT_TRUE(s.needs_proxy());
}

TEST(EgressPolicy, NamesTheRuleThatDecided) {
  Policy p;
  p.allow_cidrs = {*parse_cidr("1.2.3.0/24")};
  p.allow_hosts = {"*.ok.test"};
  p.deny_cidrs = {kAllTraffic};
  p.deny_hosts = {"bad.test"};
  EXPECT_EQ(deciding_rule(p, ip("1.2.3.4"), "bad.test"), "allowOut 1.2.3.0/24");
  EXPECT_EQ(deciding_rule(p, ip("9.9.9.9"), "a.ok.test"), "allowOut *.ok.test");
  EXPECT_EQ(deciding_rule(p, ip("9.9.9.9"), ""), "denyOut 0.0.0.0/0");
  EXPECT_EQ(deciding_rule(p, 0, "a.ok.test"), "allowOut *.ok.test");  // DNS
  EXPECT_EQ(deciding_rule(p, 0, "elsewhere.test"), "denyOut 0.0.0.0/0");
  p.deny_cidrs.clear();
  EXPECT_EQ(deciding_rule(p, 0, "bad.test"), "denyOut bad.test");
  EXPECT_EQ(deciding_rule(p, ip("9.9.9.9"), "elsewhere.test"), "no rule");
}

}  // namespace
}  // namespace abx::egress
