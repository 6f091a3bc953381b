// Splits what a context driver writes on a pipe into protocol lines (those
// prefixed with the context's token) and plain text (anything else the
// process or its children wrote), without ever splitting a UTF-8 character.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace abx::interp {

struct StreamPiece {
  bool protocol = false;  // true: `text` is one JSON event, token and newline removed
  std::string text;
};

class StreamDemux {
 public:
  explicit StreamDemux(std::string token) : token_(std::move(token)) {}

  // Appends `data` and returns the pieces now complete. Holds back a protocol
  // line until its newline, a possible start of the token, and an incomplete
  // UTF-8 sequence at the end.
  std::vector<StreamPiece> feed(std::string_view data);
  // At EOF: whatever was held back, as text.
  std::vector<StreamPiece> finish();

 private:
  size_t releasable_text_length() const;

  std::string token_;
  std::string buffer_;
};

}  // namespace abx::interp
