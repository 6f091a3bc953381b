#include "templates/sandboxfile_expander.h"

#include "templates/sandboxfile_text.h"

namespace abx::templates::sandboxfile {

Result<std::string> Expander::expand(std::string_view word, bool quotes) {
  in_ = word;
  pos_ = 0;
  quotes_ = quotes;
  std::string out;
  if (Status st = until(out, 0); !st) return st.error();
  return out;
}

// Expands into `out` up to `stop` (left unread) or, when stop is 0, to the end.
Status Expander::until(std::string& out, char stop) {
  while (pos_ < in_.size()) {
    const char c = in_[pos_];
    if (stop != 0 && c == stop) return {};
    if (Status st = one(c, out); !st) return st;
  }
  if (stop != 0) return error_at(line_, "a ${ has no closing }; add the }");
  return {};
}

Status Expander::one(char c, std::string& out) {
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

Status Expander::single_quoted(std::string& out) {
  const size_t close = in_.find('\'', pos_ + 1);
  if (close == npos) return error_at(line_, "a ' quote is not closed; close it or write \\'");
  out += in_.substr(pos_ + 1, close - pos_ - 1);
  pos_ = close + 1;
  return {};
}

Status Expander::double_quoted(std::string& out) {
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

Status Expander::variable(std::string& out) {
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

Status Expander::braced(std::string& out) {
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
Status Expander::apply(const std::string& var, bool colon, char op, const std::string& word,
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
std::string Expander::name() {
  const size_t start = pos_;
  if (pos_ < in_.size() && is_digit(in_[pos_])) {
    ++pos_;
  } else if (pos_ < in_.size() && is_name_start(in_[pos_])) {
    while (pos_ < in_.size() && is_name_char(in_[pos_])) ++pos_;
  }
  return std::string(in_.substr(start, pos_ - start));
}

std::string Expander::plain(const std::string& var) {
  Variable found = lookup_(var);
  if (!found.declared) undefined_.insert(var);
  return found.value.value_or("");
}

}  // namespace abx::templates::sandboxfile
