// A streaming multipart/form-data parser: uploads go to disk piece by piece
// and are never held whole in memory.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace abx::daemon {

struct MultipartPart {
  std::string name;      // form field name ("file")
  std::string filename;  // from Content-Disposition; E2B sends the destination path here
};

struct MultipartHandlers {
  // Each returns false to stop parsing (the handler has recorded why).
  std::function<bool(const MultipartPart&)> begin;
  std::function<bool(std::string_view)> data;
  std::function<bool()> end;
};

class MultipartParser {
 public:
  // The boundary parameter of a multipart/form-data Content-Type, if any.
  static std::optional<std::string> boundary_of(const std::string& content_type);

  explicit MultipartParser(const std::string& boundary)
      : dash_boundary_("--" + boundary), delimiter_("\r\n--" + boundary) {}

  // False on malformed input (see error()) or when a handler stopped it.
  bool feed(std::string_view bytes, const MultipartHandlers& handlers);
  // True once the closing boundary has been seen.
  bool finished() const { return state_ == State::kDone; }
  const std::string& error() const { return error_; }

 private:
  enum class State { kPreamble, kAfterBoundary, kHeaders, kBody, kDone };
  bool step(const MultipartHandlers& handlers, bool* progressed);
  bool fail(std::string why);

  std::string dash_boundary_;
  std::string delimiter_;
  std::string buffer_;
  State state_ = State::kPreamble;
  std::string error_;
};

}  // namespace abx::daemon
