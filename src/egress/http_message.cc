#include "egress/http_message.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "egress/http_text.h"

namespace abx::egress {
namespace {

constexpr size_t kMaxLine = 4096;  // a chunk-size or trailer line

// A chunk-size line: hex digits, then optional ";extensions".
std::optional<uint64_t> chunk_size_of(std::string_view line) {
  line = trim(line.substr(0, line.find(';')));
  if (line.empty() || line.size() > 15) return std::nullopt;
  uint64_t size = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
  if (ec != std::errc{} || end != line.data() + line.size()) return std::nullopt;
  return size;
}

}  // namespace

std::optional<Head> parse_head(std::string_view head) {
  Head out;
  const auto eol = head.find("\r\n");
  if (eol == std::string_view::npos) return std::nullopt;
  out.first_line = head.substr(0, eol);
  head.remove_prefix(eol + 2);
  while (head.size() > 2) {  // the head ends with an empty line
    const auto end = head.find("\r\n");
    const std::string_view line = head.substr(0, end);
    head.remove_prefix(end + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    if (!is_header_name(name) || !is_header_value(value)) return std::nullopt;  // also obs-fold
    out.fields.emplace_back(name, value);
  }
  return out;
}

bool ends_with_chunked(std::string_view value) {
  const auto comma = value.rfind(',');
  const std::string_view last =
      trim(comma == std::string_view::npos ? value : value.substr(comma + 1));
  return iequals(last, "chunked");
}

std::optional<uint64_t> content_length_of(std::string_view value) {
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || ec != std::errc{} || end != value.data() + value.size()) return std::nullopt;
  return n;
}

bool is_header_value(std::string_view value) {
  return value.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

bool is_header_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

void BodyPass::expect_length(uint64_t length) {
  remaining_ = length;
  state_ = length > 0 ? State::kBody : State::kNone;
}

void BodyPass::expect_chunked() {
  line_.clear();
  state_ = State::kChunkSize;
}

uint64_t BodyPass::data_left() const {
  return state_ == State::kBody || state_ == State::kChunkData ? remaining_ : 0;
}

// Collects the next line (with its LF) in line_; true once it is complete.
bool BodyPass::take_line(std::string_view& in) {
  const auto eol = in.find('\n');
  const size_t n = eol == std::string_view::npos ? in.size() : eol + 1;
  line_.append(in.substr(0, n));
  in.remove_prefix(n);
  return eol != std::string_view::npos;
}

bool BodyPass::feed(std::string_view& in, std::string& out) {
  while (!in.empty() && active()) {
    switch (state_) {
      case State::kBody:
      case State::kChunkData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
        out.append(in.substr(0, n));
        in.remove_prefix(n);
        remaining_ -= n;
        if (remaining_ == 0) state_ = state_ == State::kBody ? State::kNone : State::kChunkEnd;
        break;
      }
      case State::kChunkEnd: {
        const bool complete = take_line(in);
        if (!complete && line_.size() < 2) break;
        if (line_ != "\r\n") return false;
        out.append(line_);
        line_.clear();
        state_ = State::kChunkSize;
        break;
      }
      case State::kChunkSize:
      case State::kTrailer: {
        const bool complete = take_line(in);
        if (line_.size() > kMaxLine) return false;
        if (!complete) break;
        const std::string line = std::exchange(line_, {});
        if (line.size() < 2 || line[line.size() - 2] != '\r') return false;
        if (state_ == State::kTrailer) {
          if (line == "\r\n") state_ = State::kNone;
          if (line == "\r\n" || !drop_trailer_ || !drop_trailer_(line)) out.append(line);
          break;
        }
        out.append(line);
        const auto size = chunk_size_of(std::string_view(line).substr(0, line.size() - 2));
        if (!size) return false;
        remaining_ = *size;
        state_ = remaining_ == 0 ? State::kTrailer : State::kChunkData;
        break;
      }
      case State::kNone:
        break;
    }
  }
  return true;
}

}  // namespace abx::egress
