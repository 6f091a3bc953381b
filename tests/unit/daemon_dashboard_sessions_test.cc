#include <gtest/gtest.h>

#include "daemon/cookies.h"
#include "daemon/dashboard_sessions.h"
#include "dashboard/assets.h"

namespace abx::daemon {
namespace {

TEST(DashboardCookies, FindsTheSessionCookieAmongOthersAndRefusesDoubtfulHeaders) {
  EXPECT_EQ(cookies::value_of("a=1; abx_session=abc; b=2", "abx_session"), "abc");
  EXPECT_EQ(cookies::value_of("abx_session = abc ", "abx_session"), "abc");
  EXPECT_EQ(cookies::value_of("xabx_session=abc", "abx_session"), "");
  EXPECT_EQ(cookies::value_of("abx_session", "abx_session"), "");
  EXPECT_EQ(cookies::value_of("", "abx_session"), "");
  EXPECT_EQ(cookies::value_of(";;;=;", "abx_session"), "");
  // Two values: which one the browser meant is unknown, so neither counts.
  EXPECT_EQ(cookies::value_of("abx_session=a; abx_session=b", "abx_session"), "");
}

TEST(DashboardCookies, TheSessionCookieIsHttpOnlyAndSameSiteStrict) {
  const std::string set = cookies::session_set_cookie("abc", 60);
  EXPECT_NE(set.find("abx_session=abc;"), std::string::npos);
  EXPECT_NE(set.find("HttpOnly"), std::string::npos);
  EXPECT_NE(set.find("SameSite=Strict"), std::string::npos);
  EXPECT_NE(set.find("Max-Age=60"), std::string::npos);
  EXPECT_NE(cookies::session_clear_cookie().find("Max-Age=0"), std::string::npos);
}

TEST(DashboardSessions, OpensFindsExpiresAndCloses) {
  DashboardSessions sessions;
  const auto opened = sessions.open("key-1", 1000);
  EXPECT_EQ(opened.id.size(), 64u);
  EXPECT_EQ(opened.csrf.size(), 64u);
  EXPECT_NE(opened.id, opened.csrf);
  auto found = sessions.find(opened.id, 2000);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->key_id, "key-1");
  EXPECT_EQ(found->csrf, opened.csrf);
  EXPECT_FALSE(sessions.find(opened.csrf, 2000));
  EXPECT_FALSE(sessions.find("", 2000));
  EXPECT_FALSE(sessions.find(opened.id, 1000 + DashboardSessions::kLifetimeMs));
  EXPECT_EQ(sessions.size(), 0u);  // the expired one was dropped
  const auto again = sessions.open("key-1", 1000);
  sessions.close(again.id);
  EXPECT_FALSE(sessions.find(again.id, 2000));
}

TEST(DashboardSessions, LoggingInInALoopEvictsTheOldestInsteadOfGrowing) {
  DashboardSessions sessions;
  const auto first = sessions.open("key-1", 0);
  for (size_t i = 1; i <= DashboardSessions::kMaxSessions; ++i)
    sessions.open("key-1", static_cast<int64_t>(i));
  EXPECT_EQ(sessions.size(), DashboardSessions::kMaxSessions);
  EXPECT_FALSE(sessions.find(first.id, 5000));
}

TEST(DashboardAssets, ThePageAndItsModulesAreEmbeddedByExactName) {
  const dashboard::Asset* page = dashboard::find_asset("index.html");
  ASSERT_NE(page, nullptr);
  EXPECT_EQ(page->content_type, "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("app.js"), std::string_view::npos);
  ASSERT_NE(dashboard::find_asset("app.js"), nullptr);
  EXPECT_EQ(dashboard::find_asset("app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(dashboard::find_asset("../index.html"), nullptr);
  EXPECT_EQ(dashboard::find_asset(""), nullptr);
}

}  // namespace
}  // namespace abx::daemon
