// What a rootless daemon's user-mode network (slirp4netns) can and cannot keep.
#include <gtest/gtest.h>

#include "runtime/user_net.h"

namespace abx::runtime {
namespace {

egress::Policy deny_all() {
  egress::Policy policy;
  policy.deny_cidrs.push_back(egress::kAllTraffic);
  return policy;
}

TEST(UserNet, AllOfTheInternetOrNone) {
  EXPECT_EQ(UserNet::wants_network(egress::Policy{}).value(), true);
  EXPECT_EQ(UserNet::wants_network(deny_all()).value(), false);
  egress::Policy with_servers;
  with_servers.dns_servers = std::vector<uint32_t>{0x08080808};  // no list: nothing to enforce
  EXPECT_EQ(UserNet::wants_network(with_servers).value(), true);
}

TEST(UserNet, ListsRulesAndProxiesAreRefusedNotIgnored) {
  std::vector<egress::Policy> refused(5, egress::Policy{});
  refused[0] = deny_all();
  refused[0].allow_cidrs.push_back(*egress::parse_cidr("1.1.1.1"));
  refused[1].deny_cidrs.push_back(*egress::parse_cidr("1.1.1.1"));
  refused[2].deny_hosts.push_back("example.com");
  refused[3].rules.push_back({"example.com", {{"Authorization", "x"}}});
  refused[4].egress_proxy = egress::SocksProxy{"proxy.example.com", 1080, "", "", false, "", ""};
  for (const auto& policy : refused) {
    auto wanted = UserNet::wants_network(policy);
    ASSERT_FALSE(wanted);
    EXPECT_EQ(wanted.error().errnum, EOPNOTSUPP);
    EXPECT_NE(wanted.error().message().find("run the daemon as root"), std::string::npos);
  }
}

}  // namespace
}  // namespace abx::runtime
