// abx run [TEMPLATE] -- CMD: a one-shot, as `docker run --rm`: creates a
// sandbox, runs the command in it with its output streamed, kills the sandbox
// (unless --keep) and exits with the command's code. abx's own failures exit
// 125, as docker's do, so that a script tells them from the command's codes.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/api.h"
#include "cli/commands.h"
#include "cli/create.h"
#include "cli/exec.h"
#include "cli/flag_checks.h"
#include "cli/interactive_hint.h"

namespace abx::cli {
namespace {

// A sandbox whose `abx run` died with it (SIGKILL, a lost terminal) ends this
// soon; while the command runs the session keeps extending it.
constexpr int kUnattendedSeconds = 60;

struct RunOptions {
  CreateOptions create;
  ExecOptions exec;
  // What CLI11 fills in order: the first word, then the rest; which is the
  // template only the raw arguments tell (`abx run -- ls` has none).
  std::string first;
  std::vector<std::string> rest;
  bool keep = false;
  bool rm = true;  // accepted for docker's habit; the default
};

// Which of `words` is the template: one given before `--` (the raw
// arguments tell), or without `--` the first word, docker's shape.
Status split_words(RunOptions& options, const std::vector<std::string>& args) {
  std::vector<std::string> words = options.rest;
  if (!options.first.empty()) words.insert(words.begin(), options.first);
  const auto dashdash = std::find(args.begin(), args.end(), "--");
  const size_t after = dashdash == args.end() ? 0 : static_cast<size_t>(args.end() - dashdash - 1);
  const size_t before = dashdash == args.end() ? std::min<size_t>(words.size(), 1)
                                               : words.size() - std::min(after, words.size());
  // CLI11 takes at most one word before `--`.
  if (before >= 1) options.create.template_id = words.front();
  options.exec.command.assign(words.begin() + static_cast<std::ptrdiff_t>(before), words.end());
  if (options.exec.command.empty() && !options.exec.tty)
    return Error{"no command given; put it after --, e.g. abx run " + options.create.template_id +
                 " -- python3 -c 'print(1)'"};
  return {};
}

Result<int> run_run(RunOptions& options, const std::vector<std::string>& args) {
  if (Status s = split_words(options, args); !s) return own_failure(s.error());
  hint_interactive(options.exec.command, options.exec.tty,
                   "abx run -it " + options.create.template_id);
  auto endpoint = resolve_endpoint();
  if (!endpoint) return own_failure(endpoint.error());
  // -e is the command's environment and the sandbox's too (what it starts).
  options.create.env = options.exec.env;
  options.create.timeout = options.keep ? options.create.timeout : kUnattendedSeconds;
  auto sandbox = create_sandbox(*endpoint, options.create);
  if (!sandbox) return own_failure(sandbox.error());
  options.exec.id = sandbox->value("sandboxID", "");
  auto code = run_exec(options.exec);
  if (options.keep) {
    std::cerr << "abx: kept sandbox " << options.exec.id << " (abx kill " << options.exec.id
              << ")\n";
  } else if (Status killed = ControlPlane(*endpoint).kill_sandbox(options.exec.id); !killed) {
    std::cerr << "abx: could not kill sandbox " << options.exec.id << " ("
              << killed.error().message() << "); it ends within " << kUnattendedSeconds << " s\n";
  }
  if (!code) return own_failure(code.error());
  return code;
}

}  // namespace

void add_run(CLI::App& root, Commands& commands, const std::vector<std::string>& args) {
  auto options = std::make_shared<RunOptions>();
  auto* app = root.add_subcommand(
      "run", "Create a sandbox, run a command in it, kill it: abx run [TEMPLATE] -- CMD [ARGS]");
  app->add_option("template", options->first, "Template name or id (default base)");
  app->add_option("command", options->rest,
                  "After --: the command and its arguments, or one shell command line");
  app->add_option("--template", options->create.template_id, "Template name or id");
  auto* keep = app->add_flag(
      "--keep", options->keep,
      "Leave the sandbox running afterwards (300 s, or --lifetime) and say its id on stderr");
  app->add_flag("--rm", options->rm, "Kill the sandbox afterwards (the default)")->excludes(keep);
  app->add_option("--lifetime", options->create.timeout,
                  "With --keep: seconds the sandbox lives on (default 300)")
      ->check(sandbox_timeout_seconds())
      ->needs(keep);
  add_resource_flags(*app, options->create);
  add_exec_flags(*app, options->exec);
  commands.push_back({app, [options, &args] { return run_run(*options, args); }});
}

}  // namespace abx::cli
