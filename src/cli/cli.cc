#include "cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string_view>
#include <vector>

#include "cli/commands.h"
#include "cli/complete_values.h"
#include "cli/error_hints.h"
#include "cli/man_page.h"
#include "cli/suggest.h"
#include "common/version.h"

namespace abx::cli {
namespace {

constexpr int kUsageExit = 2;

// The command being parsed when the error came: `abx upload` for
// `abx upload ID`, so its usage is shown rather than the top level's.
const CLI::App* deepest_parsed(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) return deepest_parsed(*sub);
  return &app;
}

// "abx template build" for the `build` node under `template`.
std::string command_path(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* up = app->get_parent(); up; up = up->get_parent())
    path = up->get_name() + " " + path;
  return path;
}

// CLI11 reports usage errors as exceptions; ours are one line (then the
// command's usage) and exit 2.
// Whether `flag` comes before a `--` in the command line: an abx flag the
// user meant, not one of the command's own.
bool before_dashdash(const std::vector<std::string>& args, const std::string& flag) {
  const auto dashdash = std::find(args.begin(), args.end(), "--");
  return dashdash != args.end() && std::find(args.begin(), dashdash, flag) != dashdash;
}

int usage_error(const CLI::ParseError& error, CLI::App& app, const std::vector<std::string>& args) {
  if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
  const CLI::App* command = deepest_parsed(app);
  const std::string path = command_path(command);
  // `abx exec ID ls -la` without `--` makes CLI11 read -la as an abx option.
  const bool exec_args = (command->get_name() == "exec" || command->get_name() == "run") &&
                         std::string(error.what()).find("not expected") != std::string::npos;
  // `abx template biuld`: a mistyped command one level down.
  const auto extra = command->remaining();
  if (!command->get_subcommands([](const CLI::App*) { return true; }).empty() && !extra.empty() &&
      extra.front()[0] != '-' && !has_command(*command, extra.front())) {
    std::cerr << "abx: " << unknown_command_message(*command, path, extra.front()) << "\n";
    return kUsageExit;
  }
  // `abx list --jsn`, `abx exec ID --tmeout 5 -- ls`
  if (!extra.empty() && extra.front().rfind("--", 0) == 0 &&
      (!exec_args || before_dashdash(args, extra.front()))) {
    if (auto guess = nearest_flag(*command, extra.front())) {
      std::cerr << "abx: unknown flag " << extra.front() << " for `" << path << "`; did you mean "
                << *guess << "?\n";
      return kUsageExit;
    }
  }
  if (exec_args && !extra.empty() && extra.front().rfind("-", 0) == 0 &&
      before_dashdash(args, extra.front())) {
    std::cerr << "abx: unknown flag " << extra.front() << " for `" << path << "` (`" << path
              << " --help` lists them)\n";
    return kUsageExit;
  }
  if (exec_args) {
    std::cerr << "abx: " << error.what() << "; put the command after --, e.g. " << path
              << (command->get_name() == "run" ? " base" : " ID") << " -- ls -la\n";
    return kUsageExit;
  }
  std::cerr << "abx: " << error.what() << "\n";
  // Every usage error (a bad value too) is followed by the command's usage,
  // so the user sees how it is called without asking for --help.
  if (command != &app) std::cerr << CLI::Formatter().make_usage(command, path);
  std::cerr << "run `" << path << " --help` for more\n";
  return kUsageExit;
}

const Command* chosen(const Commands& commands) {
  for (const auto& command : commands) {
    if (command.app->parsed()) return &command;
  }
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  // `abx sandbox list`, `abx sandbox kill ID`: e2b's CLI spells them so; the same commands.
  if (argc > 2 && std::string_view(argv[1]) == "sandbox") {
    argv[1] = argv[0];
    ++argv;
    --argc;
  }
  CLI::App app{"abx: disposable, isolated Linux sandboxes for AI agents' code", "abx"};
  app.set_version_flag("--version", "abx " + version::text());
  app.require_subcommand(1);
  const std::vector<std::string> args(argv + 1, argv + argc);
  Commands commands;
  add_create(app, commands);
  add_list(app, commands);
  add_info(app, commands);
  add_ps(app, commands);
  add_diff(app, commands);
  add_events(app, commands);
  add_logs(app, commands);
  add_stats(app, commands);
  add_network(app, commands);
  add_secrets(app, commands);
  add_exec(app, commands);
  add_run(app, commands, args);
  add_shell(app, commands);
  add_transfers(app, commands);
  add_kill(app, commands);
  add_set_timeout(app, commands);
  add_pause(app, commands);
  add_stop(app, commands);
  add_snapshot(app, commands);
  add_volume(app, commands);
  add_fork(app, commands);
  add_config(app, commands);
  add_daemon(app, commands);
  add_serve(app, commands, args);
  add_mcp(app, commands);
  add_template(app, commands);
  add_registry(app, commands);
  add_env(app, commands);
  add_keys(app, commands);
  add_quota(app, commands);
  add_usage(app, commands);
  add_version(app, commands);
  add_dashboard(app, commands);
  add_completion(app, commands);
  add_help(app, commands);
  // The completion scripts' question, outside the parser: its words are another command line.
  if (argc > 1 && std::string_view(argv[1]) == "__complete")
    return complete_values(app, {args.begin() + 1, args.end()});
  // `make install`'s man page (cmake/install_generated.cmake): hidden, as it is for the build.
  if (argc == 2 && std::string_view(argv[1]) == "__man") {
    write_man_page(app, std::cout);
    return 0;
  }
  // CLI11 would only say "A subcommand is required" for a typo.
  if (argc > 1 && argv[1][0] != '-' && !has_command(app, argv[1])) {
    std::cerr << "abx: " << unknown_command_message(app, "abx", argv[1]) << "\n";
    return kUsageExit;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return usage_error(error, app, args);
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
    std::cerr << "abx: " << with_hint(exit_code.error().message()) << "\n";
    return 1;
  }
  return *exit_code;
}

}  // namespace abx::cli
