// abx mcp serve | install | uninstall: the MCP server on stdio and its entry
// in the editors' MCP configs.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "mcp/allowed_paths.h"
#include "mcp/install.h"
#include "mcp/stdio_server.h"

namespace abx::cli {
namespace {
namespace fs = std::filesystem;

struct ServeOptions {
  std::vector<std::string> allow_dirs;
};

constexpr const char* kTransferOff =
    "file transfer is off: this MCP server was started without --allow-dir. Ask the user to "
    "restart it as `abx mcp serve --allow-dir DIR` (or to run `abx mcp install --allow-dir DIR`) "
    "with the project directory; until then use file_write/file_read.";

Result<int> run_serve(const ServeOptions& options) {
  // Before the endpoint: a refused directory must not start a local daemon.
  auto allowed = mcp::checked_allow_dirs(options.allow_dirs, mcp::user_homes());
  if (!allowed) return allowed.error();
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  return mcp::serve_stdio({*endpoint, *allowed, kTransferOff});
}

Result<int> run_install(mcp::InstallOptions options, bool remove) {
  std::error_code ec;
  options.abx_path = fs::canonical("/proc/self/exe", ec);
  if (ec) return Error{"find the abx binary", ec.value(), "/proc/self/exe"};
  const char* home = std::getenv("HOME");
  options.home = home ? home : "";
  options.project = fs::current_path();
  options.homes = mcp::user_homes();
  for (const char* name : mcp::kForwardedSettings)
    if (const char* value = std::getenv(name); value && *value) options.settings[name] = value;
  auto message = remove ? mcp::uninstall(options) : mcp::install(options);
  if (!message) return message.error();
  std::cout << *message << "\n";
  return 0;
}

void add_install_options(CLI::App& app, mcp::InstallOptions& options) {
  app.add_option("--target", options.target, "The editor: cursor, claude or vscode")
      ->required()
      ->check(CLI::IsMember({"cursor", "claude", "vscode"}));
  app.add_option("--scope", options.scope,
                 "user (every project) or project (the current directory); default: user for "
                 "cursor and claude, project for vscode")
      ->check(CLI::IsMember({"user", "project"}));
  app.add_flag("--print", options.print, "Print the resulting config instead of writing it");
}

}  // namespace

void add_mcp(CLI::App& root, Commands& commands) {
  auto* mcp = root.add_subcommand("mcp", "MCP server for AI agents in editors");
  mcp->require_subcommand(1);

  auto serve = std::make_shared<ServeOptions>();
  auto* serve_app = mcp->add_subcommand("serve", "Serve the sandbox tools over MCP on stdio");
  serve_app->add_option("--allow-dir", serve->allow_dirs,
                        "Host directory upload/download may touch (repeatable; not / or your "
                        "home; default: none, which leaves upload/download off)");
  commands.push_back({serve_app, [serve] { return run_serve(*serve); }});

  auto install = std::make_shared<mcp::InstallOptions>();
  auto* install_app = mcp->add_subcommand("install", "Add abx to an editor's MCP servers");
  add_install_options(*install_app, *install);
  install_app->add_option("--allow-dir", install->allow_dirs,
                          "Host directory the server's upload/download may touch (repeatable; "
                          "default: the current directory for project scope, none for user "
                          "scope, which leaves upload/download off); not / or your home");
  commands.push_back({install_app, [install] { return run_install(*install, false); }});

  auto uninstall = std::make_shared<mcp::InstallOptions>();
  auto* uninstall_app = mcp->add_subcommand("uninstall", "Remove abx from an editor's MCP servers");
  add_install_options(*uninstall_app, *uninstall);
  commands.push_back({uninstall_app, [uninstall] { return run_install(*uninstall, true); }});
}

}  // namespace abx::cli
