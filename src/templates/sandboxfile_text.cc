#include "templates/sandboxfile_text.h"

#include <algorithm>
#include <cctype>

namespace abx::templates::sandboxfile {
namespace {

bool is_comment(std::string_view line) { return trim_left(line).starts_with('#'); }
bool is_skippable(std::string_view line) { return is_comment(line) || trim(line).empty(); }

// The line without its continuation backslash, or nullopt when the line ends the instruction.
std::optional<std::string_view> without_continuation(std::string_view line) {
  std::string_view trimmed = trim_right(line);
  if (!trimmed.ends_with('\\')) return std::nullopt;
  trimmed.remove_suffix(1);
  return trimmed;
}

// Docker joins continued lines exactly ("a \" + "  b" → "a   b"); progress output reads better
// with one space where blanks meet the join.
void append_for_display(std::string& text, std::string_view piece) {
  const bool blank_join =
      (!text.empty() && is_blank(text.back())) || (!piece.empty() && is_blank(piece.front()));
  if (!text.empty() && blank_join) {
    text.erase(text.find_last_not_of(kBlanks) + 1);
    text += ' ';
    piece = trim_left(piece);
  }
  text += piece;
}

struct Joined {
  std::string raw, display;
};

// One instruction starting at lines[i], following continuations; advances i past it.
Joined join_continued(const std::vector<std::string_view>& lines, size_t& i) {
  Joined out;
  std::string_view piece = trim_left(lines[i++]);
  while (true) {
    const std::optional<std::string_view> head = without_continuation(piece);
    const std::string_view part = head ? *head : piece;
    out.raw += part;
    append_for_display(out.display, part);
    if (!head) break;
    // Docker skips comment and empty lines inside a continued instruction.
    while (i < lines.size() && is_skippable(lines[i])) ++i;
    if (i == lines.size()) break;
    piece = lines[i++];
  }
  return out;
}

}  // namespace

Error error_at(int line, std::string what) {
  return Error::with_message("Sandboxfile line " + std::to_string(line) + ": " + what,
                             kErrBadInput);
}

std::string warning_at(int line, const std::string& what) {
  return "Sandboxfile line " + std::to_string(line) + ": " + what;
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

bool is_name(std::string_view name) {
  return !name.empty() && is_name_start(name[0]) &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

std::string_view trim_left(std::string_view s) {
  const size_t start = s.find_first_not_of(kBlanks);
  return start == npos ? std::string_view{} : s.substr(start);
}

std::string_view trim_right(std::string_view s) {
  const size_t end = s.find_last_not_of(kBlanks);
  return end == npos ? std::string_view{} : s.substr(0, end + 1);
}

std::string_view trim(std::string_view s) { return trim_left(trim_right(s)); }

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // UTF-8 BOM, as Docker allows
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

Status check_directives(const std::vector<std::string_view>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view body = trim(lines[i]);
    if (!body.starts_with('#')) return {};
    body = trim(body.substr(1));
    const size_t eq = body.find('=');
    const std::string_view key = trim(body.substr(0, eq));
    if (eq == npos || !is_name(key)) return {};  // an ordinary comment ends the directives
    if (upper(key) == "ESCAPE" && trim(body.substr(eq + 1)) != "\\") {
      return error_at(static_cast<int>(i) + 1,
                      "only \\ is supported as the escape character; remove the escape directive "
                      "and continue lines with \\");
    }
  }
  return {};
}

std::vector<Instruction> split_instructions(const std::vector<std::string_view>& lines) {
  std::vector<Instruction> out;
  size_t i = 0;
  while (i < lines.size()) {
    if (is_skippable(lines[i])) {
      ++i;
      continue;
    }
    const int number = static_cast<int>(i) + 1;
    const Joined joined = join_continued(lines, i);
    const std::string_view raw = trim(joined.raw);
    if (raw.empty()) continue;  // a line holding only "\"
    const size_t end = raw.find_first_of(kBlanks);
    Instruction instruction;
    instruction.line = number;
    instruction.keyword = upper(raw.substr(0, end));
    instruction.rest = end == npos ? "" : trim(raw.substr(end));
    instruction.text = trim(joined.display);
    out.push_back(std::move(instruction));
  }
  return out;
}

std::string next_word(std::string_view& rest) {
  std::string word;
  char quote = 0;
  int braces = 0;
  size_t i = 0;
  for (; i < rest.size(); ++i) {
    const char c = rest[i];
    if (quote == 0 && braces == 0 && is_blank(c)) break;
    word += c;
    if (c == '\\' && quote != '\'' && i + 1 < rest.size()) {
      word += rest[++i];
    } else if (quote != 0 && c == quote) {
      quote = 0;
    } else if (quote == 0 && (c == '\'' || c == '"')) {
      quote = c;
    } else if (quote != '\'' && c == '$' && i + 1 < rest.size() && rest[i + 1] == '{') {
      word += rest[++i];
      ++braces;
    } else if (quote == 0 && braces > 0 && c == '}') {
      --braces;
    }
  }
  rest = trim_left(rest.substr(i));
  return word;
}

Strings split_words(std::string_view rest) {
  Strings words;
  rest = trim_left(rest);
  while (!rest.empty()) words.push_back(next_word(rest));
  return words;
}

std::vector<Flag> take_flags(std::string_view& rest) {
  std::vector<Flag> flags;
  while (rest.starts_with("--")) {
    const std::string word = next_word(rest);
    const size_t eq = word.find('=');
    Flag flag;
    flag.name = word.substr(2, eq == npos ? npos : eq - 2);
    if (eq != npos) flag.value = word.substr(eq + 1);
    flags.push_back(std::move(flag));
  }
  return flags;
}

}  // namespace abx::templates::sandboxfile
