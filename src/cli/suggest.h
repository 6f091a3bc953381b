// "did you mean X?": the command a mistyped word most likely meant.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/nearest_word.h"

namespace abx::cli {

using abx::edit_distance;

// The subcommand of `parent` (name or alias) that `word` most likely
// meant: the nearest within two edits, or the only one it begins.
std::optional<std::string> nearest_command(const CLI::App& parent, const std::string& word);

// The long flag of `command` ("--json") that `word` ("--jsn") most likely
// meant: the nearest within two edits.
std::optional<std::string> nearest_flag(const CLI::App& command, const std::string& word);

// Whether `parent` has a subcommand called `name` (or aliased so).
bool has_command(const CLI::App& parent, const std::string& name);

// "unknown command 'lst'; did you mean `abx list`? (`abx help` lists them all)"
std::string unknown_command_message(const CLI::App& parent, const std::string& path,
                                    const std::string& word);

}  // namespace abx::cli
