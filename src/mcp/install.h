// `abx mcp install|uninstall`: our server entry in the config file an editor's
// MCP client reads (Cursor, Claude Code, VS Code), merged without touching
// the other entries.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/error.h"

namespace abx::mcp {

inline constexpr const char* kServerName = "agent-sandbox";
// The settings of the environment that choose the daemon `mcp serve` reaches
// (or starts) and how: what install copies into the editor entry's `env`.
inline constexpr const char* kForwardedSettings[] = {
    "ABX_SANDBOX_API_URL", "ABX_SANDBOX_API_KEY", "ABX_STATE_DIR",     "ABX_CONFIG_DIR",
    "ABX_CACHE_DIR",       "ABX_TEMPLATES_DIR",   "ABX_TEMPLATE_SPECS"};

struct InstallOptions {
  std::string target;              // cursor | claude | vscode
  std::string scope;               // user | project; "" = the target's usual one
  bool print = false;              // show the resulting JSON instead of writing
  std::filesystem::path abx_path;  // the absolute path the entry runs
  std::filesystem::path home;      // user scope lives here ($HOME)
  std::filesystem::path project;   // project scope lives here (the cwd)
  // --allow-dir for the server entry; none given: the project for project
  // scope, nothing for user scope (upload/download off until configured).
  std::vector<std::string> allow_dirs;
  std::vector<std::filesystem::path> homes;  // never allowed (see allowed_paths.h)
  // The ABX_* settings set where install runs (which daemon, which state
  // dir): the entry's `env`, so the editor's server reaches the same daemon.
  // The API key goes into a user-scope file only: a project's may be committed.
  std::map<std::string, std::string> settings;
};

// The config file for a target and scope.
Result<std::filesystem::path> config_path(const InstallOptions& options);

// What to tell the user: the file written (and its backup), "already
// installed", a line saying upload/download are off when no directory is
// allowed, or with `print` the JSON that would be written.
Result<std::string> install(const InstallOptions& options);
Result<std::string> uninstall(const InstallOptions& options);

}  // namespace abx::mcp
