#include "templates/sandboxfile.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>

namespace abx::templates::sandboxfile {
namespace {

using Vars = std::map<std::string, std::string>;
using Strings = std::vector<std::string>;
using Pairs = std::vector<std::pair<std::string, std::string>>;

constexpr std::string_view kBlanks = " \t";
constexpr auto npos = std::string_view::npos;

Error error_at(int line, std::string what) {
  return Error{"Sandboxfile line " + std::to_string(line), 0, std::move(what)};
}

std::string warning_at(int line, const std::string& what) {
  return "Sandboxfile line " + std::to_string(line) + ": " + what;
}

// ---- Text helpers ----

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

bool is_comment(std::string_view line) { return trim_left(line).starts_with('#'); }
bool is_skippable(std::string_view line) { return is_comment(line) || trim(line).empty(); }

// ---- Lines → instructions ----

struct Instruction {
  int line = 0;
  std::string keyword;  // upper case
  std::string rest;     // what follows the keyword, continued lines joined as Docker joins them
  std::string text;     // the whole instruction on one line, for progress output
};

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

// Parser directives ("# escape=`") count only at the very top, before any other line. Only the
// escape character changes parsing, and only "\" is implemented.
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

// ---- Words and flags ----

// The next word of `rest` with its quotes and backslashes kept (expansion interprets them);
// `rest` moves past the word and the blanks after it. Blanks inside quotes or ${...} do not end
// a word, so "ENV A=${B:-two words}" means what it would in the shell.
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

struct Flag {
  std::string name;  // "chown" for "--chown=1000"
  std::optional<std::string> value;
};

// The leading "--name[=value]" options, taken off `rest`.
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

// The exec/JSON form ["a", "b"]. As in Docker, text that starts with '[' but is not JSON is
// shell form (so "RUN [ -f x ] && ..." works): nullopt then.
Result<std::optional<Strings>> json_strings(const Instruction& in, std::string_view rest,
                                            const std::string& example) {
  if (!rest.starts_with('[')) return std::optional<Strings>{};
  const nlohmann::json json = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_array()) return std::optional<Strings>{};
  Strings out;
  for (const nlohmann::json& item : json) {
    if (!item.is_string()) {
      return error_at(in.line, in.keyword + " [...] must be a JSON array of strings, e.g. " +
                                   in.keyword + " " + example);
    }
    out.push_back(item.get<std::string>());
  }
  return std::optional<Strings>{std::move(out)};
}

// BuildKit reads a word like "<<EOF" as a heredoc whose body follows on the next lines. Those
// lines would parse as instructions here, so name the problem instead.
Status reject_heredoc(const Instruction& in, std::string_view rest) {
  for (const std::string& word : split_words(rest)) {
    std::string_view marker = word;
    while (!marker.empty() && is_digit(marker.front())) marker.remove_prefix(1);  // "2<<EOF"
    if (!marker.starts_with("<<")) continue;
    marker.remove_prefix(marker.starts_with("<<-") ? 3 : 2);
    if (!marker.empty() && marker.find('<') == npos) {
      return error_at(in.line, in.keyword +
                                   " heredocs (<<EOF) are not supported; put the script in a file "
                                   "in the build context, COPY it and RUN it");
    }
  }
  return {};
}

// ---- Paths ----

std::vector<std::string_view> path_parts(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == npos) end = path.size();
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// "/a/./b/../c" → "/a/c", lexically (as Docker resolves WORKDIR); ".." stops at "/".
std::string normalize(std::string_view path) {
  std::vector<std::string_view> kept;
  for (const std::string_view part : path_parts(path)) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!kept.empty()) kept.pop_back();
      continue;
    }
    kept.push_back(part);
  }
  std::string out;
  for (const std::string_view part : kept) (out += '/') += part;
  return out.empty() ? "/" : out;
}

std::string resolve(const std::string& base, std::string_view path) {
  return normalize(path.starts_with('/') ? std::string(path) : base + "/" + std::string(path));
}

// A COPY destination is relative to WORKDIR; a trailing "/" (or a final "." or "..") says it is
// a directory, which changes what COPY does, so it must survive resolution.
std::string resolve_dest(const std::string& workdir, std::string_view dest) {
  std::string out = resolve(workdir, dest);
  const std::string_view last = path_parts(dest).back();
  if ((last.empty() || last == "." || last == "..") && out != "/") out += '/';
  return out;
}

bool climbs_out(std::string_view path) {
  int depth = 0;
  for (const std::string_view part : path_parts(path)) {
    if (part == "..") {
      if (--depth < 0) return true;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
  }
  return false;
}

bool is_url(std::string_view source) {
  if (source.starts_with("git@")) return true;
  const size_t scheme_end = source.find("://");
  if (scheme_end == npos || scheme_end == 0) return false;
  const std::string_view scheme = source.substr(0, scheme_end);
  return std::all_of(scheme.begin(), scheme.end(),
                     [](char c) { return is_name_char(c) || c == '+' || c == '-' || c == '.'; });
}

Status check_source(const Instruction& in, const std::string& source) {
  const std::string& what = in.keyword;
  if (source.empty()) {
    return error_at(in.line, what +
                                 " has an empty source (a variable that expands to \"\"?); "
                                 "name a path in the build context");
  }
  if (is_url(source)) {
    return error_at(in.line,
                    what + " of URLs is not supported (" + source + "); RUN curl -o ... instead");
  }
  if (source.starts_with('/')) {
    return error_at(in.line, what + " source " + source +
                                 " is absolute; name it relative to the build context, e.g. " +
                                 normalize(source).substr(1));
  }
  if (climbs_out(source)) {
    return error_at(in.line, what + " source " + source +
                                 " is outside the build context; move it into the context dir");
  }
  return {};
}

// ---- Build args ----

// Docker's automatic platform ARGs. A sandbox runs the host's architecture, so build and target
// platform are the same.
const Vars& platform_args() {
  static const Vars args = [] {
#if defined(__x86_64__)
    const std::string arch = "amd64";
#elif defined(__aarch64__)
    const std::string arch = "arm64";
#elif defined(__riscv) && __riscv_xlen == 64
    const std::string arch = "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const std::string arch = "ppc64le";
#elif defined(__s390x__)
    const std::string arch = "s390x";
#else
    const std::string arch = "unknown";
#endif
    Vars vars;
    for (const std::string prefix : {"BUILD", "TARGET"}) {
      vars[prefix + "PLATFORM"] = "linux/" + arch;
      vars[prefix + "OS"] = "linux";
      vars[prefix + "ARCH"] = arch;
      vars[prefix + "VARIANT"] = "";
    }
    return vars;
  }();
  return args;
}

// Docker passes these build args to RUN without an ARG line, and does not warn about them.
bool is_proxy_arg(const std::string& name) {
  static const std::set<std::string> kNames = {
      "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "FTP_PROXY",
      "ftp_proxy",  "NO_PROXY",   "no_proxy",    "ALL_PROXY",   "all_proxy"};
  return kNames.contains(name);
}

// ---- Variable substitution ----

struct Variable {
  bool declared = false;             // an ARG, ENV or image variable (no warning when unset)
  std::optional<std::string> value;  // nullopt: unset
};

// Docker's word expansion: $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:+alt},
// ${NAME+alt}, ${NAME:?message}, ${NAME?message}; quotes removed ('...' literal, "..." expanded)
// and "\" escaping the next character.
class Expander {
 public:
  Expander(std::function<Variable(const std::string&)> lookup, int line)
      : lookup_(std::move(lookup)), line_(line) {}

  // With quotes=false (items of a JSON array) quote characters are ordinary.
  Result<std::string> expand(std::string_view word, bool quotes) {
    in_ = word;
    pos_ = 0;
    quotes_ = quotes;
    std::string out;
    if (Status st = until(out, 0); !st) return st.error();
    return out;
  }

  // Plain $NAME / ${NAME} references to variables nothing declared.
  const std::set<std::string>& undefined() const { return undefined_; }

 private:
  // Expands into `out` up to `stop` (left unread) or, when stop is 0, to the end.
  Status until(std::string& out, char stop) {
    while (pos_ < in_.size()) {
      const char c = in_[pos_];
      if (stop != 0 && c == stop) return {};
      if (Status st = one(c, out); !st) return st;
    }
    if (stop != 0) return error_at(line_, "a ${ has no closing }; add the }");
    return {};
  }

  Status one(char c, std::string& out) {
    if (c == '\\') {
      ++pos_;
      out += pos_ < in_.size() ? in_[pos_++] : '\\';
      return {};
    }
    if (quotes_ && c == '\'') return single_quoted(out);
    if (quotes_ && c == '"') return double_quoted(out);
    if (c == '$') return variable(out);
    out += c;
    ++pos_;
    return {};
  }

  Status single_quoted(std::string& out) {
    const size_t close = in_.find('\'', pos_ + 1);
    if (close == npos) return error_at(line_, "a ' quote is not closed; close it or write \\'");
    out += in_.substr(pos_ + 1, close - pos_ - 1);
    pos_ = close + 1;
    return {};
  }

  Status double_quoted(std::string& out) {
    ++pos_;
    while (pos_ < in_.size() && in_[pos_] != '"') {
      if (in_[pos_] == '$') {
        if (Status st = variable(out); !st) return st;
        continue;
      }
      // Inside "...", a backslash escapes only ", \ and $, as in the shell.
      const bool escape = in_[pos_] == '\\' && pos_ + 1 < in_.size() &&
                          std::string_view("\"\\$").find(in_[pos_ + 1]) != npos;
      if (escape) ++pos_;
      out += in_[pos_++];
    }
    if (pos_ == in_.size())
      return error_at(line_, "a \" quote is not closed; close it or write \\\"");
    ++pos_;
    return {};
  }

  Status variable(std::string& out) {
    ++pos_;  // past $
    if (pos_ < in_.size() && in_[pos_] == '{') return braced(out);
    const std::string var = name();
    if (var.empty()) {
      out += '$';  // a $ before no name stays, as in the shell
      return {};
    }
    out += plain(var);
    return {};
  }

  Status braced(std::string& out) {
    ++pos_;  // past {
    const std::string var = name();
    if (var.empty()) {
      return error_at(line_,
                      "${ must be followed by a variable name, as in ${NAME}; write \\$ "
                      "for a literal $");
    }
    if (pos_ < in_.size() && in_[pos_] == '}') {
      ++pos_;
      out += plain(var);
      return {};
    }
    const bool colon = pos_ < in_.size() && in_[pos_] == ':';
    if (colon) ++pos_;
    const char op = pos_ < in_.size() ? in_[pos_] : '\0';
    if (op == '\0') return error_at(line_, "${" + var + " has no closing }; add the }");
    if (op != '-' && op != '+' && op != '?') {
      return error_at(line_, "${" + var + (colon ? ":" : "") + op +
                                 "...} is not supported; use $NAME, ${NAME}, ${NAME:-default} "
                                 "or ${NAME:+alternative}");
    }
    ++pos_;
    std::string word;
    if (Status st = until(word, '}'); !st) return st;
    ++pos_;  // past }
    return apply(var, colon, op, word, out);
  }

  // ":" makes an empty value count as unset, as in the shell.
  Status apply(const std::string& var, bool colon, char op, const std::string& word,
               std::string& out) {
    const std::optional<std::string> value = lookup_(var).value;
    const bool set = value && (!colon || !value->empty());
    if (op == '-') out += set ? *value : word;
    if (op == '+' && set) out += word;
    if (op == '?') {
      if (!set) {
        return error_at(line_, word.empty() ? var + " is not set; pass --build-arg " + var + "=..."
                                            : var + ": " + word);
      }
      out += *value;
    }
    return {};
  }

  // A shell name, or one digit ($1) as Docker reads it.
  std::string name() {
    const size_t start = pos_;
    if (pos_ < in_.size() && is_digit(in_[pos_])) {
      ++pos_;
    } else if (pos_ < in_.size() && is_name_start(in_[pos_])) {
      while (pos_ < in_.size() && is_name_char(in_[pos_])) ++pos_;
    }
    return std::string(in_.substr(start, pos_ - start));
  }

  std::string plain(const std::string& var) {
    Variable found = lookup_(var);
    if (!found.declared) undefined_.insert(var);
    return found.value.value_or("");
  }

  std::function<Variable(const std::string&)> lookup_;
  int line_;
  std::string_view in_;
  size_t pos_ = 0;
  bool quotes_ = true;
  std::set<std::string> undefined_;
};

// ---- Instructions ----

// Instructions about how a container starts or is described. A template has none of that, so a
// Dockerfile that works elsewhere still builds, and the user hears what was dropped.
const char* skipped_reason(const std::string& keyword) {
  static const std::map<std::string, const char*> kReasons = {
      {"CMD", "sandboxes have no start command; start processes through the API"},
      {"ENTRYPOINT", "sandboxes have no start command; start processes through the API"},
      {"HEALTHCHECK", "sandboxes have no start command to check"},
      {"STOPSIGNAL", "sandboxes have no start command to signal"},
      {"EXPOSE", "every port of a sandbox is reachable through get_host(port)"},
      {"LABEL", "templates carry no labels"},
      {"MAINTAINER", "templates carry no labels"},
      {"VOLUME", "sandboxes have no volumes; files at that path stay part of the template"},
      {"SHELL",
       "RUN always uses /bin/sh -c; for another shell write RUN [\"/bin/bash\", \"-c\", \"...\"]"},
      {"ONBUILD", "templates keep no triggers for later builds"},
  };
  const auto found = kReasons.find(keyword);
  return found == kReasons.end() ? nullptr : found->second;
}

class Parser {
 public:
  Parser(const Vars& build_args, const BaseImage& base)
      : build_args_(build_args), env_(base.env), workdir_(normalize(base.workdir)) {}

  Status add(const Instruction& in) {
    if (const char* reason = skipped_reason(in.keyword)) {
      if (!from_seen_) return before_from(in);
      warnings_.push_back(warning_at(in.line, in.keyword + " is ignored: " + reason));
      return {};
    }
    using Handler = Status (Parser::*)(const Instruction&);
    static const std::map<std::string, Handler> kHandlers = {
        {"FROM", &Parser::from}, {"RUN", &Parser::run}, {"COPY", &Parser::copy},
        {"ADD", &Parser::copy},  {"ENV", &Parser::env}, {"WORKDIR", &Parser::workdir},
        {"USER", &Parser::user}, {"ARG", &Parser::arg}};
    const auto handler = kHandlers.find(in.keyword);
    if (handler == kHandlers.end()) {
      return error_at(in.line, "unknown instruction " + in.keyword +
                                   "; a Sandboxfile supports FROM, RUN, COPY, ADD, ENV, WORKDIR, "
                                   "USER, ARG");
    }
    if (!from_seen_ && in.keyword != "FROM" && in.keyword != "ARG") return before_from(in);
    return (this->*handler->second)(in);
  }

  Result<Sandboxfile> finish() {
    if (!from_seen_) {
      return Error{"Sandboxfile", 0,
                   "no FROM instruction; start with FROM <image>, e.g. FROM base"};
    }
    for (const auto& [name, value] : build_args_) {
      if (declared_.contains(name) || is_proxy_arg(name)) continue;
      warnings_.push_back("Sandboxfile: --build-arg " + name + " is unused; no ARG " + name +
                          " declares it");
    }
    return Sandboxfile{std::move(steps_), std::move(warnings_)};
  }

 private:
  static Status before_from(const Instruction& in) {
    return error_at(in.line, in.keyword +
                                 " comes before FROM; start with FROM <image> (only ARG may "
                                 "come before it)");
  }

  Step& new_step(const Instruction& in, Kind kind) {
    Step& step = steps_.emplace_back();
    step.kind = kind;
    step.line = in.line;
    step.text = in.text;
    return step;
  }

  Status from(const Instruction& in) {
    if (from_seen_) {
      return error_at(in.line,
                      "multi-stage builds are not supported; build the first stage as "
                      "its own template and FROM it");
    }
    std::string_view rest = in.rest;
    for (const Flag& flag : take_flags(rest)) {
      if (Status st = check_platform(in.line, flag); !st) return st;
    }
    const Strings words = split_words(rest);
    if (words.empty()) return error_at(in.line, "FROM needs an image, e.g. FROM base");
    if (words.size() != 1 && !(words.size() == 3 && upper(words[1]) == "AS")) {
      return error_at(in.line,
                      "FROM takes an image and an optional AS name, e.g. FROM "
                      "debian:bookworm AS build");
    }
    Result<std::string> image = expand(in.line, words[0]);
    if (!image) return image.error();
    if (image->empty()) {
      return error_at(in.line, "FROM " + words[0] +
                                   " names no image after substitution; give the ARG a default "
                                   "or pass --build-arg");
    }
    from_seen_ = true;
    new_step(in, Kind::kFrom).args = {*image};
    return {};
  }

  // Single-stage builds gain nothing from --platform but a mismatch, which is worth stopping.
  Status check_platform(int line, const Flag& flag) {
    if (flag.name != "platform") {
      return error_at(line, "FROM --" + flag.name + " is not supported; remove the option");
    }
    Result<std::string> platform = expand(line, flag.value.value_or(""));
    if (!platform) return platform.error();
    const std::string& host = platform_args().at("TARGETPLATFORM");
    if (*platform == host || platform->starts_with(host + "/")) return {};
    return error_at(line, "FROM --platform=" + *platform +
                              " does not match this host; sandboxes "
                              "run " +
                              host + " images, so drop the option");
  }

  Status run(const Instruction& in) {
    std::string_view rest = in.rest;
    const std::vector<Flag> flags = take_flags(rest);
    if (!flags.empty()) {
      return error_at(in.line, "RUN --" + flags[0].name + " is not supported; remove the option");
    }
    if (rest.empty())
      return error_at(in.line, "RUN needs a command, e.g. RUN apt-get install -y jq");
    Result<std::optional<Strings>> exec = json_strings(in, rest, R"(["/bin/echo", "hi"])");
    if (!exec) return exec.error();
    Strings argv;
    if (*exec) {
      if ((*exec)->empty())
        return error_at(in.line, R"(RUN [] needs a command, e.g. RUN ["/bin/echo", "hi"])");
      argv = std::move(**exec);
    } else {
      if (Status st = reject_heredoc(in, rest); !st) return st;
      argv = {"/bin/sh", "-c", std::string(rest)};
    }
    Step& step = new_step(in, Kind::kRun);
    step.args = std::move(argv);
    step.env = run_env();
    return {};
  }

  Status copy(const Instruction& in) {
    std::string_view rest = in.rest;
    std::string chown;
    for (const Flag& flag : take_flags(rest)) {
      if (Status st = copy_flag(in, flag, chown); !st) return st;
    }
    Result<Strings> words = copy_words(in, rest);
    if (!words) return words.error();
    if (words->size() < 2) {
      return error_at(in.line, in.keyword + " needs a source and a destination, e.g. " +
                                   in.keyword + " app.py /app/");
    }
    const std::string dest_word = words->back();
    words->pop_back();
    for (const std::string& source : *words) {
      if (Status st = check_source(in, source); !st) return st;
    }
    if (dest_word.empty()) {
      return error_at(in.line, in.keyword + " has an empty destination; name a path, e.g. /app/");
    }
    const std::string dest = resolve_dest(workdir_, dest_word);
    if (words->size() > 1 && !dest.ends_with('/')) {
      return error_at(in.line, in.keyword +
                                   " of several sources needs a directory destination "
                                   "ending in /, e.g. " +
                                   dest + "/");
    }
    Step& step = new_step(in, Kind::kCopy);
    step.args = std::move(*words);
    step.args.push_back(dest);
    step.chown = chown;
    step.add = in.keyword == "ADD";
    return {};
  }

  Status copy_flag(const Instruction& in, const Flag& flag, std::string& chown) {
    if (flag.name == "chown") {
      Result<std::string> value = expand(in.line, flag.value.value_or(""));
      if (!value) return value.error();
      if (value->empty()) {
        return error_at(in.line,
                        in.keyword + " --chown needs user[:group], e.g. --chown=1000:1000");
      }
      chown = *value;
      return {};
    }
    if (flag.name == "link") return {};  // only changes how Docker stores the layer
    if (flag.name == "from") {
      return error_at(in.line, in.keyword +
                                   " --from is not supported (multi-stage builds are not "
                                   "supported); copy from the build context instead");
    }
    if (flag.name == "chmod") {
      return error_at(in.line,
                      in.keyword + " --chmod is not supported; RUN chmod after the " + in.keyword);
    }
    return error_at(in.line, in.keyword + " --" + flag.name +
                                 " is not supported; the only option is --chown=user[:group]");
  }

  // Sources and destination, expanded: from a JSON array (for names with spaces) or words.
  Result<Strings> copy_words(const Instruction& in, std::string_view rest) {
    Result<std::optional<Strings>> json = json_strings(in, rest, R"(["my file", "/app/"])");
    if (!json) return json.error();
    if (!*json) {
      if (Status st = reject_heredoc(in, rest); !st) return st.error();
    }
    const bool quotes = !*json;
    const Strings raw = *json ? **json : split_words(rest);
    Strings out;
    for (const std::string& word : raw) {
      Result<std::string> expanded = expand(in.line, word, quotes);
      if (!expanded) return expanded.error();
      out.push_back(std::move(*expanded));
    }
    return out;
  }

  Status env(const Instruction& in) {
    Result<Pairs> pairs = env_pairs(in);
    if (!pairs) return pairs.error();
    for (const auto& [key, value] : *pairs) env_[key] = value;
    new_step(in, Kind::kEnv).pairs = std::move(*pairs);
    return {};
  }

  // All values expand with the variables from before this line, as in Docker: in
  // "ENV A=2 B=$A", B gets the earlier A.
  Result<Pairs> env_pairs(const Instruction& in) {
    std::string_view after_first = in.rest;
    const std::string first = next_word(after_first);
    if (first.empty()) return error_at(in.line, "ENV needs NAME=value, e.g. ENV LANG=C.UTF-8");
    if (first.find('=') == npos) return legacy_env(in, first, after_first);
    Pairs pairs;
    for (const std::string& word : split_words(in.rest)) {
      const size_t eq = word.find('=');
      if (eq == npos || eq == 0) {
        return error_at(in.line, "ENV " + word +
                                     " is not NAME=value; quote values with spaces, as in ENV "
                                     "NAME=\"a b\"");
      }
      Result<std::string> value = expand(in.line, std::string_view(word).substr(eq + 1));
      if (!value) return value.error();
      pairs.emplace_back(word.substr(0, eq), std::move(*value));
    }
    return pairs;
  }

  // "ENV NAME the rest of the line": the older form, one variable.
  Result<Pairs> legacy_env(const Instruction& in, const std::string& name, std::string_view value) {
    if (value.empty()) {
      return error_at(in.line, "ENV " + name + " needs a value; write ENV " + name + "=value");
    }
    Result<std::string> expanded = expand(in.line, value);
    if (!expanded) return expanded.error();
    return Pairs{{name, std::move(*expanded)}};
  }

  Status workdir(const Instruction& in) {
    if (in.rest.empty()) return error_at(in.line, "WORKDIR needs a path, e.g. WORKDIR /app");
    Result<std::string> path = expand(in.line, in.rest);  // the whole rest: spaces are allowed
    if (!path) return path.error();
    if (path->empty()) {
      return error_at(in.line, "WORKDIR " + in.rest +
                                   " is empty after substitution; give the variable a value");
    }
    workdir_ = resolve(workdir_, *path);
    new_step(in, Kind::kWorkdir).args = {workdir_};
    return {};
  }

  Status user(const Instruction& in) {
    const Strings words = split_words(in.rest);
    if (words.size() != 1) {
      return error_at(in.line, "USER takes one user[:group], e.g. USER user or USER 1000:1000");
    }
    Result<std::string> user = expand(in.line, words[0]);
    if (!user) return user.error();
    if (user->empty()) {
      return error_at(
          in.line, "USER " + words[0] + " is empty after substitution; give the variable a value");
    }
    new_step(in, Kind::kUser).args = {*user};
    return {};
  }

  // Before FROM, ARGs only serve FROM, so they make no step.
  Status arg(const Instruction& in) {
    const Strings words = split_words(in.rest);
    if (words.empty()) return error_at(in.line, "ARG needs a name, e.g. ARG VERSION=1.0");
    Pairs pairs;
    for (const std::string& word : words) {
      Result<std::pair<std::string, std::string>> declared = declare_arg(in.line, word);
      if (!declared) return declared.error();
      pairs.push_back(std::move(*declared));
    }
    if (from_seen_) new_step(in, Kind::kArg).pairs = std::move(pairs);
    return {};
  }

  // "NAME[=default]" → {name, value}; --build-arg wins over the default.
  Result<std::pair<std::string, std::string>> declare_arg(int line, const std::string& word) {
    const size_t eq = word.find('=');
    const std::string name = word.substr(0, eq);
    if (!is_name(name)) {
      return error_at(
          line, "ARG name " + name + " must be letters, digits and _, not starting with a digit");
    }
    std::optional<std::string> value = inherited(name);
    if (eq != npos) {
      Result<std::string> fallback = expand(line, std::string_view(word).substr(eq + 1));
      if (!fallback) return fallback.error();
      value = std::move(*fallback);
    }
    if (const auto given = build_args_.find(name); given != build_args_.end())
      value = given->second;
    declared_.insert(name);
    (from_seen_ ? stage_args_ : meta_args_)[name] = value;
    return std::pair{name, value.value_or("")};
  }

  // An ARG without a default after FROM takes the value of the same ARG declared before FROM;
  // Docker's automatic platform ARGs count as declared there.
  std::optional<std::string> inherited(const std::string& name) const {
    if (const auto meta = meta_args_.find(name); meta != meta_args_.end()) return meta->second;
    if (const auto auto_arg = platform_args().find(name); auto_arg != platform_args().end()) {
      return auto_arg->second;
    }
    return std::nullopt;
  }

  // Before FROM only ARGs exist; after it ENV (the image's included) wins over ARG.
  Variable lookup(const std::string& name) const {
    if (!from_seen_) {
      if (const auto meta = meta_args_.find(name); meta != meta_args_.end()) {
        return {true, meta->second};
      }
      const auto auto_arg = platform_args().find(name);
      if (auto_arg != platform_args().end()) return {true, auto_arg->second};
      return {};
    }
    if (const auto env = env_.find(name); env != env_.end()) return {true, env->second};
    if (const auto arg = stage_args_.find(name); arg != stage_args_.end()) {
      return {true, arg->second};
    }
    return {};
  }

  Result<std::string> expand(int line, std::string_view word, bool quotes = true) {
    Expander expander([this](const std::string& name) { return lookup(name); }, line);
    Result<std::string> out = expander.expand(word, quotes);
    for (const std::string& name : expander.undefined()) {
      if (!warned_.insert({line, name}).second) continue;
      warnings_.push_back(warning_at(line, "$" + name +
                                               " is not defined and expands to \"\"; declare it "
                                               "with ARG or ENV before this line"));
    }
    return out;
  }

  // Build args reach RUN as environment variables, except where an ENV of that name wins.
  Vars run_env() const {
    Vars env;
    for (const auto& [name, value] : stage_args_) {
      if (value && !env_.contains(name)) env[name] = *value;
    }
    for (const auto& [name, value] : build_args_) {
      if (is_proxy_arg(name) && !env_.contains(name)) env.emplace(name, value);
    }
    return env;
  }

  const Vars& build_args_;
  Vars env_;  // the image's ENV, then the Sandboxfile's
  std::string workdir_;
  bool from_seen_ = false;
  std::map<std::string, std::optional<std::string>> meta_args_;   // ARGs before FROM
  std::map<std::string, std::optional<std::string>> stage_args_;  // ARGs after FROM
  std::set<std::string> declared_;                                // every ARG name
  std::set<std::pair<int, std::string>> warned_;                  // undefined variables
  std::vector<Step> steps_;
  std::vector<std::string> warnings_;
};

}  // namespace

Result<Sandboxfile> parse(const std::string& text,
                          const std::map<std::string, std::string>& build_args,
                          const BaseImage& base) {
  const std::vector<std::string_view> lines = split_lines(text);
  if (Status st = check_directives(lines); !st) return st.error();
  Parser parser(build_args, base);
  for (const Instruction& instruction : split_instructions(lines)) {
    if (Status st = parser.add(instruction); !st) return st.error();
  }
  return parser.finish();
}

}  // namespace abx::templates::sandboxfile
