#include "common/paths.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace abx::paths {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::filesystem::path home_dir() {
  if (auto home = env_or_empty("HOME"); !home.empty()) return home;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/";
}

// The first of: the abx-specific override, <XDG var>/abx, ~/<fallback>/abx.
std::filesystem::path resolve(const char* abx_var, const char* xdg_var, const char* fallback) {
  if (auto dir = env_or_empty(abx_var); !dir.empty()) return dir;
  if (auto xdg = env_or_empty(xdg_var); !xdg.empty()) return std::filesystem::path(xdg) / "abx";
  return home_dir() / fallback / "abx";
}

}  // namespace

std::filesystem::path state_dir() {
  return resolve("ABX_STATE_DIR", "XDG_STATE_HOME", ".local/state");
}

std::filesystem::path config_dir() {
  return resolve("ABX_CONFIG_DIR", "XDG_CONFIG_HOME", ".config");
}

std::filesystem::path config_file() { return config_dir() / "config.toml"; }

std::filesystem::path daemon_address_file(const std::filesystem::path& data_dir) {
  return data_dir / "daemon.addr";
}

std::filesystem::path daemon_pid_file(const std::filesystem::path& data_dir) {
  return data_dir / "daemon.pid";
}

std::filesystem::path daemon_log_file(const std::filesystem::path& data_dir) {
  return data_dir / "daemon.log";
}

std::filesystem::path api_key_file(const std::filesystem::path& data_dir) {
  return data_dir / "api_key";
}

}  // namespace abx::paths
