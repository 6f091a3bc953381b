// `abx __complete WORD…`: the values a shell completion script cannot know by
// itself, the live sandbox ids and the template names, for the word being
// completed (the last one) after the words before it. The scripts of
// `abx completion` call it; it is not a command a user types (no help, no usage).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace abx::cli {

// Prints the candidates that start with the last of `words`, one a line: ids
// where the command takes a sandbox id, names where it takes a template,
// nothing elsewhere. Asks the daemon that is configured or recorded, never
// starts one, and gives up after a second; always exits 0 and silent on stderr.
int complete_values(const CLI::App& root, std::vector<std::string> words);

}  // namespace abx::cli
