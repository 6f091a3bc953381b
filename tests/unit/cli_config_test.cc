#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/settings.h"
#include "common/config.h"
#include "common/http_client.h"
#include "common/paths.h"

namespace abx {
namespace {
namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "abx-cli-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Config, MissingFileIsEmpty) {
  TempDir dir;
  auto config = config::Config::load(dir.path() / "nope.toml");
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(config->values().empty());
}

TEST(Config, SavesAtomicallyWithMode0600AndReadsBack) {
  TempDir dir;
  const auto file = dir.path() / "sub" / "config.toml";
  config::Config config;
  config.set("sandbox_api_key", "e2b_abc\"quote");
  config.set("sandbox_api_url", "http://127.0.0.1:49980");
  ASSERT_TRUE(config.save(file).ok());
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(std::distance(fs::directory_iterator(file.parent_path()), fs::directory_iterator()), 1);
  auto loaded = config::Config::load(file);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->get("sandbox_api_key"), "e2b_abc\"quote");
  EXPECT_EQ(loaded->get("sandbox_api_url"), "http://127.0.0.1:49980");
  EXPECT_TRUE(loaded->unset("sandbox_api_url"));
  EXPECT_FALSE(loaded->unset("sandbox_api_url"));
  EXPECT_FALSE(loaded->get("sandbox_api_url").has_value());
}

TEST(Config, BrokenFileSaysWhatToDo) {
  TempDir dir;
  const auto file = dir.path() / "config.toml";
  std::ofstream(file) << "sandbox_api_key = \n";
  auto config = config::Config::load(file);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message().find("fix or delete"), std::string::npos);
}

TEST(Config, MasksSecretsOnly) {
  EXPECT_EQ(config::mask_secret("e2b_12345678"), "********5678");
  EXPECT_EQ(config::mask_secret("abc"), "***");
  EXPECT_EQ(config::display_value("sandbox_api_key", "e2b_12345678"), "********5678");
  EXPECT_EQ(config::display_value("sandbox_api_url", "http://x:1"), "http://x:1");
  EXPECT_TRUE(config::is_known_key("sandbox_api_url"));
  EXPECT_FALSE(config::is_known_key("api_url"));
}

TEST(Settings, EnvBeatsConfigBeatsNothing) {
  config::Config config;
  {
    ScopedEnv env(cli::kUrlEnv, nullptr);
    EXPECT_FALSE(cli::pick_setting(cli::kUrlEnv, config, config::kApiUrl).has_value());
    config.set(config::kApiUrl, "http://config:1");
    EXPECT_EQ(cli::pick_setting(cli::kUrlEnv, config, config::kApiUrl), "http://config:1");
  }
  ScopedEnv env(cli::kUrlEnv, "http://env:2");
  EXPECT_EQ(cli::pick_setting(cli::kUrlEnv, config, config::kApiUrl), "http://env:2");
  ScopedEnv empty(cli::kUrlEnv, "");
  EXPECT_EQ(cli::pick_setting(cli::kUrlEnv, config, config::kApiUrl), "http://config:1");
}

TEST(Paths, OverridesThenXdgThenHome) {
  ScopedEnv state(("ABX_STATE_DIR"), nullptr);
  ScopedEnv config_dir(("ABX_CONFIG_DIR"), nullptr);
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv xdg_state("XDG_STATE_HOME", nullptr);
    ScopedEnv xdg_config("XDG_CONFIG_HOME", nullptr);
    EXPECT_EQ(paths::state_dir(), "/home/someone/.local/state/abx");
    EXPECT_EQ(paths::config_file(), "/home/someone/.config/abx/config.toml");
  }
  ScopedEnv xdg_state("XDG_STATE_HOME", "/xdg/state");
  ScopedEnv xdg_config("XDG_CONFIG_HOME", "/xdg/config");
  EXPECT_EQ(paths::state_dir(), "/xdg/state/abx");
  EXPECT_EQ(paths::config_dir(), "/xdg/config/abx");
  ScopedEnv abx_state("ABX_STATE_DIR", "/t/state");
  ScopedEnv abx_config("ABX_CONFIG_DIR", "/t/config");
  EXPECT_EQ(paths::state_dir(), "/t/state");
  EXPECT_EQ(paths::config_file(), "/t/config/config.toml");
  EXPECT_EQ(paths::daemon_address_file("/d"), "/d/daemon.addr");
  EXPECT_EQ(paths::daemon_pid_file("/d"), "/d/daemon.pid");
  EXPECT_EQ(paths::daemon_log_file("/d"), "/d/daemon.log");
}

TEST(Url, Parses) {
  auto url = http::Url::parse("http://127.0.0.1:49980\n");
  ASSERT_TRUE(url.ok());
  EXPECT_EQ(url->host, "127.0.0.1");
  EXPECT_EQ(url->port, "49980");
  EXPECT_EQ(url->prefix, "");
  EXPECT_EQ(url->str(), "http://127.0.0.1:49980");
  auto with_path = http::Url::parse("http://example.test/api/");
  ASSERT_TRUE(with_path.ok());
  EXPECT_EQ(with_path->port, "80");
  EXPECT_EQ(with_path->prefix, "/api");
  auto v6 = http::Url::parse("http://[::1]:8080");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->str(), "http://[::1]:8080");
  EXPECT_EQ(v6->authority(), "[::1]:8080");  // the Host header's form
  auto tls = http::Url::parse("https://api.e2b.app");
  ASSERT_TRUE(tls.ok());
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->port, "443");
  EXPECT_EQ(tls->str(), "https://api.e2b.app:443");
  EXPECT_FALSE(with_path->tls);
  EXPECT_FALSE(http::Url::parse("127.0.0.1:49980").ok());
  EXPECT_FALSE(http::Url::parse("ftp://127.0.0.1:49980").ok());
  EXPECT_FALSE(http::Url::parse("https://:443").ok());
}

TEST(Url, Encodes) {
  EXPECT_EQ(http::url_encode("/home/user/a b.csv"), "%2Fhome%2Fuser%2Fa%20b.csv");
  EXPECT_EQ(http::url_encode("a-b_c.d~"), "a-b_c.d~");
}

}  // namespace
}  // namespace abx
