#include "cli/text.h"

#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/rfc3339.h"

namespace abx::cli {

std::string shell_quote(const std::string& word) {
  static constexpr std::string_view kSafe =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%^";
  if (!word.empty() && word.find_first_not_of(kSafe) == std::string::npos) return word;
  std::string out = "'";
  for (const char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) {
    if (!out.empty()) out.push_back(' ');
    out += shell_quote(word);
  }
  return out;
}

Result<std::pair<std::string, std::string>> parse_key_value(std::string_view text,
                                                            std::string_view what) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Error{"bad " + std::string(what) + " '" + std::string(text) + "'; expected KEY=VALUE"};
  }
  return std::pair{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

Result<std::map<std::string, std::string>> parse_key_values(const std::vector<std::string>& items,
                                                            std::string_view what) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    auto kv = parse_key_value(item, what);
    if (!kv) return kv.error();
    out[kv->first] = kv->second;
  }
  return out;
}

std::string format_local_time(std::int64_t epoch_seconds) {
  const std::time_t t = static_cast<std::time_t>(epoch_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string rfc3339_to_local(std::string_view text) {
  const auto ms = parse_rfc3339_ms(text);
  if (!ms) return std::string(text);
  return format_local_time(*ms / 1000 - (*ms % 1000 < 0 ? 1 : 0));  // floor: before 1970 too
}

Result<uint32_t> parse_mib(const std::string& text, std::string_view flag) {
  const auto bad = [&] {
    return Error{(flag.empty() ? "" : std::string(flag) + ": ") + "'" + text +
                 "' is not a size; give MiB or a unit, e.g. 512m, 2g, 1024"};
  };
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    return bad();
  }
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.ends_with("ib"))
    unit.resize(unit.size() - 2);
  else if (unit.size() == 2 && unit.back() == 'b')
    unit.pop_back();
  double mib = 0;
  if (unit.empty() || unit == "m")
    mib = number;
  else if (unit == "k")
    mib = number / 1024;
  else if (unit == "g")
    mib = number * 1024;
  else if (unit == "t")
    mib = number * 1024 * 1024;
  else
    return bad();
  if (!(mib >= 1) || mib > 4294967295.0 || mib != std::floor(mib)) return bad();
  return static_cast<uint32_t>(mib);
}

std::string ends_text(const nlohmann::json& sandbox) {
  if (sandbox.value("state", "") == "paused") return "-";
  return rfc3339_to_local(sandbox.value("endAt", ""));
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", value, kUnits[unit]);
  }
  return buf;
}

std::string comma_join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string format_table(const std::vector<std::vector<std::string>>& cells) {
  // Cells hold what others wrote (metadata, names): no escape reaches the terminal.
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : cells) {
    rows.emplace_back();
    for (const auto& cell : row) rows.back().push_back(sanitize_for_terminal(cell));
  }
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

namespace {

constexpr unsigned char kEsc = 0x1b;
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
// Longer "colour" sequences are not colours; they are dropped like the rest.
constexpr size_t kMaxSgrLength = 64;

bool is_kept_control(unsigned char byte) { return byte == '\n' || byte == '\t' || byte == '\r'; }

// Continuation bytes after a UTF-8 lead byte; 0 when it is not one.
size_t utf8_continuations(unsigned char lead) {
  if (lead >= 0xC2 && lead <= 0xDF) return 1;
  if (lead >= 0xE0 && lead <= 0xEF) return 2;
  if (lead >= 0xF0 && lead <= 0xF4) return 3;
  return 0;
}

// Where the byte after `lead` must lie: no overlong forms, no surrogates,
// nothing above U+10FFFF.
bool valid_second_byte(unsigned char lead, unsigned char byte) {
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead == 0xE0) low = 0xA0;
  if (lead == 0xED) high = 0x9F;
  if (lead == 0xF0) low = 0x90;
  if (lead == 0xF4) high = 0x8F;
  return byte >= low && byte <= high;
}

// U+0080..U+009F: C1 controls (U+009B is CSI, U+009D OSC to some terminals).
bool is_c1_control(std::string_view utf8) {
  return utf8.size() == 2 && static_cast<unsigned char>(utf8[0]) == 0xC2 &&
         static_cast<unsigned char>(utf8[1]) <= 0x9F;
}

}  // namespace

std::string TerminalSanitizer::feed(std::string_view data) {
  std::string out;
  out.reserve(data.size());
  for (const char c : data) on_byte(static_cast<unsigned char>(c), out);
  return out;
}

std::string TerminalSanitizer::finish() {
  std::string out = utf8_need_ > 0 ? std::string(kReplacement) : std::string();
  *this = TerminalSanitizer();
  return out;
}

void TerminalSanitizer::on_byte(unsigned char byte, std::string& out) {
  switch (state_) {
    case State::text:
      if (utf8_need_ > 0) {
        on_utf8_continuation(byte, out);
      } else {
        on_text_byte(byte, out);
      }
      return;
    case State::escape:
      if (byte == '[') {
        state_ = State::csi;
        csi_ = "\x1b[";
        csi_is_sgr_ = true;
      } else if (byte == ']' || byte == 'P' || byte == 'X' || byte == '^' || byte == '_') {
        state_ = State::string;  // OSC, DCS, SOS, PM, APC: a string up to ST or BEL
      } else if (byte >= 0x20 && byte <= 0x2F) {
        state_ = State::escape_intermediate;
      } else if (byte >= 0x30 && byte <= 0x7E) {
        state_ = State::text;  // a two-byte escape (ESC c resets the terminal), dropped
      } else if (byte != kEsc) {
        state_ = State::text;  // a control or non-ASCII byte ends it; show what follows
        on_byte(byte, out);
      }
      return;
    case State::escape_intermediate:
      if (byte >= 0x20 && byte <= 0x2F) return;
      state_ = State::text;
      if (byte < 0x30 || byte > 0x7E) on_byte(byte, out);
      return;
    case State::csi:
      on_csi_byte(byte, out);
      return;
    case State::string:
      // BEL or ST ends it; CAN and SUB abort it, as in xterm.
      if (byte == 0x07 || byte == 0x18 || byte == 0x1A) state_ = State::text;
      if (byte == kEsc) state_ = State::string_escape;
      return;
    case State::string_escape:
      if (byte == '\\') {
        state_ = State::text;
        return;
      }
      state_ = State::escape;  // ESC then something else: a new sequence begins
      on_byte(byte, out);
      return;
  }
}

void TerminalSanitizer::on_text_byte(unsigned char byte, std::string& out) {
  if (byte == kEsc) {
    state_ = State::escape;
    return;
  }
  if (byte < 0x80) {
    if ((byte >= 0x20 && byte != 0x7F) || is_kept_control(byte))
      out.push_back(static_cast<char>(byte));
    return;
  }
  utf8_need_ = utf8_continuations(byte);
  if (utf8_need_ == 0) {
    out += kReplacement;
    return;
  }
  utf8_.assign(1, static_cast<char>(byte));
}

void TerminalSanitizer::on_utf8_continuation(unsigned char byte, std::string& out) {
  const auto lead = static_cast<unsigned char>(utf8_[0]);
  const bool valid =
      utf8_.size() == 1 ? valid_second_byte(lead, byte) : (byte >= 0x80 && byte <= 0xBF);
  if (!valid) {
    utf8_.clear();
    utf8_need_ = 0;
    out += kReplacement;
    on_byte(byte, out);  // it may start something of its own
    return;
  }
  utf8_.push_back(static_cast<char>(byte));
  if (--utf8_need_ > 0) return;
  if (!is_c1_control(utf8_)) out += utf8_;
  utf8_.clear();
}

void TerminalSanitizer::on_csi_byte(unsigned char byte, std::string& out) {
  if (byte >= 0x40 && byte <= 0x7E) {  // the final byte
    if (csi_is_sgr_ && byte == 'm') out += csi_ + "m";
    csi_.clear();
    state_ = State::text;
    return;
  }
  if (byte >= 0x20 && byte <= 0x3F) {  // a parameter or intermediate byte
    const bool sgr_parameter = (byte >= '0' && byte <= '9') || byte == ';' || byte == ':';
    if (!sgr_parameter || csi_.size() >= kMaxSgrLength) {
      csi_is_sgr_ = false;
      csi_.clear();
    } else if (csi_is_sgr_) {
      csi_.push_back(static_cast<char>(byte));
    }
    return;
  }
  csi_.clear();  // anything else cuts the sequence short
  state_ = State::text;
  on_byte(byte, out);
}

std::string sanitize_for_terminal(std::string_view text) {
  TerminalSanitizer sanitizer;
  std::string out = sanitizer.feed(text);
  return out + sanitizer.finish();
}

}  // namespace abx::cli
