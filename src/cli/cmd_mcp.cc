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

Result<int> run_serve(const ServeOptions& options) {
  auto endpoint = resolve_endpoint();
  if (!endpoint) return endpoint.error();
  const std::vector<std::string> dirs = options.allow_dirs.empty()
                                            ? std::vector<std::string>{fs::current_path().string()}
                                            : options.allow_dirs;
  auto allowed = mcp::canonical_dirs(dirs);
  if (!allowed) return allowed.error();
  return mcp::serve_stdio({*endpoint, *allowed, ""});
}

Result<int> run_install(mcp::InstallOptions options, bool remove) {
  std::error_code ec;
  options.abx_path = fs::canonical("/proc/self/exe", ec);
  if (ec) return Error{"find the abx binary", ec.value(), "/proc/self/exe"};
  const char* home = std::getenv("HOME");
  options.home = home ? home : "";
  options.project = fs::current_path();
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
                        "Host directory upload/download may touch (repeatable; default: the "
                        "current directory)");
  commands.push_back({serve_app, [serve] { return run_serve(*serve); }});

  auto install = std::make_shared<mcp::InstallOptions>();
  auto* install_app = mcp->add_subcommand("install", "Add abx to an editor's MCP servers");
  add_install_options(*install_app, *install);
  commands.push_back({install_app, [install] { return run_install(*install, false); }});

  auto uninstall = std::make_shared<mcp::InstallOptions>();
  auto* uninstall_app = mcp->add_subcommand("uninstall", "Remove abx from an editor's MCP servers");
  add_install_options(*uninstall_app, *uninstall);
  commands.push_back({uninstall_app, [uninstall] { return run_install(*uninstall, true); }});
}

}  // namespace abx::cli
