// Streaming gzip decoding for `Content-Encoding: gzip` uploads (envd >= 0.5.7).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace abx::daemon {

class Gunzip {
 public:
  Gunzip();
  ~Gunzip();
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;

  // Decodes `input`, passing output pieces to `sink` (which returns false to
  // stop). False on corrupt data (see error()) or when the sink stopped.
  bool feed(std::string_view input, const std::function<bool(std::string_view)>& sink);
  bool finished() const { return finished_; }
  const std::string& error() const { return error_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  bool finished_ = false;
  std::string error_;
};

}  // namespace abx::daemon
