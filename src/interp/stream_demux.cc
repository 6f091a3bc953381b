#include "interp/stream_demux.h"

#include <algorithm>

namespace abx::interp {

namespace {

// Bytes at the end of `s` that start a UTF-8 sequence not yet complete.
size_t incomplete_utf8_tail(std::string_view s) {
  const size_t look = std::min<size_t>(s.size(), 3);
  for (size_t back = 1; back <= look; ++back) {
    const auto byte = static_cast<unsigned char>(s[s.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t needed = 1;
    if ((byte & 0xE0) == 0xC0)
      needed = 2;
    else if ((byte & 0xF0) == 0xE0)
      needed = 3;
    else if ((byte & 0xF8) == 0xF0)
      needed = 4;
    return needed > back ? back : 0;
  }
  return 0;
}

}  // namespace

size_t StreamDemux::releasable_text_length() const {
  // A tail that could be the beginning of the token must wait for more bytes.
  size_t keep = 0;
  for (size_t n = std::min(token_.size() - 1, buffer_.size()); n > 0; --n) {
    if (std::string_view(buffer_).substr(buffer_.size() - n) == token_.substr(0, n)) {
      keep = n;
      break;
    }
  }
  const std::string_view text = std::string_view(buffer_).substr(0, buffer_.size() - keep);
  return text.size() - incomplete_utf8_tail(text);
}

std::vector<StreamPiece> StreamDemux::feed(std::string_view data) {
  buffer_.append(data);
  std::vector<StreamPiece> pieces;
  while (!buffer_.empty()) {
    const size_t token_at = buffer_.find(token_);
    if (token_at == std::string::npos) {
      const size_t length = releasable_text_length();
      if (length > 0) pieces.push_back({false, buffer_.substr(0, length)});
      buffer_.erase(0, length);
      break;
    }
    if (token_at > 0) {
      pieces.push_back({false, buffer_.substr(0, token_at)});
      buffer_.erase(0, token_at);
    }
    const size_t newline = buffer_.find('\n', token_.size());
    if (newline == std::string::npos) break;
    pieces.push_back({true, buffer_.substr(token_.size(), newline - token_.size())});
    buffer_.erase(0, newline + 1);
  }
  return pieces;
}

std::vector<StreamPiece> StreamDemux::finish() {
  std::vector<StreamPiece> pieces;
  if (!buffer_.empty()) pieces.push_back({false, std::move(buffer_)});
  buffer_.clear();
  return pieces;
}

}  // namespace abx::interp
