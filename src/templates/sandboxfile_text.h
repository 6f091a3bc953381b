// Sandboxfile text: lines, continuations, comments and parser directives into
// instructions; an instruction's words (quotes and ${...} kept for expansion)
// and leading --flags. Nothing here knows what an instruction means.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace abx::templates::sandboxfile {

using Strings = std::vector<std::string>;

inline constexpr std::string_view kBlanks = " \t";
inline constexpr auto npos = std::string_view::npos;

// "Sandboxfile line 7: <what>", the form of every error and warning about a line.
Error error_at(int line, std::string what);
std::string warning_at(int line, const std::string& what);

bool is_blank(char c);
bool is_digit(char c);
bool is_name_start(char c);
bool is_name_char(char c);
bool is_name(std::string_view name);  // a shell variable name
std::string_view trim_left(std::string_view s);
std::string_view trim_right(std::string_view s);
std::string_view trim(std::string_view s);
std::string upper(std::string_view s);

struct Instruction {
  int line = 0;
  std::string keyword;  // upper case
  std::string rest;     // what follows the keyword, continued lines joined as Docker joins them
  std::string text;     // the whole instruction on one line, for progress output
};

// The file's lines, a UTF-8 BOM and "\r" line ends dropped.
std::vector<std::string_view> split_lines(std::string_view text);

// Parser directives ("# escape=`") count only at the very top, before any other line. Only the
// escape character changes parsing, and only "\" is implemented.
Status check_directives(const std::vector<std::string_view>& lines);

// The instructions, comments and blank lines skipped, continued lines joined.
std::vector<Instruction> split_instructions(const std::vector<std::string_view>& lines);

// The next word of `rest` with its quotes and backslashes kept (expansion interprets them);
// `rest` moves past the word and the blanks after it. Blanks inside quotes or ${...} do not end
// a word, so "ENV A=${B:-two words}" means what it would in the shell.
std::string next_word(std::string_view& rest);
Strings split_words(std::string_view rest);

struct Flag {
  std::string name;  // "chown" for "--chown=1000"
  std::optional<std::string> value;
};

// The leading "--name[=value]" options, taken off `rest`.
std::vector<Flag> take_flags(std::string_view& rest);

}  // namespace abx::templates::sandboxfile
