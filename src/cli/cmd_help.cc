// abx help [CMD...]: the same text as `abx CMD --help`; a mistyped name
// gets "did you mean".
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/suggest.h"

namespace abx::cli {
namespace {

Result<int> run_help(CLI::App& root, const std::vector<std::string>& words) {
  const CLI::App* node = &root;
  std::string path = "abx";
  for (const auto& word : words) {
    const auto found = node->get_subcommands(
        [&](const CLI::App* sub) { return !sub->get_group().empty() && sub->check_name(word); });
    if (found.empty()) return Error{unknown_command_message(*node, path, word)};
    node = found.front();
    path += " " + node->get_name();
  }
  // As --help prints it (App::help would follow the parsed `help` instead).
  std::cout << node->get_formatter()->make_help(node, path, CLI::AppFormatMode::Normal);
  return 0;
}

}  // namespace

void add_help(CLI::App& root, Commands& commands) {
  auto words = std::make_shared<std::vector<std::string>>();
  auto* app =
      root.add_subcommand("help", "Show help for a command: abx help CMD (= abx CMD --help)");
  app->add_option("command", *words, "The command, e.g. exec or template build");
  commands.push_back({app, [words, &root] { return run_help(root, *words); }});
}

}  // namespace abx::cli
