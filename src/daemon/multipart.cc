#include "daemon/multipart.h"

#include <cctype>

namespace abx::daemon {
namespace {

constexpr size_t kMaxHeaderBytes = 16 * 1024;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return std::string(text);
}

std::string unquote(std::string text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    std::string out;
    for (size_t i = 1; i + 1 < text.size(); ++i) {
      if (text[i] == '\\' && i + 2 < text.size()) ++i;
      out.push_back(text[i]);
    }
    return out;
  }
  return text;
}

// The value of `key` in "form-data; name=\"file\"; filename=\"/a/b\"".
std::string header_param(std::string_view value, const std::string& key) {
  size_t start = value.find(';');
  while (start != std::string_view::npos) {
    const size_t end = value.find(';', start + 1);
    const std::string_view param = value.substr(
        start + 1, end == std::string_view::npos ? std::string_view::npos : end - start - 1);
    const size_t eq = param.find('=');
    if (eq != std::string_view::npos && lower(trim(param.substr(0, eq))) == key) {
      return unquote(trim(param.substr(eq + 1)));
    }
    start = end;
  }
  return {};
}

MultipartPart parse_part_headers(std::string_view block) {
  MultipartPart part;
  while (!block.empty()) {
    const size_t eol = block.find("\r\n");
    const std::string_view line = block.substr(0, eol);
    block = eol == std::string_view::npos ? std::string_view{} : block.substr(eol + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (lower(trim(line.substr(0, colon))) != "content-disposition") continue;
    const std::string_view value = line.substr(colon + 1);
    part.name = header_param(value, "name");
    part.filename = header_param(value, "filename");
  }
  return part;
}

}  // namespace

std::optional<std::string> MultipartParser::boundary_of(const std::string& content_type) {
  if (lower(content_type).rfind("multipart/form-data", 0) != 0) return std::nullopt;
  std::string boundary = header_param(content_type, "boundary");
  if (boundary.empty() || boundary.size() > 200) return std::nullopt;
  return boundary;
}

bool MultipartParser::fail(std::string why) {
  error_ = std::move(why);
  return false;
}

bool MultipartParser::feed(std::string_view bytes, const MultipartHandlers& handlers) {
  if (!error_.empty()) return false;
  buffer_.append(bytes);
  bool progressed = true;
  while (progressed) {
    progressed = false;
    if (!step(handlers, &progressed)) return false;
  }
  return true;
}

bool MultipartParser::step(const MultipartHandlers& handlers, bool* progressed) {
  switch (state_) {
    case State::kPreamble: {
      const size_t at = buffer_.find(dash_boundary_);
      if (at == std::string::npos) {
        if (buffer_.size() > kMaxHeaderBytes) return fail("multipart: no opening boundary");
        return true;
      }
      buffer_.erase(0, at + dash_boundary_.size());
      state_ = State::kAfterBoundary;
      *progressed = true;
      return true;
    }
    case State::kAfterBoundary: {
      if (buffer_.size() < 2) return true;
      if (buffer_.compare(0, 2, "--") == 0) {
        state_ = State::kDone;
      } else if (buffer_.compare(0, 2, "\r\n") == 0) {
        state_ = State::kHeaders;
      } else {
        return fail("multipart: malformed boundary line");
      }
      buffer_.erase(0, 2);
      *progressed = true;
      return true;
    }
    case State::kHeaders: {
      // A part without headers starts right at the blank line.
      const size_t end = buffer_.compare(0, 2, "\r\n") == 0 ? 0 : buffer_.find("\r\n\r\n");
      // The same limit however the body was split into reads.
      const size_t header_bytes = end == std::string::npos ? buffer_.size() : end;
      if (header_bytes > kMaxHeaderBytes) return fail("multipart: part headers too large");
      if (end == std::string::npos) return true;
      const MultipartPart part = parse_part_headers(std::string_view(buffer_).substr(0, end));
      buffer_.erase(0, end == 0 ? 2 : end + 4);
      state_ = State::kBody;
      *progressed = true;
      return handlers.begin(part);
    }
    case State::kBody: {
      const size_t at = buffer_.find(delimiter_);
      if (at == std::string::npos) {
        // Keep a tail that could be the start of the delimiter.
        if (buffer_.size() >= delimiter_.size()) {
          const size_t safe = buffer_.size() - delimiter_.size() + 1;
          if (!handlers.data(std::string_view(buffer_).substr(0, safe))) return false;
          buffer_.erase(0, safe);
        }
        return true;
      }
      if (at > 0 && !handlers.data(std::string_view(buffer_).substr(0, at))) return false;
      buffer_.erase(0, at + delimiter_.size());
      state_ = State::kAfterBoundary;
      *progressed = true;
      return handlers.end();
    }
    case State::kDone:
      buffer_.clear();
      return true;
  }
  return true;
}

}  // namespace abx::daemon
