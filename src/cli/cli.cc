#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "common/version.h"

namespace abx::cli {
namespace {

constexpr int kUsageExit = 2;

// CLI11 reports usage errors as exceptions; ours are one line and exit 2.
int usage_error(const CLI::ParseError& error, CLI::App& app) {
  if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
  // `abx exec ID ls -la` without `--` makes CLI11 read -la as an abx option.
  const bool exec_args = app.got_subcommand("exec") &&
                         std::string(error.what()).find("not expected") != std::string::npos;
  std::cerr << "abx: " << error.what()
            << (exec_args ? "; put the command after --, e.g. abx exec ID -- ls -la\n"
                          : "; run `abx --help` for usage\n");
  return kUsageExit;
}

const Command* chosen(const Commands& commands) {
  for (const auto& command : commands) {
    if (command.app->parsed()) return &command;
  }
  return nullptr;
}

// CLI11 would only say "A subcommand is required" for a typo.
bool is_command(CLI::App& app, const std::string& name) {
  return !app.get_subcommands([&](CLI::App* sub) { return sub->get_name() == name; }).empty();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"abx: disposable, isolated Linux sandboxes for AI agents' code", "abx"};
  app.set_version_flag("--version", "abx " + version::text());
  app.require_subcommand(1);
  Commands commands;
  add_create(app, commands);
  add_list(app, commands);
  add_info(app, commands);
  add_network(app, commands);
  add_secrets(app, commands);
  add_exec(app, commands);
  add_transfers(app, commands);
  add_kill(app, commands);
  add_set_timeout(app, commands);
  add_config(app, commands);
  add_daemon(app, commands);
  add_serve(app, commands);
  add_mcp(app, commands);
  add_template(app, commands);
  add_env(app, commands);
  add_keys(app, commands);
  add_quota(app, commands);
  add_usage(app, commands);
  add_version(app, commands);
  add_completion(app, commands);
  if (argc > 1 && argv[1][0] != '-' && !is_command(app, argv[1])) {
    std::cerr << "abx: unknown command '" << argv[1] << "'; run `abx --help` for the list\n";
    return kUsageExit;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return usage_error(error, app);
  }
  const Command* command = chosen(commands);
  if (!command) return kUsageExit;
  Result<int> exit_code = 0;
  try {
    exit_code = command->run();
  } catch (const nlohmann::json::exception& error) {  // an answer of a shape we do not know
    std::cerr << "abx: the daemon's answer is not what this abx expects (" << error.what()
              << "); are abx and the daemon the same version?\n";
    return 1;
  }
  if (!exit_code) {
    std::cerr << "abx: " << exit_code.error().message() << "\n";
    return 1;
  }
  return *exit_code;
}

}  // namespace abx::cli
