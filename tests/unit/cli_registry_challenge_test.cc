// The registry's WWW-Authenticate challenge that starts the OCI bearer-token
// flow (abx template search on a token-auth registry).
#include <gtest/gtest.h>

#include "cli/registry_auth.h"

namespace abx::cli::registry_auth {
namespace {

TEST(BearerChallenge, TakesRealmServiceAndAQuotedScopeWithCommas) {
  auto challenge = parse_bearer_challenge(
      R"(Bearer realm="http://auth:5001/token",service="reg",scope="repository:a/b:pull,push")");
  ASSERT_TRUE(challenge.has_value());
  EXPECT_EQ(challenge->realm, "http://auth:5001/token");
  EXPECT_EQ(challenge->service, "reg");
  EXPECT_EQ(challenge->scope, "repository:a/b:pull,push");
}

TEST(BearerChallenge, AnyCaseUnquotedValuesAndEscapes) {
  auto challenge = parse_bearer_challenge(R"(  bearer Realm=http://a/t, service="x\"y")");
  ASSERT_TRUE(challenge.has_value());
  EXPECT_EQ(challenge->realm, "http://a/t");
  EXPECT_EQ(challenge->service, "x\"y");
  EXPECT_EQ(challenge->scope, "");
}

TEST(BearerChallenge, OtherSchemesAndNoRealmAreNotOne) {
  for (const char* header :
       {"", "Basic realm=\"abx-test\"", "Bearer", "Bearer service=\"x\"", "Bearerrealm=\"x\""})
    EXPECT_FALSE(parse_bearer_challenge(header).has_value()) << header;
}

TEST(BearerChallenge, AnUnterminatedQuoteEndsTheValue) {
  auto challenge = parse_bearer_challenge(R"(Bearer realm="http://a/t)");
  ASSERT_TRUE(challenge.has_value());
  EXPECT_EQ(challenge->realm, "http://a/t");
}

}  // namespace
}  // namespace abx::cli::registry_auth
