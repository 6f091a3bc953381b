#include <gtest/gtest.h>

#include "daemon/authentication.h"
#include "daemon/cookies.h"
#include "daemon/dashboard_sessions.h"
#include "daemon/service.h"
#include "dashboard/assets.h"
#include "temp_dir.h"
#include "temp_store.h"

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

TEST(DashboardSessions, LoggingInInALoopEvictsThatKeysOldestNotOthers) {
  DashboardSessions sessions;
  const auto other = sessions.open("key-other", 0);
  const auto first = sessions.open("key-1", 1);
  for (size_t i = 0; i < DashboardSessions::kMaxSessions; ++i)
    sessions.open("key-1", static_cast<int64_t>(i + 2));
  EXPECT_EQ(sessions.size(), DashboardSessions::kMaxPerKey + 1);
  EXPECT_FALSE(sessions.find(first.id, 5000));
  EXPECT_TRUE(sessions.find(other.id, 5000));
}

TEST(DashboardSessions, ManyKeysFillTheTableToItsBoundOnly) {
  DashboardSessions sessions;
  const auto first = sessions.open("key-0", 0);
  for (size_t i = 1; i <= DashboardSessions::kMaxSessions; ++i)
    sessions.open("key-" + std::to_string(i), static_cast<int64_t>(i));
  EXPECT_EQ(sessions.size(), DashboardSessions::kMaxSessions);
  EXPECT_FALSE(sessions.find(first.id, 5000));
}

class DashboardAuthentication : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = open_store(temp_.path());
    auto keys = ApiKeys::open(*store_, "e2b_primary", temp_.path() / "api_keys");
    ASSERT_TRUE(keys) << keys.error().message();
    keys_ = *keys;
    key_id_ = keys_->caller_for("e2b_primary")->key_id;
  }
  http::Request request(const std::string& method, const std::string& cookie,
                        const std::string& csrf) const {
    http::Request out{method, "/sandboxes", "/sandboxes", {}, {}};
    if (!cookie.empty()) out.headers["cookie"] = "theme=dark; abx_session=" + cookie;
    if (!csrf.empty()) out.headers["x-abx-csrf"] = csrf;
    return out;
  }
  std::optional<Caller> caller(const http::Request& r) { return caller_of(r, {*keys_, sessions_}); }

  testing::TempDir temp_{"abx-dashboard-auth"};
  std::unique_ptr<Store> store_;
  std::shared_ptr<ApiKeys> keys_;
  DashboardSessions sessions_;
  std::string key_id_;
};

TEST_F(DashboardAuthentication, ASessionIsItsKeysCallerWithTheCsrfTokenForChanges) {
  const auto opened = sessions_.open(key_id_, now_ms());
  auto reader = caller(request("GET", opened.id, ""));
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->team, kDefaultTeam);
  EXPECT_EQ(reader->key_id, key_id_);
  EXPECT_TRUE(caller(request("POST", opened.id, opened.csrf)));
  EXPECT_FALSE(caller(request("POST", opened.id, "")));
  EXPECT_FALSE(caller(request("DELETE", opened.id, std::string(64, '0'))));
  EXPECT_FALSE(caller(request("POST", opened.csrf, opened.csrf)));  // the token is no session
  EXPECT_FALSE(caller(request("GET", "", "")));
}

TEST_F(DashboardAuthentication, AKeyHeaderIsJudgedAloneAndARevokedKeyEndsItsSessions) {
  const auto opened = sessions_.open(key_id_, now_ms());
  auto with_wrong_key = request("GET", opened.id, "");
  with_wrong_key.headers["x-api-key"] = "e2b_wrong";
  EXPECT_FALSE(caller(with_wrong_key));
  auto made = keys_->create("acme", false, "browser");
  ASSERT_TRUE(made);
  const auto theirs = sessions_.open(made->record.id, now_ms());
  ASSERT_TRUE(caller(request("GET", theirs.id, "")));
  EXPECT_EQ(caller(request("GET", theirs.id, ""))->team, "acme");
  ASSERT_TRUE(keys_->revoke(made->record.id));
  EXPECT_FALSE(caller(request("GET", theirs.id, "")));
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
